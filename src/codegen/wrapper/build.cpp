#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/support/error.h"

namespace toroid::codegen::wrapper {

using loop::Buffer;
using loop::BufferKind;

namespace {

SymExpr nbytes_of(const Buffer* b, const ShapeEnv& env) {
  return env.simplify(b->storage_numel * SymExpr::integer(dtype_size(b->dtype)));
}

std::string origins(const Buffer* b) {
  std::string s;
  for (const Node* n : b->origins) s += (s.empty() ? "" : ", ") + n->target() + " " + describe_value(n->result(0));
  return s;
}

TensorRef ref_of(const loop::LoopProgram& p, const Value* v) {
  TensorRef r;
  if (!v) return r;
  auto it = p.owners.find(v->meta().storage);
  TOROID_CHECK(it != p.owners.end(), "no buffer holds " + describe_value(v));
  const TensorMeta& m = v->meta();
  r.slot = it->second->storage->id;
  r.name = it->second->storage->name;
  r.dtype = m.dtype;
  r.sizes = m.sizes;
  r.strides = m.strides;
  r.offset = m.offset;
  return r;
}

}  // namespace

const char* target_name(Target t) { return t == Target::Cpu ? "cpu" : "cuda"; }

const std::string& kernel_name(const WrapperProgram& w, const Line& call) {
  size_t k = static_cast<size_t>(call.kernel);
  return w.target == Target::Cpu ? w.kernels.at(k).name : w.cuda_kernels.at(k).name;
}

WrapperProgram build_wrapper(const loop::LoopProgram& program, const sched::Schedule& schedule, Target target) {
  WrapperProgram w;
  w.program = &program;
  w.target = target;
  const ShapeEnv& env = program.graph->shape_env();
  cpu::SymbolSlots slots;
  for (const sym::SymbolInfo& info : env.symbols()) {
    if (info.symbol.type() != sym::Type::Int) continue;
    slots[info.symbol] = w.symbols.size();
    w.symbols.push_back(info.symbol);
  }
  std::unordered_set<const Buffer*> allocated;
  auto alloc = [&](Buffer* b) {
    if (b->storage != b || allocated.count(b)) return;
    allocated.insert(b);
    Line l;
    l.kind = Line::Kind::Alloc;
    l.buffer = b;
    l.nbytes = nbytes_of(b, env);
    w.lines.push_back(l);
  };
  for (const sched::Step& step : schedule.steps) {
    if (step.kind == sched::Step::Kind::Kernel) {
      const sched::Kernel& k = *step.kernel;
      for (const sched::Member& m : k.members) alloc(m.buffer);
      Line c;
      c.text = k.name + ":";
      for (const sched::Member& m : k.members) c.text += " " + m.buffer->name + " <- " + origins(m.buffer) + ";";
      c.text.pop_back();
      w.lines.push_back(c);
      Line call;
      call.kind = Line::Kind::KernelCall;
      if (target == Target::Cpu) {
        cpu::CppKernel ck = cpu::emit_cpp_kernel(k, slots, env);
        call.kernel = static_cast<int>(w.kernels.size());
        call.args = ck.args;
        w.kernels.push_back(std::move(ck));
      } else {
        cuda::CudaKernel ck = cuda::emit_cuda_kernel(k, slots, env);
        call.kernel = static_cast<int>(w.cuda_kernels.size());
        call.args = ck.args;
        w.cuda_kernels.push_back(std::move(ck));
      }
      w.lines.push_back(call);
      continue;
    }
    Buffer* b = step.buffer;
    Line c;
    c.text = b->name + " <- " + origins(b);
    w.lines.push_back(c);
    if (step.kind == sched::Step::Kind::Extern) {
      alloc(b);
      Line call;
      call.kind = Line::Kind::ExternCall;
      call.buffer = b;
      call.node = b->node;
      call.args = b->extern_inputs;
      call.library = b->library;
      for (const Value* v : b->library_operands) call.operands.push_back(ref_of(program, v));
      call.result = ref_of(program, b->node->result(0));
      call.params = b->library_params;
      w.lines.push_back(call);
      continue;
    }
    Line call;
    call.kind = Line::Kind::FallbackCall;
    call.node = b->node;
    for (const auto& owned : program.buffers)
      if (owned->kind == BufferKind::Fallback && owned->node == b->node) call.results.push_back(owned.get());
    w.lines.push_back(call);
  }
  return w;
}

}  // namespace toroid::codegen::wrapper
