#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"

namespace toroid::codegen::wrapper {

namespace {

struct FreeBlock {
  int owner;      // the slot whose Free returned it
  SymExpr bytes;  // the block's size (its first buffer's)
  int donor;      // the donated input whose memory it is (the input's block, or a buffer's that took it); -1: none
};

bool same_device(const Slot& a, const Slot& b) {
  return a.device.type == b.device.type && a.device.index == b.device.index;
}

// The freed block a buffer of `need` bytes in `slot` takes: best fit among those provably at
// least `need` and at most twice it (a small buffer does not pin a large block), an exact size
// first; a donated input's memory goes to a buffer the program returns only where it has the
// input's dtype and provably its size (the caller gets the output as a view of that input, which
// keeps the whole block: a gradient held until the next step must not pin twice its bytes).
// pool.end() if none.
std::vector<FreeBlock>::iterator best_fit(std::vector<FreeBlock>& pool, const WrapperProgram& w, int slot,
                                          SymExpr need, bool returned) {
  const ShapeEnv& env = *w.env;
  auto best = pool.end();
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if (!same_device(w.slots[static_cast<size_t>(it->owner)], w.slots[static_cast<size_t>(slot)])) continue;
    if (returned && it->donor >= 0 &&
        (w.slots[static_cast<size_t>(it->donor)].dtype != w.slots[static_cast<size_t>(slot)].dtype ||
         !env.statically_known_true(sym::eq(it->bytes, need))))
      continue;
    if (it->bytes == need) return it;
    if (!env.statically_known_true(sym::ge(it->bytes, need)) ||
        !env.statically_known_true(sym::le(it->bytes, need * 2)))
      continue;
    if (best == pool.end() || env.statically_known_true(sym::lt(it->bytes, best->bytes))) best = it;
  }
  return best;
}

// The pools of one program: one per device and line after which the unbacked symbols of its
// blocks' sizes are all bound (the earliest point its memory can be allocated).
class Pools {
 public:
  explicit Pools(const WrapperProgram& w) : w_(w), env_(*w.env) {
    for (size_t i = 0; i < w.lines.size(); ++i) {
      const Line& l = w.lines[i];
      if (l.kind == Line::Kind::ScalarRead && l.scalar.is_symbol()) defined_at_.emplace(l.scalar, i);
      for (const SymbolDef& d : l.defs) defined_at_.emplace(d.symbol, i);
    }
  }

  // Places the buffer of Alloc line `l` in a pool when its size holds a symbol this program
  // binds (one bound where the program starts sizes an ordinary buffer); false otherwise.
  bool place(Line& l) {
    std::optional<size_t> point;
    for (SymExpr s : l.nbytes.free_symbols())
      if (auto it = defined_at_.find(s); it != defined_at_.end()) point = std::max(point.value_or(0), it->second);
    if (!point) return false;
    const Device& device = w_.slots[static_cast<size_t>(l.slot)].device;
    auto p = std::find_if(pools_.begin(), pools_.end(), [&](const Planned& q) {
      return q.point == *point && q.pool.device.type == device.type && q.pool.device.index == device.index;
    });
    if (p == pools_.end()) {
      p = pools_.insert(pools_.end(), Planned{});
      p->point = *point;
      p->pool.name = "pool" + std::to_string(pools_.size() - 1);
      p->pool.device = device;
    }
    Block b = take(*p, l.nbytes);
    l.pool = static_cast<int>(p - pools_.begin());
    l.offset = b.offset;
    blocks_[l.slot] = {l.pool, b};
    return true;
  }

  // Slot `s`'s block goes back to its pool; false when it has none.
  bool release(int s, size_t out_line) {
    auto it = blocks_.find(s);
    if (it == blocks_.end()) return false;
    Planned& p = pools_[static_cast<size_t>(it->second.first)];
    p.free.push_back(it->second.second);
    p.last_free = out_line;
    return true;
  }

  // Adds each pool's PoolAlloc before its first block and its PoolFree after its last Free.
  void finish(WrapperProgram& w, std::vector<Line>& lines) {
    std::vector<Line> out;
    for (size_t i = 0; i < lines.size(); ++i) {
      for (size_t p = 0; p < pools_.size(); ++p)
        if (lines[i].kind == Line::Kind::Alloc && lines[i].pool == static_cast<int>(p) && !pools_[p].opened) {
          pools_[p].opened = true;
          Line a;
          a.kind = Line::Kind::PoolAlloc;
          a.pool = static_cast<int>(p);
          a.nbytes = pools_[p].pool.nbytes;
          out.push_back(a);
        }
      out.push_back(std::move(lines[i]));
      for (size_t p = 0; p < pools_.size(); ++p)
        if (pools_[p].last_free == i) {
          Line f;
          f.kind = Line::Kind::PoolFree;
          f.pool = static_cast<int>(p);
          out.push_back(f);
        }
    }
    lines = std::move(out);
    w.pools.clear();
    for (const Planned& p : pools_) w.pools.push_back(p.pool);
  }

 private:
  struct Block {
    SymExpr offset, bytes;
  };
  struct Planned {
    Pool pool;
    size_t point = 0;
    std::vector<Block> free;
    size_t last_free = SIZE_MAX;
    bool opened = false;
  };

  SymExpr aligned(SymExpr n) const { return pool_block_bytes(env_, n); }

  // A freed block of the pool provably large enough and at most twice `need` (an exact size
  // first), else a new one at the pool's end.
  Block take(Planned& p, SymExpr need) {
    auto best = p.free.end();
    for (auto it = p.free.begin(); it != p.free.end(); ++it) {
      if (it->bytes == need || it->bytes == aligned(need)) {
        best = it;
        break;
      }
      if (!env_.statically_known_true(sym::ge(it->bytes, need)) ||
          !env_.statically_known_true(sym::le(it->bytes, need * 2)))
        continue;
      if (best == p.free.end() || env_.statically_known_true(sym::lt(it->bytes, best->bytes))) best = it;
    }
    if (best != p.free.end()) {
      Block b = *best;
      p.free.erase(best);
      return b;
    }
    Block b{p.pool.nbytes, aligned(need)};
    p.pool.nbytes = env_.simplify(p.pool.nbytes + b.bytes);
    return b;
  }

  const WrapperProgram& w_;
  const ShapeEnv& env_;
  std::unordered_map<SymExpr, size_t> defined_at_;  // the line binding each unbacked symbol
  std::vector<Planned> pools_;
  std::unordered_map<int, std::pair<int, Block>> blocks_;  // a pooled slot's pool and block
};

}  // namespace

SymExpr pool_block_bytes(const ShapeEnv& env, SymExpr nbytes) {
  constexpr int64_t kAlign = 64;  // bytes: each block in a pool starts on a cache line
  if (env.statically_known_true(sym::eq(sym::mod(nbytes, SymExpr::integer(kAlign)), SymExpr::integer(0)))) return nbytes;
  return env.simplify(sym::floordiv(nbytes + (kAlign - 1), SymExpr::integer(kAlign)) * kAlign);
}

void plan_memory(WrapperProgram& w) {
  for (Line& l : w.lines)
    for (auto& p : l.programs) plan_memory(*p);
  std::unordered_set<int> returned;
  for (const OutputPlan& o : w.outputs())
    if (o.kind == OutputPlan::Kind::Tensor) returned.insert(o.tensor.slot);
  auto plannable = [&](int s) {
    return w.slots[static_cast<size_t>(s)].kind == Slot::Kind::Intermediate && !returned.count(s);
  };
  // A donated input's memory is free after its last use, unless an output views it.
  auto donated = [&](int s) {
    const Slot& slot = w.slots[static_cast<size_t>(s)];
    return slot.kind == Slot::Kind::Input && slot.donated && !returned.count(s);
  };
  // Last line that touches each slot.
  std::unordered_map<int, size_t> last;
  for (size_t i = 0; i < w.lines.size(); ++i)
    for (int s : touched_slots(w.lines[i])) last[s] = i;
  std::vector<Line> out;
  std::vector<FreeBlock> pool;
  std::unordered_map<int, SymExpr> block;  // each allocated slot's block size
  std::unordered_map<int, int> donor_of;   // slots whose block is a donated input's memory: that input's slot
  Pools pools(w);
  for (size_t i = 0; i < w.lines.size(); ++i) {
    Line l = w.lines[i];
    if (l.kind == Line::Kind::Alloc && plannable(l.slot) && pools.place(l)) {
      // Its memory is its pool's: no block of its own to reuse.
    } else if (l.kind == Line::Kind::Alloc) {
      block[l.slot] = l.nbytes;
      auto it = best_fit(pool, w, l.slot, l.nbytes, returned.count(l.slot) > 0);
      if (it != pool.end()) {
        l.kind = Line::Kind::Reuse;
        l.from = it->owner;
        block[l.slot] = it->bytes;
        if (it->donor >= 0) donor_of[l.slot] = it->donor;
        pool.erase(it);
      }
    } else if (l.kind == Line::Kind::FallbackCall) {
      for (const ReferenceCall::Result& r : l.call.results) block.emplace(r.ref.slot, r.nbytes);
    }
    out.push_back(l);
    // Frees after the call, so the pool only offers memory from earlier steps.
    for (int s : touched_slots(w.lines[i])) {
      if (last[s] != i || !(plannable(s) || donated(s))) continue;
      Line f;
      f.kind = Line::Kind::Free;
      f.slot = s;
      out.push_back(f);
      if (donated(s)) {
        pool.push_back({s, w.slots[static_cast<size_t>(s)].nbytes, s});
        continue;
      }
      if (pools.release(s, out.size() - 1)) continue;
      if (auto it = block.find(s); it != block.end()) {
        auto d = donor_of.find(s);
        pool.push_back({s, it->second, d != donor_of.end() ? d->second : -1});
      }
    }
  }
  // An output in a donated input's memory is that input's view for the caller (not written into
  // memory the caller gives), and the program writes the input where it is (no staged copy).
  for (Line& l : out) {
    if (l.kind != Line::Kind::Return) continue;
    for (OutputPlan& o : l.outputs) {
      auto d = o.kind == OutputPlan::Kind::Tensor ? donor_of.find(o.tensor.slot) : donor_of.end();
      if (d == donor_of.end()) continue;
      for (const InputSlot& in : w.inputs)
        if (in.slot == d->second) {
          o.input_index = in.index;
          o.input_offset = in.offset;
        }
      o.bindable = false;
      w.writes_inputs = true;
    }
  }
  pools.finish(w, out);
  w.lines = std::move(out);
  w.planned_peak_bytes = estimate_peak_bytes(w);
}

}  // namespace toroid::codegen::wrapper
