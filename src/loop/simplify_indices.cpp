// Index simplification with the loop's own ranges: every index of a buffer's body is a function
// of its index variables, and i<k> runs over [0, sizes[k]) (r<k> over the reduced sizes) whatever
// the body reads, so an index may be simplified under those ranges. Lowering composes views as
// index functions (a reshape unravels a flat position with // and %), and without the ranges
// `(96*i2 + r0)//672` stays a division per element where it is `i2//7`: a contiguous run of the
// reduced dimension then reads as a gather, and the emitters load it an element at a time.
#include "toroid/loop/lower.h"

namespace toroid::loop {

sym::FactsFn loop_var_facts(const ShapeEnv& env, std::span<const SymExpr> sizes, std::span<const SymExpr> reduction_sizes) {
  std::vector<std::pair<SymExpr, sym::ValueRange>> ranges;
  // [0, size - 1] where the size is at least 1 for every value of its symbols; otherwise nothing
  // is claimed (an empty buffer runs no iteration, and its index expressions still get emitted).
  auto add = [&](SymExpr var, SymExpr size) {
    sym::ValueRange r = env.bound(size);
    if (r.lo >= 1) ranges.emplace_back(var, sym::ValueRange{0, r.hi_finite() ? r.hi - 1 : sym::ValueRange::kPosInf});
  };
  for (size_t k = 0; k < sizes.size(); ++k) add(index_var(k), sizes[k]);
  for (size_t k = 0; k < reduction_sizes.size(); ++k) add(reduction_var(k), reduction_sizes[k]);
  return [&env, ranges = std::move(ranges)](SymExpr s) {
    for (const auto& [var, range] : ranges)
      if (var == s) return sym::SymbolFacts{range, 1};
    return env.facts(s);
  };
}

void simplify_indices(LoopProgram& p) {
  const ShapeEnv& env = p.graph->shape_env();
  for (const auto& b : p.buffers) {
    if (!b->is_computed() || !b->body) continue;
    sym::FactsFn facts = loop_var_facts(env, b->sizes, b->reduction_sizes);
    b->body = map_indices(b->body, [&](SymExpr index) { return sym::simplify(index, facts); });
  }
}

}  // namespace toroid::loop
