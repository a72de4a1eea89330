// Meta functions of matrix products: mm, bmm, addmm, baddbmm, linear, matmul. Outputs are
// contiguous; operands must share a dtype and have compatible inner sizes.
#include "meta_families.h"
#include "meta_helpers.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

constexpr auto& arg = tensor_arg;

void same_dtype(MetaContext& ctx, const TensorMeta& x, const TensorMeta& y) {
  if (x.dtype != y.dtype)
    ctx.fail(std::string("expected both operands to have the same dtype, but got ") + dtype_short_name(x.dtype) +
             " != " + dtype_short_name(y.dtype));
}

void rank_is(MetaContext& ctx, const TensorMeta& m, int64_t r, const char* what) {
  if (m.rank() != r)
    ctx.fail(std::string(what) + " must be a " + std::to_string(r) + "D tensor, got " + std::to_string(m.rank()) + "D");
}

// Inner sizes k1 == k2 (decided with a guard when symbolic).
void inner(MetaContext& ctx, SymExpr k1, SymExpr k2, const TensorMeta& x, const TensorMeta& y) {
  if (k1 == k2) return;
  if ((k1.as_int() && k2.as_int()) || !ctx.guard(sym::eq(k1, k2)))
    ctx.fail("shapes " + shape_str(x.sizes) + " and " + shape_str(y.sizes) + " cannot be multiplied");
}

Results mm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  const TensorMeta& y = arg(a, ctx, a.schema().arguments[1].name.c_str());
  rank_is(ctx, x, 2, "self");
  rank_is(ctx, y, 2, "mat2");
  same_dtype(ctx, x, y);
  inner(ctx, x.sizes[1], y.sizes[0], x, y);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, {x.sizes[0], y.sizes[1]}))};
}

std::vector<SymExpr> bmm_shape(MetaContext& ctx, const TensorMeta& x, const TensorMeta& y) {
  rank_is(ctx, x, 3, "batch1");
  rank_is(ctx, y, 3, "batch2");
  same_dtype(ctx, x, y);
  inner(ctx, x.sizes[0], y.sizes[0], x, y);
  inner(ctx, x.sizes[2], y.sizes[1], x, y);
  return {x.sizes[0], x.sizes[1], y.sizes[2]};
}

Results bmm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, bmm_shape(ctx, x, arg(a, ctx, "mat2"))))};
}

// self must broadcast to the product's shape.
void bias_broadcasts(MetaContext& ctx, const TensorMeta& bias, const std::vector<SymExpr>& out) {
  std::vector<std::vector<SymExpr>> shapes{out, bias.sizes};
  std::vector<SymExpr> b = broadcast_shapes(ctx, shapes);
  if (b.size() != out.size()) ctx.fail("self of shape " + shape_str(bias.sizes) + " does not broadcast to " + shape_str(out));
}

Results addmm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& s = arg(a, ctx, "self");
  const TensorMeta& x = arg(a, ctx, "mat1");
  const TensorMeta& y = arg(a, ctx, "mat2");
  rank_is(ctx, x, 2, "mat1");
  rank_is(ctx, y, 2, "mat2");
  same_dtype(ctx, x, y);
  same_dtype(ctx, s, x);
  inner(ctx, x.sizes[1], y.sizes[0], x, y);
  std::vector<SymExpr> out{x.sizes[0], y.sizes[1]};
  bias_broadcasts(ctx, s, out);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

Results baddbmm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& s = arg(a, ctx, "self");
  const TensorMeta& x = arg(a, ctx, "batch1");
  std::vector<SymExpr> out = bmm_shape(ctx, x, arg(a, ctx, "batch2"));
  same_dtype(ctx, s, x);
  bias_broadcasts(ctx, s, out);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

// torch.matmul's shape rules: 1-d operands gain and lose a dim; batch dims broadcast.
std::vector<SymExpr> matmul_shape(MetaContext& ctx, const TensorMeta& x, const TensorMeta& y) {
  int64_t rx = x.rank(), ry = y.rank();
  if (rx == 0 || ry == 0) ctx.fail("both arguments to matmul need to be at least 1D, but they are " +
                                   std::to_string(rx) + "D and " + std::to_string(ry) + "D");
  same_dtype(ctx, x, y);
  SymExpr kx = x.sizes.back(), ky = ry == 1 ? y.sizes[0] : y.sizes[static_cast<size_t>(ry - 2)];
  inner(ctx, kx, ky, x, y);
  std::vector<SymExpr> bx(x.sizes.begin(), x.sizes.end() - std::min<int64_t>(rx, 2));
  std::vector<SymExpr> by(y.sizes.begin(), y.sizes.end() - std::min<int64_t>(ry, 2));
  std::vector<std::vector<SymExpr>> shapes{bx, by};
  std::vector<SymExpr> out = broadcast_shapes(ctx, shapes);
  if (rx >= 2) out.push_back(x.sizes[static_cast<size_t>(rx - 2)]);
  if (ry >= 2) out.push_back(y.sizes.back());
  return out;
}

Results matmul(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, matmul_shape(ctx, x, arg(a, ctx, "other"))))};
}

Results linear(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "input");
  const TensorMeta& w = arg(a, ctx, "weight");
  if (w.rank() != 2 && w.rank() != 1) ctx.fail("weight must be 1D or 2D, got " + std::to_string(w.rank()) + "D");
  same_dtype(ctx, x, w);
  TensorMeta wt = w;
  if (w.rank() == 2) {
    std::swap(wt.sizes[0], wt.sizes[1]);
    std::swap(wt.strides[0], wt.strides[1]);
  }
  std::vector<SymExpr> out = matmul_shape(ctx, x, wt);
  if (Value* b = a.tensor("bias")) {
    same_dtype(ctx, x, b->meta());
    bias_broadcasts(ctx, b->meta(), out);
  }
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

}  // namespace

std::vector<MetaImpl> linalg_meta_impls() {
  return {
      {"aten.mm.default", mm}, {"aten.bmm.default", bmm}, {"aten.addmm.default", addmm},
      {"aten.baddbmm.default", baddbmm}, {"aten.matmul.default", matmul}, {"aten.linear.default", linear},
      {"aten._addmm_activation.default", addmm},
  };
}

}  // namespace toroid::ops
