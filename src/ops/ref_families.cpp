// Gathers the reference-kernel rows of every op family.
#include "ref_families.h"

namespace toroid::ops {

std::vector<KernelImpl> all_kernel_impls() {
  std::vector<KernelImpl> rows;
  for (auto family : {pointwise_kernel_impls, binary_kernel_impls, reduction_kernel_impls, view_kernel_impls,
                      creation_kernel_impls, indexing_kernel_impls,
                      index_more_kernel_impls, norm_kernel_impls, linalg_kernel_impls,
                      conv_kernel_impls, pool_kernel_impls, sort_kernel_impls, embedding_kernel_impls,
                      backward_kernel_impls, misc_kernel_impls, fft_kernel_impls}) {
    std::vector<KernelImpl> r = family();
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return rows;
}

}  // namespace toroid::ops
