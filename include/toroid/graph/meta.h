// TensorMeta: what the compiler knows about a tensor value without its data (the role of
// node.meta['val'] fake tensors in Inductor): dtype, device, symbolic sizes, strides, storage
// offset, and which storage it lives in, so passes can tell which values share memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "toroid/graph/types.h"
#include "toroid/sym/expr.h"

namespace toroid {

// Storage identity. Values whose metas point to the same Storage alias each other (views,
// in-place results). Storages are owned by the root Graph and compared by address.
struct Storage {
  uint64_t id = 0;  // creation order within the root graph; for printing and stable sorting
};

struct TensorMeta {
  DType dtype = DType::Float32;
  Device device;
  std::vector<SymExpr> sizes;
  std::vector<SymExpr> strides;
  SymExpr offset = SymExpr::integer(0);
  Storage* storage = nullptr;  // null only while a meta is being built

  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
  // True when strides equal contiguous_strides(sizes) (structurally, after canonicalization).
  bool is_contiguous() const;
  // Element count (product of sizes).
  SymExpr numel() const;
  // Structural equality of everything but the storage.
  bool same_layout(const TensorMeta& o) const;
};

// Row-major strides: stride[i] = prod(sizes[i+1:]), except that a size that is the constant 0
// counts as 1 in the product, as in PyTorch (a [2, 0, 3] tensor has strides [3, 3, 1]).
std::vector<SymExpr> contiguous_strides(const std::vector<SymExpr>& sizes);

}  // namespace toroid
