// Reductions that live in registers: a CUDA row kernel reads each reduction it computes (a
// softmax's max and sum, a layer norm's mean and variance) from the register it was reduced
// into, never from memory, so one that nothing outside its kernel reads needs no buffer: no
// allocation, no store per row. Rows of 197 f32 (ViT's attention softmax) moved 0.5% more bytes
// and ran 3-4% slower with those stores on an H200 (bench/RESULTS.md 35a).
#include <unordered_set>

#include "toroid/graph/graph.h"
#include "toroid/sched/schedule.h"
#include "toroid/support/log.h"

namespace toroid::sched {

namespace {

// Every storage read by something other than the members of `inside`: other kernels' bodies,
// library and fallback calls, host steps, user kernels, control flow, and the program's outputs.
std::unordered_set<const loop::Buffer*> read_outside(const loop::LoopProgram& program,
                                                     const std::unordered_set<const loop::Buffer*>& inside) {
  std::unordered_set<const loop::Buffer*> reads;
  auto owner = [&](const Value* v) {
    if (!v || !v->is_tensor()) return;
    if (auto it = program.owners.find(v->meta().storage); it != program.owners.end()) reads.insert(it->second->storage);
  };
  for (const auto& b : program.buffers) {
    if (b->storage != b.get()) reads.insert(b->storage);  // memory another buffer writes into
    if (inside.count(b.get())) continue;
    if (b->body) loop::visit(b->body, [&](loop::Expr e) {
        if (e.op() == loop::Op::Load || e.op() == loop::Op::IndirectLoad) reads.insert(e.buffer()->storage);
      });
    for (const loop::Buffer* x : b->extern_inputs) reads.insert(x->storage);
    for (const Value* v : b->library_operands) owner(v);
    if (b->node && b->kind != loop::BufferKind::Pointwise && b->kind != loop::BufferKind::Reduction)
      for (const Value* v : b->node->inputs()) owner(v);
  }
  for (const loop::OutputRef& o : program.outputs) {
    if (o.buffer) reads.insert(o.buffer->storage);
    owner(o.value);
  }
  return reads;
}

}  // namespace

void keep_local_reductions(Schedule& schedule, const loop::LoopProgram& program) {
  for (auto& k : schedule.kernels) {
    std::unordered_set<const loop::Buffer*> inside;
    bool any = false;
    for (const Member& m : k->members) {
      inside.insert(m.buffer);
      any = any || m.buffer->kind == loop::BufferKind::Reduction;
    }
    if (!any) continue;
    const std::unordered_set<const loop::Buffer*> reads = read_outside(program, inside);
    for (Member& m : k->members) {
      const loop::Buffer* b = m.buffer;
      if (b->kind != loop::BufferKind::Reduction || b->storage != b || reads.count(b)) continue;
      m.local = true;
      TOROID_LOG("fusion", k->name + ": " + b->name + " stays in registers (read only inside the kernel)");
    }
  }
}

}  // namespace toroid::sched
