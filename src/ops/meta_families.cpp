// Gathers the meta-function rows of every op family.
#include "meta_families.h"

namespace toroid::ops {

std::vector<MetaImpl> all_meta_impls() {
  std::vector<MetaImpl> rows;
  for (auto family : {pointwise_meta_impls, reduction_meta_impls, view_meta_impls, creation_meta_impls, indexing_meta_impls,
                      norm_meta_impls, linalg_meta_impls, conv_meta_impls, pool_meta_impls, pad_meta_impls,
                      nn_meta_impls, misc_meta_impls, fft_meta_impls}) {
    std::vector<MetaImpl> r = family();
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return rows;
}

}  // namespace toroid::ops
