// Meta functions of the fft ops: _fft_r2c (real -> complex) and _fft_c2r (complex -> real).
// Their results take the layout of ATen's CPU kernels (the MKL path's _exec_fft), which is what
// real CPU tensors have: see fft_layout below and docs/ops.md.
#include <algorithm>

#include "meta_families.h"
#include "meta_helpers.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

// The transformed dims, wrapped; UserError when empty or repeated.
std::vector<int64_t> fft_dims(const BoundArgs& a, MetaContext& ctx, int64_t rank) {
  std::vector<int64_t> dims;
  for (SymExpr e : a.int_list("dim")) {
    int64_t d = wrap_dim(ctx, const_int(ctx, e, "dim"), rank);
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) ctx.fail("dim " + std::to_string(d) + " appears twice");
    dims.push_back(d);
  }
  if (dims.empty()) ctx.fail("dim must name at least one dimension");
  return dims;
}

// `dims` ordered by the strides, largest first (stable, so ties keep their order).
std::vector<int64_t> by_stride_desc(MetaContext& ctx, std::vector<int64_t> dims, const std::vector<SymExpr>& strides) {
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t x, int64_t y) {
    return is_lt(ctx, strides[static_cast<size_t>(y)], strides[static_cast<size_t>(x)]);
  });
  return dims;
}

// The strides _exec_fft gives its output: the batch (untransformed) dims ordered by the input's
// strides, largest first, then `dims` in their order, laid out densely in that order. As in
// ATen, the batch strides multiply the raw batch sizes and the signal part is contiguous.
std::vector<SymExpr> fft_layout(MetaContext& ctx, const std::vector<SymExpr>& in_strides,
                                const std::vector<SymExpr>& out_sizes, const std::vector<int64_t>& dims) {
  const auto rank = static_cast<int64_t>(out_sizes.size());
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) batch.push_back(d);
  batch = by_stride_desc(ctx, batch, in_strides);
  std::vector<SymExpr> st(static_cast<size_t>(rank));
  SymExpr inner = I(1);
  for (size_t i = dims.size(); i-- > 0;) {
    st[static_cast<size_t>(dims[i])] = inner;
    inner = simp(ctx, inner * sym::max(out_sizes[static_cast<size_t>(dims[i])], I(1)));
  }
  SymExpr batch_numel = I(1);
  for (size_t i = batch.size(); i-- > 0;) {
    st[static_cast<size_t>(batch[i])] = simp(ctx, batch_numel * inner);
    batch_numel = simp(ctx, batch_numel * out_sizes[static_cast<size_t>(batch[i])]);
  }
  return st;
}

Results fft_r2c(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  if (!is_floating(x.dtype)) ctx.fail(std::string("expected a floating-point input, got ") + dtype_short_name(x.dtype));
  std::optional<DType> out_dtype = complex_of(x.dtype);
  if (!out_dtype) ctx.fail(std::string("no complex dtype for ") + dtype_short_name(x.dtype) + " (complex32 is not supported)");
  std::vector<int64_t> dims = fft_dims(a, ctx, x.rank());
  std::vector<SymExpr> sizes = x.sizes;
  auto last = static_cast<size_t>(dims.back());
  if (flag(a, "onesided")) sizes[last] = simp(ctx, sym::floordiv(sizes[last], I(2)) + 1);
  // ATen orders the leading transformed dims by the input's strides; the last stays last.
  std::vector<int64_t> order = by_stride_desc(ctx, {dims.begin(), dims.end() - 1}, x.strides);
  order.push_back(dims.back());
  std::vector<SymExpr> strides = fft_layout(ctx, x.strides, sizes, order);
  return {ResultSpec::tensor(fresh(ctx, *out_dtype, x.device, std::move(sizes), std::move(strides)))};
}

Results fft_c2r(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  if (!is_complex(x.dtype)) ctx.fail(std::string("expected a complex input, got ") + dtype_short_name(x.dtype));
  std::vector<int64_t> dims = fft_dims(a, ctx, x.rank());
  SymExpr n = a.scalar("last_dim_size");
  if (!n || !n.is_int()) ctx.fail("last_dim_size must be an int");
  check(ctx, sym::le(I(1), n), [&] { return "Invalid number of data points (" + n.str() + ") specified"; });
  // Several dims: a complex-to-complex transform over all but the last dim first (its own
  // layout), then the 1-d c2r over the last one.
  std::vector<SymExpr> in_strides = x.strides;
  if (dims.size() > 1) {
    std::vector<int64_t> c2c = by_stride_desc(ctx, {dims.begin(), dims.end() - 1}, x.strides);
    in_strides = fft_layout(ctx, x.strides, x.sizes, c2c);
  }
  std::vector<SymExpr> sizes = x.sizes;
  sizes[static_cast<size_t>(dims.back())] = n;
  std::vector<SymExpr> strides = fft_layout(ctx, in_strides, sizes, {dims.back()});
  return {ResultSpec::tensor(fresh(ctx, complex_value_type(x.dtype), x.device, std::move(sizes), std::move(strides)))};
}

}  // namespace

std::vector<MetaImpl> fft_meta_impls() {
  return {{"aten._fft_r2c.default", fft_r2c}, {"aten._fft_c2r.default", fft_c2r}};
}

}  // namespace toroid::ops
