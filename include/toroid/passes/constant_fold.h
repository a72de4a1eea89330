#pragma once

#include <cstdint>

namespace toroid {
class Graph;

// Results larger than this many elements are not folded (they would bloat the graph).
inline constexpr int64_t kConstantFoldMaxElements = 1024;

// Folds a call whose tensor arguments are all constants (and whose other arguments are
// constant) into constant nodes, by running the op's reference kernel: only deterministic calls
// without side effects or subgraphs, whose results are tensors with static sizes, at most
// kConstantFoldMaxElements elements, contiguous (constants are row-major). Chains fold in one
// sweep. The folded call is erased; unused constants are left to dce.
void constant_fold(Graph& g);
}  // namespace toroid
