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

}  // namespace toroid::ops
