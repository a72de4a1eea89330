// Each meta family file's table of rows (gathered by all_meta_impls in meta_families.cpp).
#pragma once

#include <vector>

#include "toroid/ops/impl.h"

namespace toroid::ops {

std::vector<MetaImpl> pointwise_meta_impls();
std::vector<MetaImpl> reduction_meta_impls();
std::vector<MetaImpl> view_meta_impls();
std::vector<MetaImpl> creation_meta_impls();
std::vector<MetaImpl> indexing_meta_impls();
std::vector<MetaImpl> norm_meta_impls();
std::vector<MetaImpl> linalg_meta_impls();
std::vector<MetaImpl> conv_meta_impls();
std::vector<MetaImpl> pool_meta_impls();
std::vector<MetaImpl> pad_meta_impls();
std::vector<MetaImpl> nn_meta_impls();
std::vector<MetaImpl> misc_meta_impls();
std::vector<MetaImpl> fft_meta_impls();

}  // namespace toroid::ops
