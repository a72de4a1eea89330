#pragma once

namespace toroid {
class Graph;

// Each higher_order.user_kernel_functional of `g` and its subgraphs stops cloning the written
// tensors nothing else reads: a tensor leaves tensors_to_clone when ops::in_place_hazard finds no
// reason against writing it in place (the graph owns it, no view shares it, and the call is its
// only reader), so the kernel writes its memory and no copy runs. The others stay cloned.
void reinplace_user_kernels(Graph& g);
}  // namespace toroid
