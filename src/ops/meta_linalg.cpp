// Meta functions of matrix products: mm, bmm, addmm, baddbmm, linear, matmul, and attention
// (scaled_dot_product_attention). Outputs are contiguous; operands must share a dtype and have
// compatible inner sizes.
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

// The sizes equal or the guard holding them so, else a failure naming `what`.
void same_size(MetaContext& ctx, SymExpr x, SymExpr y, const std::string& what) {
  if (x == y) return;
  if ((x.as_int() && y.as_int()) || !ctx.guard(sym::eq(x, y))) ctx.fail(what);
}

// query [..., Hq, L, E], key [..., Hk, S, E], value [..., Hk, S, Ev] -> [..., Hq, L, Ev]: the
// batch dims broadcast; with enable_gqa, Hq is a multiple of Hk (each key head serves Hq / Hk
// query heads). A mask (bool: where attention is allowed; floating: added to the scores)
// broadcasts to the scores [..., Hq, L, S]. No dropout: that needs a random stream per call.
Results attention(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& q = arg(a, ctx, "query");
  const TensorMeta& k = arg(a, ctx, "key");
  const TensorMeta& v = arg(a, ctx, "value");
  if (!is_floating(q.dtype) || is_complex(q.dtype))
    ctx.fail(std::string("query must be a floating tensor, got ") + dtype_short_name(q.dtype));
  same_dtype(ctx, q, k);
  same_dtype(ctx, q, v);
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2) ctx.fail("query, key and value must be at least 2D");
  SymExpr p = a.scalar("dropout_p");
  if (p != SymExpr::floating(0.0) && p != SymExpr::integer(0))
    ctx.fail("dropout_p must be 0: toroid's attention has no dropout");
  bool causal = a.scalar("is_causal") == SymExpr::boolean(true);
  bool gqa = a.scalar("enable_gqa") == SymExpr::boolean(true);
  size_t rq = static_cast<size_t>(q.rank()), rk = static_cast<size_t>(k.rank()), rv = static_cast<size_t>(v.rank());
  same_size(ctx, q.sizes[rq - 1], k.sizes[rk - 1],
            "query and key must have the same embedding size, got " + shape_str(q.sizes) + " and " + shape_str(k.sizes));
  same_size(ctx, k.sizes[rk - 2], v.sizes[rv - 2],
            "key and value must have the same sequence length, got " + shape_str(k.sizes) + " and " + shape_str(v.sizes));
  std::vector<SymExpr> qb(q.sizes.begin(), q.sizes.end() - 2), kb(k.sizes.begin(), k.sizes.end() - 2),
      vb(v.sizes.begin(), v.sizes.end() - 2);
  if (gqa) {
    if (qb.empty() || kb.empty() || vb.empty()) ctx.fail("enable_gqa needs a head dim (-3) on query, key and value");
    same_size(ctx, kb.back(), vb.back(), "key and value must have the same number of heads with enable_gqa");
    std::optional<int64_t> hq = qb.back().as_int(), hk = kb.back().as_int();
    if (!hq || !hk) ctx.fail("enable_gqa needs head counts known at compile time");
    if (*hk <= 0 || *hq % *hk != 0)
      ctx.fail("enable_gqa: query's " + std::to_string(*hq) + " heads are not a multiple of key's " + std::to_string(*hk));
    kb.back() = vb.back() = qb.back();  // each key head repeated for its query heads
  }
  std::vector<std::vector<SymExpr>> batches{qb, kb, vb};
  std::vector<SymExpr> batch = broadcast_shapes(ctx, batches);
  if (Value* m = a.tensor("attn_mask")) {
    if (causal) ctx.fail("attn_mask and is_causal=True are exclusive");
    const TensorMeta& mm = m->meta();
    if (mm.dtype != DType::Bool && mm.dtype != q.dtype)
      ctx.fail(std::string("attn_mask must be bool or the query's dtype (") + dtype_short_name(q.dtype) + "), got " +
               dtype_short_name(mm.dtype));
    std::vector<SymExpr> scores = batch;
    scores.push_back(q.sizes[rq - 2]);
    scores.push_back(k.sizes[rk - 2]);
    std::vector<std::vector<SymExpr>> both{scores, mm.sizes};
    if (broadcast_shapes(ctx, both).size() != scores.size())
      ctx.fail("attn_mask of shape " + shape_str(mm.sizes) + " does not broadcast to the scores " + shape_str(scores));
  }
  std::vector<SymExpr> out = batch;
  out.push_back(q.sizes[rq - 2]);
  out.push_back(v.sizes[rv - 1]);
  return {ResultSpec::tensor(fresh_contiguous(ctx, q.dtype, q.device, out))};
}

}  // namespace

std::vector<MetaImpl> linalg_meta_impls() {
  return {
      {"aten.mm.default", mm}, {"aten.bmm.default", bmm}, {"aten.addmm.default", addmm},
      {"aten.baddbmm.default", baddbmm}, {"aten.matmul.default", matmul}, {"aten.linear.default", linear},
      {"aten._addmm_activation.default", addmm}, {"aten.scaled_dot_product_attention.default", attention},
  };
}

}  // namespace toroid::ops
