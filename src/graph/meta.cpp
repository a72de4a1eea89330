#include "toroid/graph/meta.h"

namespace toroid {

std::vector<SymExpr> contiguous_strides(const std::vector<SymExpr>& sizes) {
  std::vector<SymExpr> strides(sizes.size());
  SymExpr running = SymExpr::integer(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    // PyTorch (c10 computeStride) treats empty dims as 1 so strides stay meaningful.
    SymExpr factor = sizes[i].as_int() == std::optional<int64_t>(0) ? SymExpr::integer(1) : sizes[i];
    running = running * factor;
  }
  return strides;
}

bool TensorMeta::is_contiguous() const {
  if (strides.size() != sizes.size()) return false;
  return strides == contiguous_strides(sizes);
}

SymExpr TensorMeta::numel() const {
  if (sizes.empty()) return SymExpr::integer(1);
  return sym::mul(std::span<const SymExpr>(sizes));
}

bool TensorMeta::same_layout(const TensorMeta& o) const {
  return dtype == o.dtype && device == o.device && sizes == o.sizes && strides == o.strides && offset == o.offset;
}

}  // namespace toroid
