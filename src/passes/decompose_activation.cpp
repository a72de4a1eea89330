// Decompositions of softmax-like and activation ops, after torch/_decomp/decompositions.py.
#include <cmath>

#include "decompositions.h"
#include "toroid/sym/shape_env.h"

namespace toroid::passes {
namespace {

bool numel_is_zero(Rewriter& rw, Value* x) {
  return rw.graph().shape_env().guard(sym::eq(x->meta().numel(), SymExpr::integer(0)));
}

// softmax(x) = exp(x - amax(x)) / sum(exp(x - amax(x))), in f32 for f16/bf16.
bool softmax_impl(Rewriter& rw, Value* x, int64_t dim, bool half_to_float, bool log) {
  DType orig = rw.dtype_of(x);
  x = rw.cast(x, Rewriter::computation_dtype(orig));
  std::vector<int64_t> dims{dim};
  Value* out;
  if (!log) {
    Value* e = numel_is_zero(rw, x) ? rw.unary("aten.exp.default", x)
                                    : rw.unary("aten.exp.default", rw.sub(x, rw.amax(x, dims, true)));
    out = rw.div(e, rw.sum(e, dims, true));
  } else {
    Value* shifted = numel_is_zero(rw, x) ? x : rw.sub(x, rw.amax(x, dims, true));
    Value* lse = rw.unary("aten.log.default", rw.sum(rw.unary("aten.exp.default", shifted), dims, true));
    out = rw.sub(shifted, lse);
  }
  if (!half_to_float) out = rw.cast(out, orig);
  return rw.commit({out});
}

bool softmax_default(Rewriter& rw, bool log) {
  std::optional<int64_t> dim = rw.integer("dim");
  if (!dim) return false;
  return softmax_impl(rw, rw.in("self"), *dim, rw.flag("half_to_float", false), log);
}

// softmax.int(x, dim, dtype): x.to(dtype) first, when given.
bool softmax_int(Rewriter& rw, bool log) {
  std::optional<int64_t> dim = rw.integer("dim");
  if (!dim) return false;
  Value* x = rw.in("self");
  if (std::optional<DType> d = rw.args().dtype("dtype")) x = rw.cast(x, *d);
  return softmax_impl(rw, x, *dim, false, log);
}

// Elementwise ops compute in f32 for f16/bf16 and cast back, as the decompositions' type
// promotion wrappers do.
Value* upcast(Rewriter& rw, Value* x) { return rw.cast(x, Rewriter::computation_dtype(rw.dtype_of(x))); }

bool silu(Rewriter& rw) {
  Value* x0 = rw.in("self");
  Value* x = upcast(rw, x0);
  Value* out = rw.mul(x, rw.unary("aten.sigmoid.default", x));
  return rw.commit({rw.cast(out, rw.dtype_of(x0))});
}

bool hardtanh(Rewriter& rw) {
  Value* x = rw.in("self");
  return rw.commit({rw.call("aten.clamp.default", {Argument(x), rw.args().get("min_val"), rw.args().get("max_val")})});
}

Value* gt_zero(Rewriter& rw, Value* x) { return rw.call("aten.gt.Scalar", {Argument(x), Argument::integer(0)}); }

bool leaky_relu(Rewriter& rw) {
  Value* x = rw.in("self");
  Value* neg = rw.call("aten.mul.Tensor", {Argument(x), rw.args().get("negative_slope")});
  return rw.commit({rw.where(gt_zero(rw, x), x, neg)});
}

// elu: where(x > 0, x * scale, expm1(x * input_scale) * alpha * scale).
bool elu(Rewriter& rw) {
  std::optional<double> alpha = rw.number("alpha"), scale = rw.number("scale"), input_scale = rw.number("input_scale");
  if (!alpha || !scale || !input_scale) return false;
  Value* x0 = rw.in("self");
  Value* x = upcast(rw, x0);
  Value* pos = rw.mul(x, *scale);
  Value* neg = rw.mul(rw.unary("aten.expm1.default", rw.mul(x, *input_scale)), *alpha * *scale);
  return rw.commit({rw.cast(rw.where(gt_zero(rw, x), pos, neg), rw.dtype_of(x0))});
}

// rsub(self, other, alpha) = other - alpha * self.
bool rsub_scalar(Rewriter& rw) {
  Value* x = rw.in("self");
  Argument other = rw.args().get("other");
  SymExpr alpha = rw.scalar("alpha");
  if (alpha.is_null()) return false;
  Value* scaled = rw.call("aten.mul.Tensor", {Argument(x), Argument(sym::neg(alpha))});
  return rw.commit({rw.call("aten.add.Tensor", {Argument(scaled), other})});
}

// masked_fill(self, mask, value) = where(mask, value, self).
bool masked_fill_scalar(Rewriter& rw) {
  Value* x = rw.in("self");
  Value* mask = rw.in("mask");
  Value* fill = rw.call("aten.scalar_tensor.default", {rw.args().get("value")},
                        {Kwarg{"dtype", Argument(rw.dtype_of(x))}, Kwarg{"device", Argument(rw.device())}});
  return rw.commit({rw.where(mask, fill, x)});
}

}  // namespace

std::vector<Decomposition> activation_decompositions() {
  return {
      {"aten._softmax.default", [](Rewriter& rw) { return softmax_default(rw, false); }},
      {"aten._log_softmax.default", [](Rewriter& rw) { return softmax_default(rw, true); }},
      {"aten.softmax.int", [](Rewriter& rw) { return softmax_int(rw, false); }},
      {"aten.log_softmax.int", [](Rewriter& rw) { return softmax_int(rw, true); }},
      {"aten.silu.default", silu},
      {"aten.hardtanh.default", hardtanh},
      {"aten.leaky_relu.default", leaky_relu},
      {"aten.elu.default", elu},
      {"aten.rsub.Scalar", rsub_scalar},
      {"aten.masked_fill.Scalar", masked_fill_scalar},
  };
}

}  // namespace toroid::passes
