// Reference kernels: binary pointwise ops (arithmetic, division modes, pow, min/max,
// comparisons, bitwise and logical ops) in their Tensor and Scalar overloads, and the in-place
// and out= forms. Integer arithmetic wraps like PyTorch; integer division or remainder by zero
// is a UserError (PyTorch raises ZeroDivisionError on CPU).
#include <cmath>
#include <limits>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

std::array<EwInput, 2> inputs(const RtArgs& a, const char* x = "self", const char* y = "other") {
  return {ew_input(a.get(x)), ew_input(a.get(y))};
}

[[noreturn]] void zero_div(const std::string& op) { kernel_error(op, "ZeroDivisionError: integer division or modulo by zero"); }

// ---- add, sub, mul ------------------------------------------------------------------------

HostTensor add_impl(const std::string& op, std::array<EwInput, 2> in, const RtValue& alpha_v, bool subtract) {
  DType dt = ew_result_type(in);
  if (subtract && in[0].t.dtype() == DType::Bool && in[1].t.dtype() == DType::Bool)
    kernel_error(op, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                     "`logical_xor()` operator instead.");
  if (subtract && (in[0].t.dtype() == DType::Bool || in[1].t.dtype() == DType::Bool) && dt == DType::Bool)
    kernel_error(op, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                     "invert a mask, use the `~` or `logical_not()` operator instead.");
  if (!is_floating(dt) && alpha_v.kind() == RtValue::Kind::Float)
    kernel_error(op, "For integral input tensors, argument alpha must not be a floating point number.");
  if (dt == DType::Bool && alpha_v.kind() == RtValue::Kind::Int && alpha_v.to_int() != 0 && alpha_v.to_int() != 1)
    kernel_error(op, "Boolean alpha only supported for Boolean results.");
  if (is_floating(dt)) {
    double alpha = alpha_v.to_double() * (subtract ? -1.0 : 1.0);
    return ew_map<2>(op, in, dt, dt, [&](const std::array<double, 2>& v) { return v[0] + alpha * v[1]; });
  }
  int64_t alpha = alpha_v.to_int();
  if (subtract) alpha = wrap_sub(0, alpha);
  return ew_map<2>(op, in, dt, dt, [&](const std::array<int64_t, 2>& v) { return wrap_add(v[0], wrap_mul(alpha, v[1])); });
}

Out k_add(const RtArgs& a, KernelContext&) { return {add_impl(opname(a), inputs(a), a.get("alpha"), false)}; }
Out k_sub(const RtArgs& a, KernelContext&) { return {add_impl(opname(a), inputs(a), a.get("alpha"), true)}; }
Out k_rsub(const RtArgs& a, KernelContext&) {
  auto in = inputs(a);
  return {add_impl(opname(a), {in[1], in[0]}, a.get("alpha"), true)};
}
Out k_add_(const RtArgs& a, KernelContext&) {
  auto in = inputs(a);
  HostTensor r = add_impl(opname(a), in, a.get("alpha"), false);
  return {write_result(opname(a), a.tensor("self"), r, r.dtype())};
}

HostTensor mul_impl(const std::string& op, const std::array<EwInput, 2>& in) {
  DType dt = ew_result_type(in);
  if (is_floating(dt)) return ew_map<2>(op, in, dt, dt, [](const std::array<double, 2>& v) { return v[0] * v[1]; });
  return ew_map<2>(op, in, dt, dt, [](const std::array<int64_t, 2>& v) { return wrap_mul(v[0], v[1]); });
}
Out k_mul(const RtArgs& a, KernelContext&) { return {mul_impl(opname(a), inputs(a))}; }
Out k_mul_(const RtArgs& a, KernelContext&) {
  HostTensor r = mul_impl(opname(a), inputs(a));
  return {write_result(opname(a), a.tensor("self"), r, r.dtype())};
}

// ---- division -----------------------------------------------------------------------------

// Python's float floor division (the quotient consistent with the floor remainder).
double floor_div(double a, double b) {
  if (b == 0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

int64_t int_div_trunc(const std::string& op, int64_t a, int64_t b) {
  if (b == 0) zero_div(op);
  if (b == -1) return wrap_sub(0, a);  // INT64_MIN / -1 wraps
  return a / b;
}
int64_t int_div_floor(const std::string& op, int64_t a, int64_t b) {
  if (b == 0) zero_div(op);
  if (b == -1) return wrap_sub(0, a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

HostTensor div_impl(const std::string& op, const std::array<EwInput, 2>& in, const std::string& mode) {
  DType dt = ew_result_type(in);
  if (mode.empty()) {
    DType fdt = is_floating(dt) ? dt : DType::Float32;
    return ew_map<2>(op, in, fdt, fdt, [](const std::array<double, 2>& v) { return v[0] / v[1]; });
  }
  if (mode != "trunc" && mode != "floor")
    kernel_error(op, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + mode + "'");
  bool fl = mode == "floor";
  if (is_floating(dt))
    return ew_map<2>(op, in, dt, dt, [&](const std::array<double, 2>& v) {
      return fl ? floor_div(v[0], v[1]) : std::trunc(v[0] / v[1]);
    });
  return ew_map<2>(op, in, dt, dt, [&](const std::array<int64_t, 2>& v) {
    return fl ? int_div_floor(op, v[0], v[1]) : int_div_trunc(op, v[0], v[1]);
  });
}

std::string rounding_mode(const RtArgs& a) {
  if (!a.schema().argument_index("rounding_mode") || a.is_none("rounding_mode")) return "";
  return a.str("rounding_mode");
}
Out k_div(const RtArgs& a, KernelContext&) { return {div_impl(opname(a), inputs(a), rounding_mode(a))}; }

Out k_remainder(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  auto in = inputs(a);
  DType dt = ew_result_type(in);
  if (is_floating(dt))
    return {ew_map<2>(op, in, dt, dt, [](const std::array<double, 2>& v) {
      double m = std::fmod(v[0], v[1]);
      if (m != 0 && ((v[1] < 0) != (m < 0))) m += v[1];
      return m;
    })};
  return {ew_map<2>(op, in, dt, dt, [&](const std::array<int64_t, 2>& v) -> int64_t {
    if (v[1] == 0) zero_div(op);
    if (v[1] == -1) return 0;
    int64_t m = v[0] % v[1];
    if (m != 0 && ((m < 0) != (v[1] < 0))) m += v[1];
    return m;
  })};
}

Out k_fmod(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  auto in = inputs(a);
  DType dt = ew_result_type(in);
  if (is_floating(dt))
    return {ew_map<2>(op, in, dt, dt, [](const std::array<double, 2>& v) { return std::fmod(v[0], v[1]); })};
  return {ew_map<2>(op, in, dt, dt, [&](const std::array<int64_t, 2>& v) -> int64_t {
    if (v[1] == 0) zero_div(op);
    return v[1] == -1 ? 0 : v[0] % v[1];
  })};
}

// ---- pow, atan2, maximum, minimum ---------------------------------------------------------

int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  while (exp) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

HostTensor pow_impl(const std::string& op, const std::array<EwInput, 2>& in) {
  DType dt = ew_result_type(in);
  if (dt == DType::Bool) dt = DType::Int64;
  if (is_floating(dt)) return ew_map<2>(op, in, dt, dt, [](const std::array<double, 2>& v) { return std::pow(v[0], v[1]); });
  return ew_map<2>(op, in, dt, dt, [](const std::array<int64_t, 2>& v) { return int_pow(v[0], v[1]); });
}

Out k_pow_tt(const RtArgs& a, KernelContext&) { return {pow_impl(opname(a), inputs(a, "self", "exponent"))}; }
Out k_pow_ts(const RtArgs& a, KernelContext&) {
  auto in = inputs(a, "self", "exponent");
  const RtValue& e = a.get("exponent");
  if (!is_floating(in[0].t.dtype()) && e.kind() == RtValue::Kind::Int && e.to_int() < 0)
    kernel_error(opname(a), "Integers to negative integer powers are not allowed.");
  return {pow_impl(opname(a), in)};
}
Out k_pow_s(const RtArgs& a, KernelContext&) { return {pow_impl(opname(a), inputs(a, "self", "exponent"))}; }

HostTensor atan2_impl(const std::string& op, const std::array<EwInput, 2>& in) {
  DType dt = ew_result_type(in);
  if (!is_floating(dt)) dt = DType::Float32;
  return ew_map<2>(op, in, dt, dt, [](const std::array<double, 2>& v) { return std::atan2(v[0], v[1]); });
}
Out k_atan2(const RtArgs& a, KernelContext&) { return {atan2_impl(opname(a), inputs(a))}; }
Out k_atan2_out(const RtArgs& a, KernelContext&) {
  HostTensor r = atan2_impl(opname(a), inputs(a));
  return {write_result(opname(a), a.tensor("out"), r, r.dtype())};
}

template <bool Max>
Out k_minmax(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  auto in = inputs(a);
  DType dt = ew_result_type(in);
  if (is_floating(dt))
    return {ew_map<2>(op, in, dt, dt, [](const std::array<double, 2>& v) {
      if (std::isnan(v[0]) || std::isnan(v[1])) return std::numeric_limits<double>::quiet_NaN();
      return Max ? (v[0] > v[1] ? v[0] : v[1]) : (v[0] < v[1] ? v[0] : v[1]);
    })};
  return {ew_map<2>(op, in, dt, dt, [](const std::array<int64_t, 2>& v) {
    return Max ? (v[0] > v[1] ? v[0] : v[1]) : (v[0] < v[1] ? v[0] : v[1]);
  })};
}

// ---- bitwise and logical ------------------------------------------------------------------

enum class Bit { And, Or, Xor };

template <Bit B>
Out k_bitwise(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  auto in = inputs(a);
  DType dt = ew_result_type(in);
  if (is_floating(dt))
    kernel_error(op, std::string("\"bitwise_") + (B == Bit::And ? "and" : B == Bit::Or ? "or" : "xor") +
                         "_cpu\" not implemented for '" + dtype_aten_name(dt) + "'");
  return {ew_map<2>(op, in, dt, dt, [](const std::array<int64_t, 2>& v) {
    return B == Bit::And ? (v[0] & v[1]) : B == Bit::Or ? (v[0] | v[1]) : (v[0] ^ v[1]);
  })};
}

template <Bit B>
Out k_logical(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  auto in = inputs(a);
  // Each side is truthy when != 0 in its own dtype (NaN is true); the result is laid out by
  // the inputs before their conversion.
  HostTensor out = ew_output(op, in, DType::Bool);
  for (EwInput& e : in) e.t = e.t.to(DType::Bool);
  return {ew_map_into<2>(op, in, DType::Bool, out, [](const std::array<int64_t, 2>& v) {
    bool x = v[0] != 0, y = v[1] != 0;
    return B == Bit::And ? (x && y) : B == Bit::Or ? (x || y) : (x != y);
  })};
}

// ---- comparisons --------------------------------------------------------------------------

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <Cmp C, class T>
bool compare(T x, T y) {
  switch (C) {
    case Cmp::Eq: return x == y;
    case Cmp::Ne: return x != y;
    case Cmp::Lt: return x < y;
    case Cmp::Le: return x <= y;
    case Cmp::Gt: return x > y;
    case Cmp::Ge: return x >= y;
  }
  return false;
}

template <Cmp C>
Out k_compare(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  auto in = inputs(a);
  DType dt = ew_result_type(in);  // both sides are compared in the promoted dtype
  if (is_floating(dt))
    return {ew_map<2>(op, in, dt, DType::Bool, [](const std::array<double, 2>& v) { return compare<C>(v[0], v[1]); })};
  return {ew_map<2>(op, in, dt, DType::Bool, [](const std::array<int64_t, 2>& v) { return compare<C>(v[0], v[1]); })};
}

}  // namespace

std::vector<KernelImpl> binary_kernel_impls() {
  return {
      {"aten.add.Tensor", k_add},
      {"aten.add.Scalar", k_add},
      {"aten.add_.Tensor", k_add_},
      {"aten.sub.Tensor", k_sub},
      {"aten.sub.Scalar", k_sub},
      {"aten.rsub.Scalar", k_rsub},
      {"aten.mul.Tensor", k_mul},
      {"aten.mul.Scalar", k_mul},
      {"aten.mul_.Tensor", k_mul_},
      {"aten.div.Tensor", k_div},
      {"aten.div.Scalar", k_div},
      {"aten.div.Tensor_mode", k_div},
      {"aten.div.Scalar_mode", k_div},
      {"aten.remainder.Tensor", k_remainder},
      {"aten.remainder.Scalar", k_remainder},
      {"aten.fmod.Tensor", k_fmod},
      {"aten.fmod.Scalar", k_fmod},
      {"aten.pow.Tensor_Tensor", k_pow_tt},
      {"aten.pow.Tensor_Scalar", k_pow_ts},
      {"aten.pow.Scalar", k_pow_s},
      {"aten.atan2.default", k_atan2},
      {"aten.atan2.out", k_atan2_out},
      {"aten.maximum.default", k_minmax<true>},
      {"aten.minimum.default", k_minmax<false>},
      {"aten.bitwise_and.Tensor", k_bitwise<Bit::And>},
      {"aten.bitwise_and.Scalar", k_bitwise<Bit::And>},
      {"aten.bitwise_or.Tensor", k_bitwise<Bit::Or>},
      {"aten.bitwise_or.Scalar", k_bitwise<Bit::Or>},
      {"aten.bitwise_xor.Tensor", k_bitwise<Bit::Xor>},
      {"aten.bitwise_xor.Scalar", k_bitwise<Bit::Xor>},
      {"aten.logical_and.default", k_logical<Bit::And>},
      {"aten.logical_or.default", k_logical<Bit::Or>},
      {"aten.logical_xor.default", k_logical<Bit::Xor>},
      {"aten.eq.Tensor", k_compare<Cmp::Eq>},
      {"aten.eq.Scalar", k_compare<Cmp::Eq>},
      {"aten.ne.Tensor", k_compare<Cmp::Ne>},
      {"aten.ne.Scalar", k_compare<Cmp::Ne>},
      {"aten.lt.Tensor", k_compare<Cmp::Lt>},
      {"aten.lt.Scalar", k_compare<Cmp::Lt>},
      {"aten.le.Tensor", k_compare<Cmp::Le>},
      {"aten.le.Scalar", k_compare<Cmp::Le>},
      {"aten.gt.Tensor", k_compare<Cmp::Gt>},
      {"aten.gt.Scalar", k_compare<Cmp::Gt>},
      {"aten.ge.Tensor", k_compare<Cmp::Ge>},
      {"aten.ge.Scalar", k_compare<Cmp::Ge>},
  };
}

}  // namespace toroid::ops
