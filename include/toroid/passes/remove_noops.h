#pragma once

namespace toroid {
class Graph;

// Removes calls that return their input unchanged (Inductor's remove_noop_ops): clone, alias,
// detach, lift_fresh_copy, _to_copy to the same dtype and device, views whose result has the
// input's sizes, strides and offset (view/reshape/expand to the same shape, full-range slice,
// identity permute ...), and x * 1, x / 1, x + 0, x - 0 with a scalar. The result must have
// exactly the input's dtype and layout. A copy (non-view) is kept when its removal would make a
// graph output alias a graph input, a param or another output, or when its input's storage is
// mutated in the graph (the copy snapshots it). Recurses into subgraphs.
void remove_noops(Graph& g);
}  // namespace toroid
