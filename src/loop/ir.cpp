#include "toroid/loop/ir.h"

#include <sstream>

#include "toroid/support/error.h"

namespace toroid::loop {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Constant: return "constant";
    case BufferKind::Pointwise: return "pointwise";
    case BufferKind::Reduction: return "reduction";
    case BufferKind::Extern: return "extern";
    case BufferKind::Fallback: return "fallback";
    case BufferKind::Scalar: return "scalar";
    case BufferKind::Control: return "control";
    case BufferKind::UserKernel: return "user_kernel";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp r) {
  switch (r) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::ArgMax: return "argmax";
    case ReduceOp::ArgMin: return "argmin";
    case ReduceOp::Any: return "any";
    case ReduceOp::All: return "all";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Var: return "var";
  }
  return "?";
}

std::vector<Buffer*> Buffer::reads() const {
  std::vector<Buffer*> out;
  auto add = [&](Buffer* b) {
    for (Buffer* x : out)
      if (x == b) return;
    out.push_back(b);
  };
  if (body)
    for (Expr l : loads(body)) add(l.buffer());
  for (Buffer* b : extern_inputs) add(b);
  return out;
}

Buffer* LoopProgram::add(std::unique_ptr<Buffer> b) {
  buffers.push_back(std::move(b));
  return buffers.back().get();
}

SymExpr position(const std::vector<SymExpr>& strides, SymExpr offset, std::span<const SymExpr> index) {
  TOROID_CHECK(strides.size() == index.size(), "position: rank mismatch");
  std::vector<SymExpr> terms{offset};
  for (size_t k = 0; k < index.size(); ++k) terms.push_back(index[k] * strides[k]);
  return sym::add(terms);
}

namespace {
std::string list_str(const std::vector<SymExpr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}
}  // namespace

std::string print_program(const LoopProgram& p) {
  std::ostringstream os;
  os << "loop @" << (p.graph ? p.graph->name() : std::string("?")) << " {\n";
  for (const auto& b : p.buffers) {
    os << "  " << b->name << " = " << buffer_kind_name(b->kind) << " " << dtype_short_name(b->dtype)
       << list_str(b->sizes) << "{strides=" << list_str(b->strides);
    if (b->offset != SymExpr::integer(0)) os << ", offset=" << b->offset.str();
    if (b->storage != b.get()) os << ", into=" << b->storage->name;
    os << "}";
    switch (b->kind) {
      case BufferKind::Input: os << " #" << b->input_index; break;
      case BufferKind::Constant: break;
      case BufferKind::Pointwise: os << " = " << to_string(b->body); break;
      case BufferKind::Reduction:
        os << " = " << reduce_op_name(b->reduce) << " over " << list_str(b->reduction_sizes) << " of "
           << to_string(b->body);
        break;
      case BufferKind::Extern:
      case BufferKind::Fallback:
      case BufferKind::Control:
      case BufferKind::UserKernel:
        os << " = " << b->node->target();
        if (b->node->num_results() > 1) os << "[" << b->result_index << "]";
        break;
      case BufferKind::Scalar:
        if (!b->library_operands.empty()) os << " = item -> " << b->scalar.str();
        else os << " = assert " << b->scalar.str();
        break;
    }
    os << "\n";
  }
  os << "  output";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const OutputRef& o = p.outputs[i];
    os << (i ? ", " : " ");
    if (o.buffer) os << o.buffer->name;
    else os << (o.scalar ? o.scalar.str() : std::string("None"));
  }
  os << "\n}\n";
  return os.str();
}

}  // namespace toroid::loop
