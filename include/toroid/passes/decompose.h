#pragma once

#include <string>
#include <vector>

namespace toroid {
class Graph;

// Rewrites composite ops (softmax, layer/group/batch norm, gelu(tanh), silu, var/mean forms,
// linear/matmul, nll_loss_forward, ...) into the lowerable set: elementwise ops, views,
// reductions (var.correction stays one op), creation ops, gather/index, and the externs mm,
// bmm, addmm, convolution. Each replacement is built with the ops' meta functions and spliced
// in with replace_by_example; it computes in f32 for f16/bf16 as torch._decomp does, and its
// results have exactly the original metas. An op whose arguments a decomposition does not
// handle is left as it is. Recurses into subgraphs.
void decompose(Graph& g);

// The ops decompose rewrites, sorted.
std::vector<std::string> decomposed_ops();
}  // namespace toroid
