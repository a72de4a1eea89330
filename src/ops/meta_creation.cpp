// Meta functions of tensor creation: full/zeros/ones/empty (and their _like forms),
// empty_strided, scalar_tensor, arange, the random ops and native_dropout.
#include <cmath>

#include "meta_families.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

std::vector<SymExpr> size_arg(const BoundArgs& a, MetaContext& ctx, const char* name) {
  std::vector<SymExpr> sizes = a.int_list(name);
  for (SymExpr s : sizes)
    if (s.as_int() && *s.as_int() < 0)
      ctx.fail("trying to create tensor with negative dimension " + s.str() + ": " + shape_str(sizes));
  return sizes;
}

void check_layout(const BoundArgs& a, MetaContext& ctx) {
  if (!a.schema().argument_index("layout")) return;
  const Argument& l = a.get("layout");
  if (l.kind() == Argument::Kind::Layout && l.layout() != Layout::Strided)
    ctx.fail("only torch.strided tensors are supported");
}

Device device_arg(const BoundArgs& a, Device fallback = Device::cpu()) {
  return a.device("device").value_or(fallback);
}

// The dtype a Python number gives a tensor: bool, int64 or the default float32.
DType number_dtype(SymExpr e) { return e.is_bool() ? DType::Bool : e.is_float() ? DType::Float32 : DType::Int64; }

Results make(MetaContext& ctx, DType d, Device dev, std::vector<SymExpr> sizes) {
  return {ResultSpec::tensor(fresh_contiguous(ctx, d, dev, std::move(sizes)))};
}

Results full(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  SymExpr v = a.scalar("fill_value");
  DType d = a.dtype("dtype").value_or(v ? number_dtype(v) : DType::Float32);
  return make(ctx, d, device_arg(a), size_arg(a, ctx, "size"));
}

// zeros, ones, rand, randn: the default dtype is float32.
Results filled(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  return make(ctx, a.dtype("dtype").value_or(DType::Float32), device_arg(a), size_arg(a, ctx, "size"));
}

Results empty(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  std::vector<SymExpr> sizes = size_arg(a, ctx, "size");
  MemoryFormat f = a.memory_format("memory_format").value_or(MemoryFormat::Contiguous);
  if (f == MemoryFormat::Preserve) ctx.fail("preserve memory format is unsupported by the empty function");
  std::vector<SymExpr> strides = format_strides(ctx, sizes, f);
  return {ResultSpec::tensor(fresh(ctx, a.dtype("dtype").value_or(DType::Float32), device_arg(a), sizes, strides))};
}

Results empty_strided(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  std::vector<SymExpr> sizes = size_arg(a, ctx, "size"), strides = a.int_list("stride");
  if (sizes.size() != strides.size())
    ctx.fail("mismatch in length of strides and shape (" + std::to_string(strides.size()) + " vs " +
             std::to_string(sizes.size()) + ")");
  return {ResultSpec::tensor(fresh(ctx, a.dtype("dtype").value_or(DType::Float32), device_arg(a), sizes, strides))};
}

Results scalar_tensor(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  return make(ctx, a.dtype("dtype").value_or(DType::Float32), device_arg(a), {});
}

// *_like: the input's dtype and device unless given; strides by memory_format (preserve).
Results like(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  Value* x = a.tensor("self");
  if (!x) ctx.fail("argument 'self' must be a tensor, not None");
  const TensorMeta& m = x->meta();
  DType d = a.dtype("dtype").value_or(m.dtype);
  std::vector<SymExpr> strides = like_strides(ctx, m, a.memory_format("memory_format"));
  return {ResultSpec::tensor(fresh(ctx, d, device_arg(a, m.device), m.sizes, strides))};
}

// arange: ceil((end - start) / step) elements; int64 unless an argument is a float.
Results arange(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  SymExpr start = a.scalar("start"), end = a.scalar("end"), step = a.scalar("step");
  if (!start || !end || !step) ctx.fail("start, end and step must be known numbers");
  bool any_float = start.is_float() || end.is_float() || step.is_float();
  DType d = a.dtype("dtype").value_or(any_float ? DType::Float32 : DType::Int64);
  auto as_double = [](SymExpr e) -> std::optional<double> {
    if (e.kind() == sym::Kind::FloatConst) return e.float_value();
    if (auto i = e.as_int()) return static_cast<double>(*i);
    if (e.kind() == sym::Kind::BoolConst) return e.bool_value() ? 1.0 : 0.0;
    return std::nullopt;
  };
  std::optional<double> s = as_double(start), e = as_double(end), st = as_double(step);
  if (st && *st == 0) ctx.fail("step must be nonzero");
  SymExpr size;
  if (s && e && st) {
    if (!std::isfinite(*s) || !std::isfinite(*e)) ctx.fail("unsupported range: " + start.str() + " -> " + end.str());
    if ((*st > 0 && *e < *s) || (*st < 0 && *e > *s))
      ctx.fail("upper bound and larger bound inconsistent with step sign");
    double n = any_float ? std::ceil((*e - *s) / *st)
                         : std::ceil(static_cast<double>(*end.as_int() - *start.as_int()) / static_cast<double>(*step.as_int()));
    if (n > 9.0e18) ctx.fail("arange size is too large");
    size = SymExpr::integer(static_cast<int64_t>(n));
  } else if (!any_float && step.as_int()) {
    int64_t k = *step.as_int();
    SymExpr span = end - start;
    size = ctx.shapes.simplify(sym::floordiv(k > 0 ? span + (k - 1) : span + (k + 1), step));
    if (ctx.guard(sym::lt(size, SymExpr::integer(0))))
      ctx.fail("upper bound and larger bound inconsistent with step sign");
  } else {
    ctx.fail("arange with symbolic float or step arguments is not supported");
  }
  return make(ctx, d, device_arg(a), {size});
}

Results randperm(const BoundArgs& a, MetaContext& ctx) {
  check_layout(a, ctx);
  SymExpr n = a.scalar("n");
  if (n.as_int() && *n.as_int() < 0) ctx.fail("n must be non-negative, got " + n.str());
  return make(ctx, a.dtype("dtype").value_or(DType::Int64), device_arg(a), {n});
}

// native_dropout: the output is input * mask (mask laid out like the input), the mask bool.
Results native_dropout(const BoundArgs& a, MetaContext& ctx) {
  Value* x = a.tensor("input");
  if (!x) ctx.fail("argument 'input' must be a tensor, not None");
  const TensorMeta& m = x->meta();
  TensorMeta mask = fresh(ctx, DType::Bool, m.device, m.sizes, preserve_strides(ctx, m));
  SymExpr train = a.scalar("train");
  bool training = !train || !train.is_bool() || train.bool_value();
  std::vector<SymExpr> st;
  if (training) {
    std::vector<const TensorMeta*> ins{&m, &mask};
    st = elementwise_strides(ctx, m.sizes, ins);
  } else {
    st = preserve_strides(ctx, m);
  }
  return {ResultSpec::tensor(fresh(ctx, m.dtype, m.device, m.sizes, st)), ResultSpec::tensor(mask)};
}

Results bernoulli(const BoundArgs& a, MetaContext& ctx) {
  Value* x = a.tensor("self");
  if (!x) ctx.fail("argument 'self' must be a tensor, not None");
  const TensorMeta& m = x->meta();
  return {ResultSpec::tensor(fresh(ctx, m.dtype, m.device, m.sizes, preserve_strides(ctx, m)))};
}

}  // namespace

std::vector<MetaImpl> creation_meta_impls() {
  return {
      {"aten.full.default", full}, {"aten.zeros.default", filled}, {"aten.ones.default", filled},
      {"aten.rand.default", filled}, {"aten.randn.default", filled},
      {"aten.empty.memory_format", empty}, {"aten.empty_strided.default", empty_strided},
      {"aten.scalar_tensor.default", scalar_tensor}, {"aten.arange.start_step", arange},
      {"aten.full_like.default", like}, {"aten.zeros_like.default", like}, {"aten.ones_like.default", like},
      {"aten.randperm.default", randperm}, {"aten.native_dropout.default", native_dropout},
      {"aten.bernoulli.p", bernoulli},
  };
}

}  // namespace toroid::ops
