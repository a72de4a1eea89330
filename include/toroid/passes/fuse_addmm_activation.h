#pragma once

namespace toroid {
class Graph;

// Folds a relu or a tanh-approximated gelu of an addmm into _addmm_activation, which the CUDA
// executor runs as one cuBLASLt call with a bias + activation epilogue: relu(addmm(b, x, w)) and
// relu(view(addmm(...))) (the 3-D linear) become _addmm_activation(b, x, w, use_gelu) and a view
// of it. Only f32, bf16 and f16 (cuBLASLt's epilogue dtypes), and only when the addmm (and the
// view) has no other user, so nothing is computed twice. Part of the CUDA compile pipeline.
void fuse_addmm_activation(Graph& g);
}  // namespace toroid
