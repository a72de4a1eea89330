#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"

namespace toroid::codegen::wrapper {

namespace {

// The running maximum of symbolic sums: candidates no other provably covers.
class Maximum {
 public:
  explicit Maximum(const ShapeEnv& env) : env_(env) {}
  void add(SymExpr e) {
    for (SymExpr c : candidates_)
      if (c == e || env_.statically_known_true(sym::ge(c, e))) return;
    std::erase_if(candidates_, [&](SymExpr c) { return env_.statically_known_true(sym::le(c, e)); });
    candidates_.push_back(e);
  }
  SymExpr value() const {
    if (candidates_.empty()) return SymExpr::integer(0);
    return env_.simplify(sym::max(std::span<const SymExpr>(candidates_)));
  }

 private:
  const ShapeEnv& env_;
  std::vector<SymExpr> candidates_;
};

struct Replay {
  std::vector<SymExpr> live_after;  // per line
  SymExpr peak;
};

// A Cond or While line's programs are planned before it (plan_memory), so their estimates are set.
Replay replay(const WrapperProgram& w) {
  const ShapeEnv& env = *w.env;
  Replay out;
  std::unordered_set<int> taken_later;  // a Reuse line takes its block
  for (const Line& l : w.lines)
    if (l.kind == Line::Kind::Reuse) taken_later.insert(l.from);
  std::unordered_map<int, SymExpr> block;
  SymExpr live = SymExpr::integer(0);
  Maximum peak(env);
  peak.add(live);
  for (const Line& l : w.lines) {
    switch (l.kind) {
      case Line::Kind::Alloc:
        if (l.pool >= 0) break;  // its pool's memory, counted by the PoolAlloc
        block[l.slot] = l.nbytes;
        live = env.simplify(live + l.nbytes);
        break;
      case Line::Kind::PoolAlloc: live = env.simplify(live + l.nbytes); break;
      case Line::Kind::PoolFree: live = env.simplify(live - w.pools.at(static_cast<size_t>(l.pool)).nbytes); break;
      case Line::Kind::Reuse: {
        // A donated input's block is the caller's memory: the program holds no more for it.
        auto it = block.find(l.from);
        block[l.slot] = it != block.end() ? it->second : SymExpr::integer(0);
        break;
      }
      case Line::Kind::FallbackCall:
        for (const ReferenceCall::Result& r : l.call.results) {
          if (block.count(r.ref.slot)) continue;
          block[r.ref.slot] = r.nbytes;
          live = env.simplify(live + r.nbytes);
        }
        break;
      case Line::Kind::Free:
        if (!taken_later.count(l.slot))
          if (auto it = block.find(l.slot); it != block.end()) live = env.simplify(live - it->second);
        break;
      case Line::Kind::Cond:
      case Line::Kind::While: {
        // While the line runs: a program's peak (its own estimate) on top, less the results a
        // program writes (held here already), and a loop's second set of carried values.
        SymExpr results = SymExpr::integer(0);
        for (const TensorRef& r : l.results) results = results + w.slots.at(static_cast<size_t>(r.slot)).nbytes;
        SymExpr scratch = l.kind == Line::Kind::While ? results : SymExpr::integer(0);
        for (size_t i = 0; i < l.programs.size(); ++i) {
          bool writes_results = l.kind == Line::Kind::Cond || i == 1;
          SymExpr own = l.programs[i]->planned_peak_bytes - (writes_results ? results : SymExpr::integer(0));
          peak.add(env.simplify(live + scratch + own));
        }
        break;
      }
      default: break;
    }
    peak.add(live);
    out.live_after.push_back(live);
  }
  out.peak = peak.value();
  return out;
}

}  // namespace

SymExpr estimate_peak_bytes(const WrapperProgram& w) { return replay(w).peak; }

std::vector<SymExpr> live_bytes_by_line(const WrapperProgram& w) { return replay(w).live_after; }

}  // namespace toroid::codegen::wrapper
