// Lowerings of the elementwise ops: each becomes a pointwise body over the output's index.
// Operands are cast to the op's compute dtype (float for bf16/f16), and the result to the
// output's dtype, which for bf16/f16 rounds as PyTorch does after every op.
#include <cmath>
#include <initializer_list>

#include "lowering.h"
#include "toroid/ops/meta_util.h"

namespace toroid::loop {
namespace {

using ops::BoundArgs;
using Fn = std::function<Expr(const std::vector<Expr>&, DType)>;

// Lowers `n` as out = f(operands...) computed in `cdt`.
void pointwise(Lowering& L, const Node* n, const BoundArgs& a, std::initializer_list<const char*> names, DType cdt,
               const Fn& f) {
  const Value* out = n->result(0);
  Index idx = Lowering::vars(out->meta().sizes.size());
  std::vector<Expr> ops;
  for (const char* name : names) ops.push_back(operand_at(L, n, a, name, idx, cdt));
  L.define_pointwise(out, cast(f(ops, cdt), out->meta().dtype));
}

DType out_compute(const Node* n) { return compute_dtype(n->result(0)->meta().dtype); }

// The promoted dtype of the operands (comparisons compute in it, then return bool).
DType common_dtype(const BoundArgs& a, std::initializer_list<const char*> names) {
  std::vector<ops::meta::Operand> ops;
  for (const char* name : names) ops.push_back(ops::meta::operand(a, name));
  return compute_dtype(ops::meta::result_type(ops));
}

Expr c(double v, DType d) { return constant(v, d); }

template <Op O>
void unary_op(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self"}, out_compute(n), [](const std::vector<Expr>& x, DType) { return unary(O, x[0]); });
}

// Rounding ops are the identity on integers.
template <Op O>
void rounding_op(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self"}, out_compute(n), [](const std::vector<Expr>& x, DType d) {
    return is_floating(d) ? unary(O, x[0]) : x[0];
  });
}

template <Op O>
void binary_op(Lowering& L, const Node* n, const BoundArgs& a) {
  const char* other = a.schema().argument_index("other") ? "other" : "exponent";
  pointwise(L, n, a, {"self", other}, out_compute(n),
            [](const std::vector<Expr>& x, DType) { return binary(O, x[0], x[1]); });
}

// Integer division ops: a zero divisor is an error at n.
template <Op O>
void division_op(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self", "other"}, out_compute(n),
            [n](const std::vector<Expr>& x, DType) { return checked_binary(O, x[0], x[1], n); });
}

template <Op O>
void compare_op(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self", "other"}, common_dtype(a, {"self", "other"}),
            [](const std::vector<Expr>& x, DType) { return binary(O, x[0], x[1]); });
}

template <Op O>
void logical_op(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self", "other"}, DType::Bool, [](const std::vector<Expr>& x, DType) { return binary(O, x[0], x[1]); });
}

template <Op O>
void predicate_op(Lowering& L, const Node* n, const BoundArgs& a) {
  DType d = compute_dtype(a.tensor("self")->meta().dtype);
  pointwise(L, n, a, {"self"}, d, [](const std::vector<Expr>& x, DType) { return unary(O, x[0]); });
}

// add/sub with alpha: self (+|-) other * alpha.
template <Op O>
void add_sub(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr alpha = a.scalar("alpha");
  pointwise(L, n, a, {"self", "other"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    Expr other = x[1];
    if (alpha && alpha != SymExpr::integer(1) && alpha != SymExpr::floating(1.0))
      other = binary(Op::Mul, other, scalar_expr(alpha, d));
    return binary(O, x[0], other);
  });
}

void rsub(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr alpha = a.scalar("alpha");
  pointwise(L, n, a, {"self", "other"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    Expr self = alpha ? binary(Op::Mul, x[0], scalar_expr(alpha, d)) : x[0];
    return binary(Op::Sub, x[1], self);
  });
}

void div_mode(Lowering& L, const Node* n, const BoundArgs& a) {
  std::string mode = a.is_none("rounding_mode") ? "" : a.str("rounding_mode");
  pointwise(L, n, a, {"self", "other"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    if (mode == "floor") return checked_binary(Op::FloorDiv, x[0], x[1], n);
    if (mode == "trunc") return is_floating(d) ? unary(Op::Trunc, binary(Op::Div, x[0], x[1])) : checked_binary(Op::TruncDiv, x[0], x[1], n);
    return checked_binary(Op::Div, x[0], x[1], n);
  });
}

void where_self(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  DType d = out_compute(n);
  Index idx = Lowering::vars(out->meta().sizes.size());
  Expr cond = operand_at(L, n, a, "condition", idx, DType::Bool);
  Expr x = operand_at(L, n, a, "self", idx, d);
  Expr y = operand_at(L, n, a, "other", idx, d);
  L.define_pointwise(out, cast(where(cond, x, y), out->meta().dtype));
}

// clamp: NaN stays NaN (maximum/minimum propagate it); min applies before max, as PyTorch.
Expr clamp_expr(Expr x, Expr lo, Expr hi) {
  if (lo) x = binary(Op::Maximum, x, lo);
  if (hi) x = binary(Op::Minimum, x, hi);
  return x;
}

void clamp_scalar(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr lo = a.is_none("min") ? SymExpr() : a.scalar("min");
  SymExpr hi = a.is_none("max") ? SymExpr() : a.scalar("max");
  pointwise(L, n, a, {"self"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    return clamp_expr(x[0], lo ? scalar_expr(lo, d) : Expr(), hi ? scalar_expr(hi, d) : Expr());
  });
}

void clamp_tensor(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  DType d = out_compute(n);
  Index idx = Lowering::vars(out->meta().sizes.size());
  Expr x = operand_at(L, n, a, "self", idx, d);
  Expr lo = a.is_none("min") ? Expr() : operand_at(L, n, a, "min", idx, d);
  Expr hi = a.is_none("max") ? Expr() : operand_at(L, n, a, "max", idx, d);
  L.define_pointwise(out, cast(clamp_expr(x, lo, hi), out->meta().dtype));
}

void hardtanh(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr lo = a.scalar("min_val"), hi = a.scalar("max_val");
  pointwise(L, n, a, {"self"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    return clamp_expr(x[0], scalar_expr(lo, d), scalar_expr(hi, d));
  });
}

Expr sigmoid_of(Expr x) { return unary(Op::Sigmoid, x); }

void gelu(Lowering& L, const Node* n, const BoundArgs& a) {
  bool tanh_form = a.str("approximate") == "tanh";
  pointwise(L, n, a, {"self"}, out_compute(n), [&](const std::vector<Expr>& v, DType d) {
    Expr x = v[0];
    Expr half_x = binary(Op::Mul, x, c(0.5, d));
    if (tanh_form) {
      Expr cube = binary(Op::Mul, binary(Op::Mul, x, x), x);
      Expr inner = binary(Op::Mul, c(std::sqrt(2.0 / M_PI), d), binary(Op::Add, x, binary(Op::Mul, cube, c(0.044715, d))));
      return binary(Op::Mul, half_x, binary(Op::Add, c(1.0, d), unary(Op::Tanh, inner)));
    }
    Expr erf = unary(Op::Erf, binary(Op::Mul, x, c(M_SQRT1_2, d)));
    return binary(Op::Mul, half_x, binary(Op::Add, c(1.0, d), erf));
  });
}

void silu(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self"}, out_compute(n),
            [](const std::vector<Expr>& x, DType) { return binary(Op::Mul, x[0], sigmoid_of(x[0])); });
}

void leaky_relu(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr slope = a.scalar("negative_slope");
  pointwise(L, n, a, {"self"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    return where(binary(Op::Gt, x[0], c(0, d)), x[0], binary(Op::Mul, x[0], scalar_expr(slope, d)));
  });
}

void elu(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr alpha = a.scalar("alpha"), scale = a.scalar("scale"), input_scale = a.scalar("input_scale");
  pointwise(L, n, a, {"self"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    Expr neg = binary(Op::Mul, scalar_expr(alpha, d),
                      unary(Op::Expm1, binary(Op::Mul, x[0], scalar_expr(input_scale, d))));
    Expr r = where(binary(Op::Gt, x[0], c(0, d)), x[0], neg);
    return binary(Op::Mul, r, scalar_expr(scale, d));
  });
}

void pow_op(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr e = a.get("exponent").is_scalar() ? a.scalar("exponent") : SymExpr();
  pointwise(L, n, a, {"self", "exponent"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    // x ** 2 is x * x (exact, as PyTorch's special case), x ** 0.5 is sqrt.
    if (e && (e == SymExpr::integer(2) || e == SymExpr::floating(2.0))) return binary(Op::Mul, x[0], x[0]);
    if (e && e == SymExpr::floating(0.5) && is_floating(d)) return unary(Op::Sqrt, x[0]);
    return binary(Op::Pow, x[0], x[1]);
  });
}

void identity(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"self"}, n->result(0)->meta().dtype, [](const std::vector<Expr>& x, DType) { return x[0]; });
}

void to_copy(Lowering& L, const Node* n, const BoundArgs& a) {
  // Compute in the source dtype; the cast to the result dtype rounds or converts.
  DType src = a.tensor("self")->meta().dtype;
  pointwise(L, n, a, {"self"}, src, [](const std::vector<Expr>& x, DType) { return x[0]; });
}

void copy(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"src"}, n->result(0)->meta().dtype, [](const std::vector<Expr>& x, DType) { return x[0]; });
}

void masked_fill(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  DType d = out_compute(n);
  Index idx = Lowering::vars(out->meta().sizes.size());
  Expr mask = operand_at(L, n, a, "mask", idx, DType::Bool);
  Expr x = operand_at(L, n, a, "self", idx, d);
  Expr v = operand_at(L, n, a, "value", idx, d);
  L.define_pointwise(out, cast(where(mask, v, x), out->meta().dtype));
}

// Backward ops of activations (grad * f'(x)).
void threshold_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  SymExpr t = a.scalar("threshold");
  pointwise(L, n, a, {"grad_output", "self"}, out_compute(n), [&](const std::vector<Expr>& x, DType d) {
    return where(binary(Op::Le, x[1], scalar_expr(t, d)), c(0, d), x[0]);
  });
}

void tanh_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"grad_output", "output"}, out_compute(n), [](const std::vector<Expr>& x, DType d) {
    return binary(Op::Mul, x[0], binary(Op::Sub, c(1, d), binary(Op::Mul, x[1], x[1])));
  });
}

void sigmoid_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"grad_output", "output"}, out_compute(n), [](const std::vector<Expr>& x, DType d) {
    return binary(Op::Mul, x[0], binary(Op::Mul, binary(Op::Sub, c(1, d), x[1]), x[1]));
  });
}

void silu_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  pointwise(L, n, a, {"grad_output", "self"}, out_compute(n), [](const std::vector<Expr>& x, DType d) {
    Expr s = sigmoid_of(x[1]);
    Expr t = binary(Op::Add, c(1, d), binary(Op::Mul, x[1], binary(Op::Sub, c(1, d), s)));
    return binary(Op::Mul, x[0], binary(Op::Mul, s, t));
  });
}

constexpr LowerRule kRules[] = {
    {"aten.abs.default", unary_op<Op::Abs>},
    {"aten.neg.default", unary_op<Op::Neg>},
    {"aten.exp.default", unary_op<Op::Exp>},
    {"aten.expm1.default", unary_op<Op::Expm1>},
    {"aten.log.default", unary_op<Op::Log>},
    {"aten.log1p.default", unary_op<Op::Log1p>},
    {"aten.log2.default", unary_op<Op::Log2>},
    {"aten.log10.default", unary_op<Op::Log10>},
    {"aten.sqrt.default", unary_op<Op::Sqrt>},
    {"aten.rsqrt.default", unary_op<Op::Rsqrt>},
    {"aten.sin.default", unary_op<Op::Sin>},
    {"aten.cos.default", unary_op<Op::Cos>},
    {"aten.tan.default", unary_op<Op::Tan>},
    {"aten.tanh.default", unary_op<Op::Tanh>},
    {"aten.asin.default", unary_op<Op::Asin>},
    {"aten.acos.default", unary_op<Op::Acos>},
    {"aten.atan.default", unary_op<Op::Atan>},
    {"aten.sinh.default", unary_op<Op::Sinh>},
    {"aten.cosh.default", unary_op<Op::Cosh>},
    {"aten.asinh.default", unary_op<Op::Asinh>},
    {"aten.acosh.default", unary_op<Op::Acosh>},
    {"aten.atanh.default", unary_op<Op::Atanh>},
    {"aten.sigmoid.default", unary_op<Op::Sigmoid>},
    {"aten.erf.default", unary_op<Op::Erf>},
    {"aten.reciprocal.default", unary_op<Op::Reciprocal>},
    {"aten.relu.default", unary_op<Op::Relu>},
    {"aten.sign.default", unary_op<Op::Sign>},
    {"aten.bitwise_not.default", unary_op<Op::BitNot>},
    {"aten.ceil.default", rounding_op<Op::Ceil>},
    {"aten.floor.default", rounding_op<Op::Floor>},
    {"aten.round.default", rounding_op<Op::Round>},
    {"aten.trunc.default", rounding_op<Op::Trunc>},
    {"aten.isnan.default", predicate_op<Op::IsNan>},
    {"aten.isinf.default", predicate_op<Op::IsInf>},
    {"aten.logical_not.default", predicate_op<Op::LogicalNot>},
    {"aten.add.Tensor", add_sub<Op::Add>},
    {"aten.add.Scalar", add_sub<Op::Add>},
    {"aten.sub.Tensor", add_sub<Op::Sub>},
    {"aten.sub.Scalar", add_sub<Op::Sub>},
    {"aten.rsub.Scalar", rsub},
    {"aten.mul.Tensor", binary_op<Op::Mul>},
    {"aten.mul.Scalar", binary_op<Op::Mul>},
    {"aten.div.Tensor", division_op<Op::Div>},
    {"aten.div.Scalar", division_op<Op::Div>},
    {"aten.div.Tensor_mode", div_mode},
    {"aten.div.Scalar_mode", div_mode},
    {"aten.maximum.default", binary_op<Op::Maximum>},
    {"aten.minimum.default", binary_op<Op::Minimum>},
    {"aten.atan2.default", binary_op<Op::Atan2>},
    {"aten.fmod.Tensor", division_op<Op::Fmod>},
    {"aten.fmod.Scalar", division_op<Op::Fmod>},
    {"aten.remainder.Tensor", division_op<Op::Remainder>},
    {"aten.remainder.Scalar", division_op<Op::Remainder>},
    {"aten.bitwise_and.Tensor", binary_op<Op::BitAnd>},
    {"aten.bitwise_and.Scalar", binary_op<Op::BitAnd>},
    {"aten.bitwise_or.Tensor", binary_op<Op::BitOr>},
    {"aten.bitwise_or.Scalar", binary_op<Op::BitOr>},
    {"aten.bitwise_xor.Tensor", binary_op<Op::BitXor>},
    {"aten.bitwise_xor.Scalar", binary_op<Op::BitXor>},
    {"aten.pow.Tensor_Tensor", pow_op},
    {"aten.pow.Tensor_Scalar", pow_op},
    {"aten.pow.Scalar", pow_op},
    {"aten.eq.Tensor", compare_op<Op::Eq>},
    {"aten.eq.Scalar", compare_op<Op::Eq>},
    {"aten.ne.Tensor", compare_op<Op::Ne>},
    {"aten.ne.Scalar", compare_op<Op::Ne>},
    {"aten.lt.Tensor", compare_op<Op::Lt>},
    {"aten.lt.Scalar", compare_op<Op::Lt>},
    {"aten.le.Tensor", compare_op<Op::Le>},
    {"aten.le.Scalar", compare_op<Op::Le>},
    {"aten.gt.Tensor", compare_op<Op::Gt>},
    {"aten.gt.Scalar", compare_op<Op::Gt>},
    {"aten.ge.Tensor", compare_op<Op::Ge>},
    {"aten.ge.Scalar", compare_op<Op::Ge>},
    {"aten.logical_and.default", logical_op<Op::LogicalAnd>},
    {"aten.logical_or.default", logical_op<Op::LogicalOr>},
    {"aten.logical_xor.default", logical_op<Op::LogicalXor>},
    {"aten.where.self", where_self},
    {"aten.clamp.default", clamp_scalar},
    {"aten.clamp.Tensor", clamp_tensor},
    {"aten.hardtanh.default", hardtanh},
    {"aten.gelu.default", gelu},
    {"aten.silu.default", silu},
    {"aten.leaky_relu.default", leaky_relu},
    {"aten.elu.default", elu},
    {"aten.clone.default", identity},
    {"aten.lift_fresh_copy.default", identity},
    {"aten._to_copy.default", to_copy},
    {"aten.copy.default", copy},
    {"aten.masked_fill.Scalar", masked_fill},
    {"aten.threshold_backward.default", threshold_backward},
    {"aten.tanh_backward.default", tanh_backward},
    {"aten.sigmoid_backward.default", sigmoid_backward},
    {"aten.silu_backward.default", silu_backward},
};

}  // namespace

std::span<const LowerRule> pointwise_rules() { return kRules; }

}  // namespace toroid::loop
