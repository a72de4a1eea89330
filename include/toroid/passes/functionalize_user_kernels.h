#pragma once

namespace toroid {
class Graph;

// Each higher_order.user_kernel_mutation of `g` (its root graph) becomes the functional form:
// the call clones the tensors its `writes` names (tensors_to_clone) and returns the clones, which
// every later use reads instead of the old value; a written graph input gets a trailing copy_ of
// its clone, so the caller still sees the write. The graph's functional flag is left as it was.
void functionalize_user_kernels(Graph& g);
}  // namespace toroid
