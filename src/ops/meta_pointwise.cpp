// Meta functions of the pointwise family: unary and binary ops, comparisons, where, clamp, pow,
// division modes, bitwise and logical ops, activations, copies (_to_copy, clone, copy, copy_),
// fill and masked_fill, in-place and out= forms.
#include "meta_families.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

// Can a value of dtype `from` be written into `to` (torch.can_cast)?
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

struct Pointwise {
  DType dtype;
  Device device;
  std::vector<SymExpr> sizes;
  std::vector<SymExpr> strides;
};

// A TensorIterator op over `ops` (tensors and wrapped numbers).
Pointwise compute(MetaContext& ctx, const std::vector<Operand>& ops, Promotion kind) {
  Pointwise p;
  p.dtype = apply_promotion(result_type(ops), kind);
  if (kind == Promotion::NoPromote)
    for (const Operand& o : ops)
      if (o.is_tensor()) {
        p.dtype = o.tensor->dtype;
        break;
      }
  p.device = common_device(ctx, ops);
  std::vector<std::vector<SymExpr>> shapes;
  std::vector<const TensorMeta*> metas;
  bool numbers = false;
  for (const Operand& o : ops) {
    if (!o.is_tensor()) {
      numbers = true;
      continue;
    }
    shapes.push_back(o.tensor->sizes);
    metas.push_back(o.tensor);
  }
  p.sizes = broadcast_shapes(ctx, shapes);
  p.strides = elementwise_strides(ctx, p.sizes, metas, numbers);
  return p;
}

Results result(MetaContext& ctx, Pointwise p) {
  return {ResultSpec::tensor(fresh(ctx, p.dtype, p.device, std::move(p.sizes), std::move(p.strides)))};
}

Results run(const BoundArgs& a, MetaContext& ctx, std::initializer_list<const char*> names, Promotion kind) {
  std::vector<Operand> ops;
  for (const char* n : names) ops.push_back(operand(a, n));
  return result(ctx, compute(ctx, ops, kind));
}

void require_integral(MetaContext& ctx, DType d) {
  if (is_floating(d))
    ctx.fail(std::string("expected integral or bool operands, got ") + dtype_short_name(d));
}

template <Promotion P>
Results unary(const BoundArgs& a, MetaContext& ctx) {
  return run(a, ctx, {"self"}, P);
}

template <Promotion P>
Results binary(const BoundArgs& a, MetaContext& ctx) {
  return run(a, ctx, {"self", "other"}, P);
}

Results bitwise_binary(const BoundArgs& a, MetaContext& ctx) {
  Pointwise p = compute(ctx, {operand(a, "self"), operand(a, "other")}, Promotion::Default);
  require_integral(ctx, p.dtype);
  return result(ctx, std::move(p));
}

Results bitwise_not(const BoundArgs& a, MetaContext& ctx) {
  Pointwise p = compute(ctx, {operand(a, "self")}, Promotion::Default);
  require_integral(ctx, p.dtype);
  return result(ctx, std::move(p));
}

Results neg(const BoundArgs& a, MetaContext& ctx) {
  Pointwise p = compute(ctx, {operand(a, "self")}, Promotion::Default);
  if (p.dtype == DType::Bool)
    ctx.fail("negation, the `-` operator, on a bool tensor is not supported; use `~` or logical_not() instead");
  return result(ctx, std::move(p));
}

// add/sub with alpha: alpha must fit the result kind.
void check_alpha(const BoundArgs& a, MetaContext& ctx, DType result) {
  SymExpr alpha = a.scalar("alpha");
  if (!alpha) return;
  if (alpha.is_float() && !is_floating(result))
    ctx.fail("for integral input tensors, argument alpha must not be a floating point number");
  if (alpha.is_bool() && result != DType::Bool) ctx.fail("boolean alpha only supported for boolean results");
}

Results add(const BoundArgs& a, MetaContext& ctx) {
  Pointwise p = compute(ctx, {operand(a, "self"), operand(a, "other")}, Promotion::Default);
  check_alpha(a, ctx, p.dtype);
  return result(ctx, std::move(p));
}

void check_sub(MetaContext& ctx, const Operand& x, const Operand& y) {
  auto is_bool = [](const Operand& o) { return (o.is_tensor() ? o.tensor->dtype : o.number_dtype) == DType::Bool; };
  if (is_bool(x) && is_bool(y))
    ctx.fail("subtraction, the `-` operator, with two bool tensors is not supported; use `^` or logical_xor() instead");
  if (is_bool(x) || is_bool(y))
    ctx.fail("subtraction, the `-` operator, with a bool tensor is not supported; use `~` or logical_not() to invert a mask");
}

Results sub(const BoundArgs& a, MetaContext& ctx) {
  Operand x = operand(a, "self"), y = operand(a, "other");
  check_sub(ctx, x, y);
  Pointwise p = compute(ctx, {x, y}, Promotion::Default);
  check_alpha(a, ctx, p.dtype);
  return result(ctx, std::move(p));
}

Results rsub(const BoundArgs& a, MetaContext& ctx) {
  Operand x = operand(a, "other"), y = operand(a, "self");
  check_sub(ctx, x, y);
  Pointwise p = compute(ctx, {x, y}, Promotion::Default);
  check_alpha(a, ctx, p.dtype);
  return result(ctx, std::move(p));
}

Results div_mode(const BoundArgs& a, MetaContext& ctx) {
  Promotion kind = Promotion::IntToFloat;
  if (!a.is_none("rounding_mode")) {
    std::string mode = a.str("rounding_mode");
    if (mode != "trunc" && mode != "floor")
      ctx.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + mode + "'");
    kind = Promotion::Default;
  }
  return run(a, ctx, {"self", "other"}, kind);
}

// pow(Tensor, Scalar) promotes with the exponent but iterates over self alone.
Results pow_tensor_scalar(const BoundArgs& a, MetaContext& ctx) {
  Operand x = operand(a, "self"), e = operand(a, "exponent");
  Pointwise p = compute(ctx, {x}, Promotion::Default);
  p.dtype = result_type(std::vector<Operand>{x, e});
  return result(ctx, std::move(p));
}

Results where(const BoundArgs& a, MetaContext& ctx) {
  Operand c = operand(a, "condition"), x = operand(a, "self"), y = operand(a, "other");
  DType cd = c.is_tensor() ? c.tensor->dtype : c.number_dtype;
  if (cd != DType::Bool && cd != DType::UInt8)
    ctx.fail(std::string("where expected condition to be a boolean tensor, but got a tensor with dtype ") +
             dtype_short_name(cd));
  Pointwise p = compute(ctx, {c, x, y}, Promotion::Default);
  p.dtype = result_type(std::vector<Operand>{x, y});
  return result(ctx, std::move(p));
}

Results clamp_scalar(const BoundArgs& a, MetaContext& ctx) {
  if (a.is_none("min") && a.is_none("max")) ctx.fail("at least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops{operand(a, "self")};
  for (const char* n : {"min", "max"})
    if (!a.is_none(n)) ops.push_back(operand(a, n));
  Pointwise p = compute(ctx, {ops[0]}, Promotion::Default);
  p.dtype = result_type(ops);
  return result(ctx, std::move(p));
}

Results clamp_tensor(const BoundArgs& a, MetaContext& ctx) {
  if (a.is_none("min") && a.is_none("max")) ctx.fail("at least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops{operand(a, "self")};
  for (const char* n : {"min", "max"})
    if (!a.is_none(n)) ops.push_back(operand(a, n));
  return result(ctx, compute(ctx, ops, Promotion::Default));
}

// hardtanh is empty_like(self) then clamp into it: no promotion, preserved strides.
Results hardtanh(const BoundArgs& a, MetaContext& ctx) {
  Value* x = a.tensor("self");
  if (!x) ctx.fail("self must be a tensor");
  const TensorMeta& m = x->meta();
  if (m.dtype == DType::Bool) ctx.fail("bool inputs not supported for hardtanh");
  return {ResultSpec::tensor(fresh(ctx, m.dtype, m.device, m.sizes, preserve_strides(ctx, m)))};
}

const TensorMeta& self_meta(const BoundArgs& a, MetaContext& ctx, const char* name = "self") {
  Value* x = a.tensor(name);
  if (!x) ctx.fail(std::string("argument '") + name + "' must be a tensor, not None");
  return x->meta();
}

Results to_copy(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  const Argument& layout = a.get("layout");
  if (layout.kind() == Argument::Kind::Layout && layout.layout() != Layout::Strided)
    ctx.fail("only torch.strided tensors are supported");
  DType dtype = a.dtype("dtype").value_or(m.dtype);
  Device device = a.device("device").value_or(m.device);
  // Laid out as empty_like (PyTorch 2.11's _to_copy: a non-dense input's copy keeps its dims'
  // order, so a transposed slice of a fused projection stays transposed).
  std::vector<SymExpr> strides = like_strides(ctx, m, a.memory_format("memory_format"));
  return {ResultSpec::tensor(fresh(ctx, dtype, device, m.sizes, std::move(strides)))};
}

// prims.convert_element_type: a cast that keeps the input's layout (what torch.compile's
// tensorified float scalars go through).
Results convert_element_type(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx, "a");
  std::optional<DType> dtype = a.dtype("dtype");
  if (!dtype) ctx.fail("dtype must be given");
  return {ResultSpec::tensor(fresh(ctx, *dtype, m.device, m.sizes, like_strides(ctx, m, std::nullopt)))};
}

Results clone(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::optional<MemoryFormat> f;
  if (a.schema().argument_index("memory_format")) f = a.memory_format("memory_format");
  return {ResultSpec::tensor(fresh(ctx, m.dtype, m.device, m.sizes, like_strides(ctx, m, f)))};
}

// lift_fresh_copy returns a contiguous copy whatever the input's layout (PyTorch 2.11).
Results lift_fresh_copy(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  return {ResultSpec::tensor(fresh_contiguous(ctx, m.dtype, m.device, m.sizes))};
}

Results fill(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (!a.is_none("value")) {
    Operand v = operand(a, "value");
    if (v.is_tensor() && v.tensor->rank() != 0) ctx.fail("fill only supports 0-dimension value tensor");
  }
  return {ResultSpec::tensor(fresh(ctx, m.dtype, m.device, m.sizes, preserve_strides(ctx, m)))};
}

// masked_fill clones the broadcast of (mask, self) contiguously.
Results masked_fill(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  const TensorMeta& mask = self_meta(a, ctx, "mask");
  if (mask.dtype != DType::Bool)
    ctx.fail(std::string("masked_fill only supports boolean masks, but got mask with dtype ") +
             dtype_short_name(mask.dtype));
  std::vector<std::vector<SymExpr>> shapes{mask.sizes, m.sizes};
  std::vector<SymExpr> sizes = broadcast_shapes(ctx, shapes);
  if (a.schema().overload == "Tensor") {
    const TensorMeta& v = self_meta(a, ctx, "value");
    if (v.rank() != 0) ctx.fail("masked_fill only supports a 0-dimensional value tensor");
  }
  return {ResultSpec::tensor(fresh_contiguous(ctx, m.dtype, m.device, std::move(sizes)))};
}

// src must broadcast to dst's shape (copy_, in-place ops).
void check_broadcasts_to(MetaContext& ctx, const std::vector<SymExpr>& src, const std::vector<SymExpr>& dst) {
  std::vector<std::vector<SymExpr>> shapes{dst, src};
  std::vector<SymExpr> b = broadcast_shapes(ctx, shapes);
  if (b.size() != dst.size()) ctx.fail("output with shape " + shape_str(dst) + " doesn't match the broadcast shape " + shape_str(b));
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != dst[i] && !ctx.guard(sym::eq(b[i], dst[i])))
      ctx.fail("output with shape " + shape_str(dst) + " doesn't match the broadcast shape " + shape_str(b));
}

// copy(self, src) is clone_preserve_strides(self) overwritten by src: self's exact layout,
// unless self overlaps itself (then a plain clone).
Results copy(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  const TensorMeta& src = self_meta(a, ctx, "src");
  check_broadcasts_to(ctx, src.sizes, m.sizes);
  bool overlap = false;
  for (size_t i = 0; i < m.sizes.size(); ++i)
    if (m.strides[i].as_int() == std::optional<int64_t>(0) && ctx.size_oblivious(sym::lt(SymExpr::integer(1), m.sizes[i])))
      overlap = true;
  if (overlap) return {ResultSpec::tensor(fresh(ctx, m.dtype, m.device, m.sizes, preserve_strides(ctx, m)))};
  TensorMeta r = fresh(ctx, m.dtype, m.device, m.sizes, m.strides);
  r.offset = m.offset;
  return {ResultSpec::tensor(std::move(r))};
}

// In-place: the result is self. The computed dtype must cast into self, the shape must be self's.
Results inplace(MetaContext& ctx, const TensorMeta& self, const Pointwise& p) {
  if (!can_cast(p.dtype, self.dtype))
    ctx.fail(std::string("result type ") + dtype_short_name(p.dtype) + " can't be cast to the desired output type " +
             dtype_short_name(self.dtype));
  check_broadcasts_to(ctx, p.sizes, self.sizes);
  return {ResultSpec::tensor(self)};
}

Results copy_(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  const TensorMeta& src = self_meta(a, ctx, "src");
  check_broadcasts_to(ctx, src.sizes, m.sizes);
  return {ResultSpec::tensor(m)};
}

Results add_(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  Pointwise p = compute(ctx, {operand(a, "self"), operand(a, "other")}, Promotion::Default);
  check_alpha(a, ctx, p.dtype);
  return inplace(ctx, m, p);
}

Results mul_(const BoundArgs& a, MetaContext& ctx) {
  return inplace(ctx, self_meta(a, ctx), compute(ctx, {operand(a, "self"), operand(a, "other")}, Promotion::Default));
}

Results relu_(const BoundArgs& a, MetaContext& ctx) {
  return inplace(ctx, self_meta(a, ctx), compute(ctx, {operand(a, "self")}, Promotion::Default));
}

// out=: the result is `out`, resized (contiguous) when its shape differs.
Results with_out(const BoundArgs& a, MetaContext& ctx, const Pointwise& p) {
  TensorMeta out = self_meta(a, ctx, "out");
  if (!can_cast(p.dtype, out.dtype))
    ctx.fail(std::string("result type ") + dtype_short_name(p.dtype) + " can't be cast to the desired output type " +
             dtype_short_name(out.dtype));
  if (out.sizes != p.sizes) {
    out.sizes = p.sizes;
    out.strides = contiguous_strides(p.sizes);
  }
  return {ResultSpec::tensor(std::move(out))};
}

Results exp_out(const BoundArgs& a, MetaContext& ctx) {
  return with_out(a, ctx, compute(ctx, {operand(a, "self")}, Promotion::IntToFloat));
}

Results atan2_out(const BoundArgs& a, MetaContext& ctx) {
  return with_out(a, ctx, compute(ctx, {operand(a, "self"), operand(a, "other")}, Promotion::IntToFloat));
}

Results grad_binary(const BoundArgs& a, MetaContext& ctx, const char* other) {
  return run(a, ctx, {"grad_output", other}, Promotion::Default);
}

}  // namespace

std::vector<MetaImpl> pointwise_meta_impls() {
  constexpr auto F = Promotion::IntToFloat;
  constexpr auto D = Promotion::Default;
  constexpr auto B = Promotion::AlwaysBool;
  std::vector<MetaImpl> rows = {
      // Unary.
      {"aten.abs.default", unary<D>}, {"aten.ceil.default", unary<D>}, {"aten.floor.default", unary<D>},
      {"aten.round.default", unary<D>}, {"aten.trunc.default", unary<D>}, {"aten.sign.default", unary<D>},
      {"aten.relu.default", unary<D>}, {"aten.gelu.default", unary<D>}, {"aten.silu.default", unary<D>},
      {"aten.elu.default", unary<D>}, {"aten.leaky_relu.default", unary<D>},
      {"aten.neg.default", neg}, {"aten.bitwise_not.default", bitwise_not},
      {"aten.hardtanh.default", hardtanh},
      {"aten.isinf.default", unary<B>}, {"aten.isnan.default", unary<B>}, {"aten.logical_not.default", unary<B>},
      // Binary.
      {"aten.add.Tensor", add}, {"aten.add.Scalar", add}, {"aten.sub.Tensor", sub}, {"aten.sub.Scalar", sub},
      {"aten.rsub.Scalar", rsub},
      {"aten.mul.Tensor", binary<D>}, {"aten.mul.Scalar", binary<D>},
      {"aten.div.Tensor", binary<F>}, {"aten.div.Scalar", binary<F>},
      {"aten.div.Tensor_mode", div_mode}, {"aten.div.Scalar_mode", div_mode},
      {"aten.atan2.default", binary<F>},
      {"aten.maximum.default", binary<D>}, {"aten.minimum.default", binary<D>},
      {"aten.fmod.Tensor", binary<D>}, {"aten.fmod.Scalar", binary<D>},
      {"aten.remainder.Tensor", binary<D>}, {"aten.remainder.Scalar", binary<D>},
      {"aten.bitwise_and.Tensor", bitwise_binary}, {"aten.bitwise_and.Scalar", bitwise_binary},
      {"aten.bitwise_or.Tensor", bitwise_binary}, {"aten.bitwise_or.Scalar", bitwise_binary},
      {"aten.bitwise_xor.Tensor", bitwise_binary}, {"aten.bitwise_xor.Scalar", bitwise_binary},
      {"aten.logical_and.default", binary<B>}, {"aten.logical_or.default", binary<B>},
      {"aten.logical_xor.default", binary<B>},
      {"aten.eq.Tensor", binary<B>}, {"aten.eq.Scalar", binary<B>}, {"aten.ne.Tensor", binary<B>},
      {"aten.ne.Scalar", binary<B>}, {"aten.lt.Tensor", binary<B>}, {"aten.lt.Scalar", binary<B>},
      {"aten.le.Tensor", binary<B>}, {"aten.le.Scalar", binary<B>}, {"aten.gt.Tensor", binary<B>},
      {"aten.gt.Scalar", binary<B>}, {"aten.ge.Tensor", binary<B>}, {"aten.ge.Scalar", binary<B>},
      {"aten.pow.Tensor_Tensor", [](const BoundArgs& a, MetaContext& c) { return run(a, c, {"self", "exponent"}, Promotion::Default); }},
      {"aten.pow.Scalar", [](const BoundArgs& a, MetaContext& c) { return run(a, c, {"self", "exponent"}, Promotion::Default); }},
      {"aten.pow.Tensor_Scalar", pow_tensor_scalar},
      {"aten.where.self", where}, {"aten.clamp.default", clamp_scalar}, {"aten.clamp.Tensor", clamp_tensor},
      // Backward helpers.
      {"aten.tanh_backward.default", [](const BoundArgs& a, MetaContext& c) { return grad_binary(a, c, "output"); }},
      {"aten.sigmoid_backward.default", [](const BoundArgs& a, MetaContext& c) { return grad_binary(a, c, "output"); }},
      {"aten.threshold_backward.default", [](const BoundArgs& a, MetaContext& c) { return grad_binary(a, c, "self"); }},
      {"aten.gelu_backward.default", [](const BoundArgs& a, MetaContext& c) { return grad_binary(a, c, "self"); }},
      {"aten.silu_backward.default", [](const BoundArgs& a, MetaContext& c) { return grad_binary(a, c, "self"); }},
      // Copies and fills.
      {"aten._to_copy.default", to_copy}, {"prims.convert_element_type.default", convert_element_type},
      {"aten.clone.default", clone}, {"aten.lift_fresh_copy.default", lift_fresh_copy},
      {"aten.copy.default", copy}, {"aten.copy_.default", copy_}, {"aten.fill.Scalar", fill},
      {"aten.masked_fill.Scalar", masked_fill},
      // In-place and out=.
      {"aten.add_.Tensor", add_}, {"aten.mul_.Tensor", mul_}, {"aten.relu_.default", relu_},
      {"aten.exp.out", exp_out}, {"aten.atan2.out", atan2_out},
  };
  for (const char* op : {"aten.acos.default", "aten.acosh.default", "aten.asin.default", "aten.asinh.default",
                         "aten.atan.default", "aten.atanh.default", "aten.cos.default", "aten.cosh.default",
                         "aten.erf.default", "aten.exp.default", "aten.expm1.default", "aten.log.default",
                         "aten.log10.default", "aten.log1p.default", "aten.log2.default", "aten.reciprocal.default",
                         "aten.rsqrt.default", "aten.sigmoid.default", "aten.sin.default", "aten.sinh.default",
                         "aten.sqrt.default", "aten.tan.default", "aten.tanh.default"})
    rows.push_back({op, unary<F>});
  return rows;
}

}  // namespace toroid::ops
