// The reference-kernel tables of each family (src/ops/ref_<family>.cpp), gathered by
// all_kernel_impls() in ref_families.cpp.
#pragma once

#include <vector>

#include "toroid/ops/impl.h"

namespace toroid::ops {

std::vector<KernelImpl> pointwise_kernel_impls();   // ref_pointwise.cpp: unary, where, clamp, copies
std::vector<KernelImpl> binary_kernel_impls();      // ref_binary.cpp: arithmetic, comparisons, bitwise
std::vector<KernelImpl> reduction_kernel_impls();   // ref_reduction.cpp
std::vector<KernelImpl> view_kernel_impls();        // ref_view.cpp
std::vector<KernelImpl> creation_kernel_impls();    // ref_creation.cpp (and the random ops)
std::vector<KernelImpl> indexing_kernel_impls();    // ref_indexing.cpp
std::vector<KernelImpl> index_more_kernel_impls();  // ref_index_more.cpp: index, index_put, scatter_reduce, cat, pads
std::vector<KernelImpl> norm_kernel_impls();        // ref_norm.cpp: softmax, layer/group/batch norm
std::vector<KernelImpl> linalg_kernel_impls();      // ref_linalg.cpp: mm family, matmul, linear
std::vector<KernelImpl> conv_kernel_impls();        // ref_conv.cpp: convolution and its backward
std::vector<KernelImpl> pool_kernel_impls();        // ref_pool.cpp: avg/max/adaptive pooling and backwards
std::vector<KernelImpl> sort_kernel_impls();        // ref_sort.cpp: sort, topk
std::vector<KernelImpl> embedding_kernel_impls();   // ref_embedding.cpp: embedding, embedding_bag, nll_loss
std::vector<KernelImpl> backward_kernel_impls();    // ref_backward.cpp: layer/group norm backward
std::vector<KernelImpl> misc_kernel_impls();        // ref_misc.cpp: cdist, pdist, grid_sampler, col2im, upsample, pads
std::vector<KernelImpl> fft_kernel_impls();         // ref_fft.cpp: _fft_r2c, _fft_c2r

}  // namespace toroid::ops
