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

}  // namespace

void plan_memory(WrapperProgram& w) {
  const loop::LoopProgram& p = *w.program;
  std::unordered_set<const Buffer*> live_out;
  for (const loop::OutputRef& o : p.outputs)
    if (o.buffer) live_out.insert(o.buffer->storage);
  // Last line that touches each buffer.
  std::unordered_map<Buffer*, size_t> last;
  for (size_t i = 0; i < w.lines.size(); ++i)
    for (Buffer* b : touched(w.lines[i], p)) last[b] = i;
  std::vector<Line> out;
  std::vector<std::pair<Buffer*, SymExpr>> pool;  // freed buffers and their sizes
  std::unordered_map<const Buffer*, SymExpr> sizes;
  for (size_t i = 0; i < w.lines.size(); ++i) {
    Line l = w.lines[i];
    if (l.kind == Line::Kind::Alloc) {
      sizes[l.buffer] = l.nbytes;
      for (auto it = pool.begin(); it != pool.end(); ++it) {
        if (it->second != l.nbytes || it->first->device != l.buffer->device) continue;
        l.kind = Line::Kind::Reuse;
        l.from = it->first;
        pool.erase(it);
        break;
      }
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
      if (sizes.count(b)) pool.emplace_back(b, sizes[b]);
    }
  }
  w.lines = std::move(out);
}

}  // namespace toroid::codegen::wrapper
