#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"

namespace toroid::codegen::wrapper {

using loop::Buffer;
using loop::BufferKind;

namespace {

// The buffers a call line reads or writes (storage owners).
std::vector<Buffer*> touched(const Line& l, const loop::LoopProgram& p) {
  std::vector<Buffer*> out;
  switch (l.kind) {
    case Line::Kind::KernelCall: out = l.args; break;
    case Line::Kind::ExternCall:
      out = l.args;
      out.push_back(l.buffer);
      break;
    case Line::Kind::FallbackCall:
      for (const Value* in : l.node->inputs())
        if (in->is_tensor()) {
          auto it = p.owners.find(in->meta().storage);
          if (it != p.owners.end()) out.push_back(it->second->storage);
        }
      out.insert(out.end(), l.results.begin(), l.results.end());
      break;
    default: break;
  }
  return out;
}

bool plannable(const Buffer* b) {
  return b->storage == b && b->kind != BufferKind::Input && b->kind != BufferKind::Constant;
}

SymExpr nbytes_of(const Buffer* b, const ShapeEnv& env) {
  return env.simplify(b->storage_numel * SymExpr::integer(dtype_size(b->dtype)));
}

struct FreeBlock {
  Buffer* owner;  // the buffer whose Free returned it
  SymExpr bytes;  // the block's size (its first buffer's)
};

// The freed block a buffer of `need` bytes on `device` takes: best fit among those provably at
// least `need` and at most twice it (a small buffer does not pin a large block), an exact
// size first. pool.end() if none.
std::vector<FreeBlock>::iterator best_fit(std::vector<FreeBlock>& pool, const Buffer* b, SymExpr need,
                                          const ShapeEnv& env) {
  auto best = pool.end();
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if (it->owner->device.type != b->device.type || it->owner->device.index != b->device.index) continue;
    if (it->bytes == need) return it;
    if (!env.statically_known_true(sym::ge(it->bytes, need)) ||
        !env.statically_known_true(sym::le(it->bytes, need * 2)))
      continue;
    if (best == pool.end() || env.statically_known_true(sym::lt(it->bytes, best->bytes))) best = it;
  }
  return best;
}

}  // namespace

void plan_memory(WrapperProgram& w) {
  const loop::LoopProgram& p = *w.program;
  const ShapeEnv& env = p.graph->shape_env();
  std::unordered_set<const Buffer*> live_out;
  for (const loop::OutputRef& o : p.outputs)
    if (o.buffer) live_out.insert(o.buffer->storage);
  // Last line that touches each buffer.
  std::unordered_map<Buffer*, size_t> last;
  for (size_t i = 0; i < w.lines.size(); ++i)
    for (Buffer* b : touched(w.lines[i], p)) last[b] = i;
  std::vector<Line> out;
  std::vector<FreeBlock> pool;
  std::unordered_map<const Buffer*, SymExpr> block;  // each allocated buffer's block size
  for (size_t i = 0; i < w.lines.size(); ++i) {
    Line l = w.lines[i];
    if (l.kind == Line::Kind::Alloc) {
      block[l.buffer] = l.nbytes;
      auto it = best_fit(pool, l.buffer, l.nbytes, env);
      if (it != pool.end()) {
        l.kind = Line::Kind::Reuse;
        l.from = it->owner;
        block[l.buffer] = it->bytes;
        pool.erase(it);
      }
    } else if (l.kind == Line::Kind::FallbackCall) {
      for (const Buffer* r : l.results) block.emplace(r, nbytes_of(r, env));
    }
    out.push_back(l);
    // Frees after the call, so the pool only offers memory from earlier steps.
    std::vector<Buffer*> dead;
    for (Buffer* b : touched(w.lines[i], p))
      if (last[b] == i && plannable(b) && !live_out.count(b) &&
          std::find(dead.begin(), dead.end(), b) == dead.end())
        dead.push_back(b);
    for (Buffer* b : dead) {
      Line f;
      f.kind = Line::Kind::Free;
      f.buffer = b;
      out.push_back(f);
      if (auto it = block.find(b); it != block.end()) pool.push_back({b, it->second});
    }
  }
  w.lines = std::move(out);
  w.planned_peak_bytes = estimate_peak_bytes(w);
}

}  // namespace toroid::codegen::wrapper
