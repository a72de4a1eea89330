#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"

namespace toroid::codegen::wrapper {

namespace {

struct FreeBlock {
  int owner;      // the slot whose Free returned it
  SymExpr bytes;  // the block's size (its first buffer's)
};

bool same_device(const Slot& a, const Slot& b) {
  return a.device.type == b.device.type && a.device.index == b.device.index;
}

// The freed block a buffer of `need` bytes in `slot` takes: best fit among those provably at
// least `need` and at most twice it (a small buffer does not pin a large block), an exact size
// first. pool.end() if none.
std::vector<FreeBlock>::iterator best_fit(std::vector<FreeBlock>& pool, const WrapperProgram& w, int slot,
                                          SymExpr need) {
  const ShapeEnv& env = *w.env;
  auto best = pool.end();
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if (!same_device(w.slots[static_cast<size_t>(it->owner)], w.slots[static_cast<size_t>(slot)])) continue;
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
  for (Line& l : w.lines)
    for (auto& p : l.programs) plan_memory(*p);
  std::unordered_set<int> returned;
  for (const OutputPlan& o : w.outputs())
    if (o.kind == OutputPlan::Kind::Tensor) returned.insert(o.tensor.slot);
  auto plannable = [&](int s) {
    return w.slots[static_cast<size_t>(s)].kind == Slot::Kind::Intermediate && !returned.count(s);
  };
  // Last line that touches each slot.
  std::unordered_map<int, size_t> last;
  for (size_t i = 0; i < w.lines.size(); ++i)
    for (int s : touched_slots(w.lines[i])) last[s] = i;
  std::vector<Line> out;
  std::vector<FreeBlock> pool;
  std::unordered_map<int, SymExpr> block;  // each allocated slot's block size
  for (size_t i = 0; i < w.lines.size(); ++i) {
    Line l = w.lines[i];
    if (l.kind == Line::Kind::Alloc) {
      block[l.slot] = l.nbytes;
      auto it = best_fit(pool, w, l.slot, l.nbytes);
      if (it != pool.end()) {
        l.kind = Line::Kind::Reuse;
        l.from = it->owner;
        block[l.slot] = it->bytes;
        pool.erase(it);
      }
    } else if (l.kind == Line::Kind::FallbackCall) {
      for (const ReferenceCall::Result& r : l.call.results) block.emplace(r.ref.slot, r.nbytes);
    }
    out.push_back(l);
    // Frees after the call, so the pool only offers memory from earlier steps.
    for (int s : touched_slots(w.lines[i])) {
      if (last[s] != i || !plannable(s)) continue;
      Line f;
      f.kind = Line::Kind::Free;
      f.slot = s;
      out.push_back(f);
      if (auto it = block.find(s); it != block.end()) pool.push_back({s, it->second});
    }
  }
  w.lines = std::move(out);
  w.planned_peak_bytes = estimate_peak_bytes(w);
}

}  // namespace toroid::codegen::wrapper
