#include "toroid/codegen/kernel_emitter.h"

#include "toroid/support/error.h"

namespace toroid::codegen {

KernelEmitter::KernelEmitter(const sched::Kernel& k, const SymbolSlots& slots, const ShapeEnv& env)
    : k_(k), slots_(slots), env_(env) {}

void KernelEmitter::collect_args() {
  auto arg = [this](loop::Buffer* b) {
    for (const sched::Member& m : k_.members)
      if (m.local && m.buffer == b) return;  // in a register only
    for (loop::Buffer* x : args_)
      if (x == b) return;
    args_.push_back(b);
  };
  for (const sched::Member& m : k_.members) {
    arg(m.buffer->storage);
    for (loop::Expr l : loop::loads(m.buffer->body)) arg(l.buffer()->storage);
  }
}

std::string KernelEmitter::ptr(const loop::Buffer* b) const {
  for (size_t i = 0; i < args_.size(); ++i)
    if (args_[i] == b) return "p" + std::to_string(i);
  TOROID_INTERNAL_ERROR("kernel " + k_.name + " reads " + b->name + ", which is not among its arguments");
}

bool KernelEmitter::is_kernel_var(SymExpr s) const {
  for (size_t k = 0; k < k_.outer.size(); ++k)
    if (s == sched::outer_var(k)) return true;
  for (size_t k = 0; k < k_.inner.size(); ++k)
    if (s == sched::inner_var(k)) return true;
  return false;
}

std::string KernelEmitter::name_of(SymExpr s) {
  const std::string& n = s.symbol().name;
  if (is_kernel_var(s)) return n;
  auto it = slots_.find(s);
  if (it == slots_.end()) user_error("kernel uses symbol " + n + " that no input binds");
  for (auto& [x, slot] : used_syms_)
    if (x == s) return sym_name(s);
  used_syms_.emplace_back(s, it->second);
  return sym_name(s);
}

std::string KernelEmitter::sizes_str(const std::vector<SymExpr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

std::string KernelEmitter::header_comment(const std::string& detail) const {
  std::string s = "// " + k_.name + ": outer " + sizes_str(k_.outer) + ", inner " + sizes_str(k_.inner) + detail + "\n";
  for (const sched::Member& m : k_.members) {
    const loop::Buffer* b = m.buffer;
    s += "//   " + b->name + " (" +
         (b->kind == loop::BufferKind::Reduction ? reduce_op_name(b->reduce) : m.inner ? "pointwise" : "outer pointwise") +
         ") from";
    for (const Node* n : b->origins) s += " " + n->target() + " " + describe_value(n->result(0));
    s += "\n";
  }
  return s;
}

loop::Expr KernelEmitter::stored_body(const sched::Member& m) {
  loop::Expr body = sched::member_body(m);
  DType stored = m.buffer->storage->dtype;
  bool half = stored == DType::BFloat16 || stored == DType::Float16;
  if (half && body.op() == loop::Op::Cast && body.dtype() == stored && body.operand(0).dtype() == DType::Float32)
    return body.operand(0);
  return body;
}

const char* KernelEmitter::acc_type(loop::ReduceOp r, DType d) {
  using loop::ReduceOp;
  if (r == ReduceOp::Any || r == ReduceOp::All) return "bool";
  if (r == ReduceOp::Mean || r == ReduceOp::Var) return d == DType::Float64 ? "double" : "float";
  if ((r == ReduceOp::Sum || r == ReduceOp::Prod) && !is_floating(d)) return "int64_t";
  return compute_type(d);
}

bool KernelEmitter::welford_gives(const sched::Member& var, const sched::Member& x) {
  using loop::BufferKind;
  using loop::ReduceOp;
  const loop::Buffer* v = var.buffer;
  const loop::Buffer* b = x.buffer;
  if (v->kind != BufferKind::Reduction || v->reduce != ReduceOp::Var || b->kind != BufferKind::Reduction ||
      (b->reduce != ReduceOp::Sum && b->reduce != ReduceOp::Mean))
    return false;
  loop::Expr body = sched::member_body(var);
  return sched::member_body(x) == body && b->reduction_sizes == v->reduction_sizes &&
         std::string(acc_type(b->reduce, body.dtype())) == acc_type(ReduceOp::Var, body.dtype());
}

}  // namespace toroid::codegen
