// Meta functions of reductions (sum, prod, mean, amax/amin, any, argmax/argmin, max/min, var,
// var_mean) and cumsum. Reduction outputs are contiguous, as PyTorch allocates them.
#include <set>

#include "meta_families.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

const TensorMeta& self_meta(const BoundArgs& a, MetaContext& ctx) {
  Value* x = a.tensor("self");
  if (!x) ctx.fail("argument 'self' must be a tensor, not None");
  return x->meta();
}

// Which dims a reduction reduces: every dim when `dims` is empty.
std::vector<bool> reduced_dims(MetaContext& ctx, int64_t rank, const std::vector<SymExpr>& dims) {
  std::vector<bool> red(static_cast<size_t>(rank), dims.empty());
  std::set<int64_t> seen;
  for (SymExpr e : dims) {
    int64_t d = wrap_dim(ctx, const_int(ctx, e, "dim"), rank);
    if (!seen.insert(d).second) ctx.fail("dim " + std::to_string(d) + " appears multiple times in the list of dims");
    if (rank > 0) red[static_cast<size_t>(d)] = true;
  }
  return red;
}

std::vector<SymExpr> reduced_shape(const TensorMeta& m, const std::vector<bool>& red, bool keepdim) {
  std::vector<SymExpr> out;
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    if (!red[i]) out.push_back(m.sizes[i]);
    else if (keepdim) out.push_back(SymExpr::integer(1));
  }
  return out;
}

bool flag(const BoundArgs& a, const char* name) {
  if (!a.schema().argument_index(name)) return false;
  SymExpr e = a.scalar(name);
  return e && e.is_bool() && e.bool_value();
}

// The dims argument as a list: absent or None -> all dims.
std::vector<SymExpr> dim_list(const BoundArgs& a) {
  if (!a.schema().argument_index("dim") || a.is_none("dim")) return {};
  const Argument& d = a.get("dim");
  if (!d.is_list()) return {a.scalar("dim")};
  return a.int_list("dim");
}

DType sum_dtype(const BoundArgs& a, const TensorMeta& m) {
  if (a.schema().argument_index("dtype"))
    if (std::optional<DType> d = a.dtype("dtype")) return *d;
  return is_integral(m.dtype, true) ? DType::Int64 : m.dtype;
}

Results reduce(const BoundArgs& a, MetaContext& ctx, DType dtype) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<bool> red = reduced_dims(ctx, m.rank(), dim_list(a));
  return {ResultSpec::tensor(fresh_contiguous(ctx, dtype, m.device, reduced_shape(m, red, flag(a, "keepdim"))))};
}

Results sum(const BoundArgs& a, MetaContext& ctx) { return reduce(a, ctx, sum_dtype(a, self_meta(a, ctx))); }

DType mean_dtype(const BoundArgs& a, MetaContext& ctx, const TensorMeta& m) {
  if (std::optional<DType> d = a.dtype("dtype")) return *d;
  if (!is_floating(m.dtype))
    ctx.fail(std::string("mean(): could not infer output dtype; input dtype must be floating point, got ") +
             dtype_short_name(m.dtype));
  return m.dtype;
}

Results mean(const BoundArgs& a, MetaContext& ctx) { return reduce(a, ctx, mean_dtype(a, ctx, self_meta(a, ctx))); }

Results same_dtype(const BoundArgs& a, MetaContext& ctx) { return reduce(a, ctx, self_meta(a, ctx).dtype); }

Results any(const BoundArgs& a, MetaContext& ctx) {
  DType d = self_meta(a, ctx).dtype;
  return reduce(a, ctx, d == DType::UInt8 ? DType::UInt8 : DType::Bool);
}

Results argmax(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  bool keepdim = flag(a, "keepdim");
  if (a.is_none("dim")) {
    // No dim: a 0-dim index, or all ones with keepdim.
    std::vector<SymExpr> sizes(keepdim ? m.sizes.size() : 0, SymExpr::integer(1));
    return {ResultSpec::tensor(fresh_contiguous(ctx, DType::Int64, m.device, std::move(sizes)))};
  }
  return reduce(a, ctx, DType::Int64);
}

Results max_dim(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<bool> red = reduced_dims(ctx, m.rank(), {a.scalar("dim")});
  std::vector<SymExpr> sizes = reduced_shape(m, red, flag(a, "keepdim"));
  return {ResultSpec::tensor(fresh_contiguous(ctx, m.dtype, m.device, sizes)),
          ResultSpec::tensor(fresh_contiguous(ctx, DType::Int64, m.device, sizes))};
}

void check_var_dtype(MetaContext& ctx, const TensorMeta& m) {
  if (!is_floating(m.dtype))
    ctx.fail(std::string("std and var only support floating point dtypes, got ") + dtype_short_name(m.dtype));
}

Results var(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  check_var_dtype(ctx, m);
  return reduce(a, ctx, m.dtype);
}

Results var_mean(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  check_var_dtype(ctx, m);
  std::vector<bool> red = reduced_dims(ctx, m.rank(), dim_list(a));
  std::vector<SymExpr> sizes = reduced_shape(m, red, flag(a, "keepdim"));
  return {ResultSpec::tensor(fresh_contiguous(ctx, m.dtype, m.device, sizes)),
          ResultSpec::tensor(fresh_contiguous(ctx, m.dtype, m.device, sizes))};
}

Results cumsum(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank());
  return {ResultSpec::tensor(fresh_contiguous(ctx, sum_dtype(a, m), m.device, m.sizes))};
}

}  // namespace

std::vector<MetaImpl> reduction_meta_impls() {
  return {
      {"aten.sum.dim_IntList", sum}, {"aten.sum.default", sum},
      {"aten.prod.default", sum}, {"aten.prod.dim_int", sum},
      {"aten.mean.default", mean}, {"aten.mean.dim", mean},
      {"aten.amax.default", same_dtype}, {"aten.amin.default", same_dtype},
      {"aten.max.default", same_dtype}, {"aten.min.default", same_dtype},
      {"aten.any.default", any}, {"aten.any.dim", any}, {"aten.any.dims", any},
      {"aten.argmax.default", argmax}, {"aten.argmin.default", argmax},
      {"aten.max.dim", max_dim}, {"aten.min.dim", max_dim},
      {"aten.var.correction", var}, {"aten.var.dim", var}, {"aten.var_mean.correction", var_mean},
      {"aten.cumsum.default", cumsum}, {"aten.cumprod.default", cumsum},
  };
}

}  // namespace toroid::ops
