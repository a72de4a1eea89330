// Reference kernels: unary pointwise ops, where/clamp/masked_fill, copies and casts, and the
// pointwise backward helpers. Floating math is done in double and rounded once to the result
// dtype (16-bit floats are never rounded in between); integer math wraps.
#include <cmath>
#include <numbers>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

// ---- unary math that turns integers into float32 -------------------------------------------

double f_exp(double x) { return std::exp(x); }
double f_expm1(double x) { return std::expm1(x); }
double f_log(double x) { return std::log(x); }
double f_log1p(double x) { return std::log1p(x); }
double f_log2(double x) { return std::log2(x); }
double f_log10(double x) { return std::log10(x); }
double f_sqrt(double x) { return std::sqrt(x); }
double f_rsqrt(double x) { return 1.0 / std::sqrt(x); }
double f_sin(double x) { return std::sin(x); }
double f_cos(double x) { return std::cos(x); }
double f_tan(double x) { return std::tan(x); }
double f_asin(double x) { return std::asin(x); }
double f_acos(double x) { return std::acos(x); }
double f_atan(double x) { return std::atan(x); }
double f_sinh(double x) { return std::sinh(x); }
double f_cosh(double x) { return std::cosh(x); }
double f_tanh(double x) { return std::tanh(x); }
double f_asinh(double x) { return std::asinh(x); }
double f_acosh(double x) { return std::acosh(x); }
double f_atanh(double x) { return std::atanh(x); }
double f_erf(double x) { return std::erf(x); }
double f_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double f_reciprocal(double x) { return 1.0 / x; }

template <double (*F)(double)>
Out float_unary(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  DType out = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
  return {ew_map<1>(opname(a), {EwInput{x}}, out, out, [](const std::array<double, 1>& v) { return F(v[0]); })};
}

Out exp_out(const RtArgs& a, KernelContext& ctx) {
  const HostTensor& x = a.tensor("self");
  DType dt = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
  HostTensor r = float_unary<f_exp>(a, ctx)[0].tensor();
  return {write_result(opname(a), a.tensor("out"), r, dt)};
}

// ---- unary ops that keep the dtype ----------------------------------------------------------

enum class BoolRule { Allow, Reject };

template <class FF, class FI>
HostTensor same_unary(const std::string& op, const HostTensor& x, BoolRule br, FF ff, FI fi) {
  if (x.dtype() == DType::Bool && br == BoolRule::Reject)
    kernel_error(op, std::string("\"") + op + "\" not implemented for 'Bool'");
  if (is_floating(x.dtype()))
    return ew_map<1>(op, {EwInput{x}}, x.dtype(), x.dtype(), [&](const std::array<double, 1>& v) { return ff(v[0]); });
  return ew_map<1>(op, {EwInput{x}}, x.dtype(), x.dtype(), [&](const std::array<int64_t, 1>& v) { return fi(v[0]); });
}

Out k_abs(const RtArgs& a, KernelContext&) {
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Allow, [](double x) { return std::fabs(x); },
                     [](int64_t x) { return x < 0 ? wrap_sub(0, x) : x; })};
}

Out k_neg(const RtArgs& a, KernelContext&) {
  if (a.tensor("self").dtype() == DType::Bool)
    kernel_error(opname(a), "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                            "invert a mask, use the `~` or `logical_not()` operator instead.");
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Reject, [](double x) { return -x; },
                     [](int64_t x) { return wrap_sub(0, x); })};
}

int64_t ident(int64_t x) { return x; }

Out k_floor(const RtArgs& a, KernelContext&) {
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Reject, [](double x) { return std::floor(x); }, ident)};
}
Out k_ceil(const RtArgs& a, KernelContext&) {
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Reject, [](double x) { return std::ceil(x); }, ident)};
}
Out k_round(const RtArgs& a, KernelContext&) {
  // nearbyint in the default rounding mode: halves go to even, as torch.round.
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Reject, [](double x) { return std::nearbyint(x); }, ident)};
}
Out k_trunc(const RtArgs& a, KernelContext&) {
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Reject, [](double x) { return std::trunc(x); }, ident)};
}
Out k_sign(const RtArgs& a, KernelContext&) {
  // (0 < x) - (x < 0): NaN and -0.0 give 0.
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Allow,
                     [](double x) { return static_cast<double>((0 < x) - (x < 0)); },
                     [](int64_t x) { return static_cast<int64_t>((0 < x) - (x < 0)); })};
}

double relu_f(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
Out k_relu(const RtArgs& a, KernelContext&) {
  return {same_unary(opname(a), a.tensor("self"), BoolRule::Reject, relu_f,
                     [](int64_t x) { return x > 0 ? x : int64_t{0}; })};
}
Out k_relu_(const RtArgs& a, KernelContext& ctx) {
  const HostTensor& self = a.tensor("self");
  HostTensor r = k_relu(a, ctx)[0].tensor();
  return {write_result(opname(a), self, r, self.dtype())};
}

Out k_bitwise_not(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  if (is_floating(x.dtype()))
    kernel_error(opname(a), std::string("\"bitwise_not_cpu\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  if (x.dtype() == DType::Bool)
    return {ew_map<1>(opname(a), {EwInput{x}}, x.dtype(), x.dtype(), [](const std::array<int64_t, 1>& v) { return !v[0]; })};
  return {ew_map<1>(opname(a), {EwInput{x}}, x.dtype(), x.dtype(), [](const std::array<int64_t, 1>& v) { return ~v[0]; })};
}

Out k_logical_not(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  if (is_floating(x.dtype()))
    return {ew_map<1>(opname(a), {EwInput{x}}, DType::Float64, DType::Bool, [](const std::array<double, 1>& v) { return v[0] == 0.0; })};
  return {ew_map<1>(opname(a), {EwInput{x}}, DType::Int64, DType::Bool, [](const std::array<int64_t, 1>& v) { return v[0] == 0; })};
}

Out k_isnan(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  std::array<EwInput, 1> in{EwInput{x}};
  if (!is_floating(x.dtype())) return {ew_output(opname(a), in, DType::Bool)};
  return {ew_map<1>(opname(a), in, DType::Float64, DType::Bool, [](const std::array<double, 1>& v) { return std::isnan(v[0]); })};
}

Out k_isinf(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  std::array<EwInput, 1> in{EwInput{x}};
  if (!is_floating(x.dtype())) return {ew_output(opname(a), in, DType::Bool)};
  return {ew_map<1>(opname(a), in, DType::Float64, DType::Bool, [](const std::array<double, 1>& v) { return std::isinf(v[0]); })};
}

// ---- activations that need a floating input -------------------------------------------------

void require_floating(const std::string& op, const HostTensor& x) {
  if (!is_floating(x.dtype()))
    kernel_error(op, std::string("not implemented for '") + dtype_aten_name(x.dtype()) + "' (a floating dtype is required)");
}

double gelu_f(double x, bool tanh_approx) {
  if (tanh_approx) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

bool gelu_mode(const RtArgs& a) {
  std::string m = a.str("approximate");
  if (m != "none" && m != "tanh") kernel_error(opname(a), "approximate argument must be either none or tanh, got '" + m + "'");
  return m == "tanh";
}

Out k_gelu(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  require_floating(opname(a), x);
  bool t = gelu_mode(a);
  return {ew_map<1>(opname(a), {EwInput{x}}, x.dtype(), x.dtype(), [&](const std::array<double, 1>& v) { return gelu_f(v[0], t); })};
}

Out k_silu(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  require_floating(opname(a), x);
  return {ew_map<1>(opname(a), {EwInput{x}}, x.dtype(), x.dtype(), [](const std::array<double, 1>& v) { return v[0] / (1.0 + std::exp(-v[0])); })};
}

Out k_elu(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  require_floating(opname(a), x);
  double alpha = a.to_double("alpha"), scale = a.to_double("scale"), in_scale = a.to_double("input_scale");
  return {ew_map<1>(opname(a), {EwInput{x}}, x.dtype(), x.dtype(), [&](const std::array<double, 1>& v) {
    double y = v[0];
    return y > 0 ? y * scale : std::expm1(y * in_scale) * alpha * scale;
  })};
}

Out k_leaky_relu(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  require_floating(opname(a), x);
  double s = a.to_double("negative_slope");
  return {ew_map<1>(opname(a), {EwInput{x}}, x.dtype(), x.dtype(), [&](const std::array<double, 1>& v) { return v[0] > 0 ? v[0] : v[0] * s; })};
}

// clamp(x, lo, hi) = min(max(x, lo), hi), NaN in x propagating; lo > hi gives hi.
double clamp_f(double x, std::optional<double> lo, std::optional<double> hi) {
  if (std::isnan(x)) return x;
  if (lo) {
    if (std::isnan(*lo)) return *lo;
    x = x < *lo ? *lo : x;
  }
  if (hi) {
    if (std::isnan(*hi)) return *hi;
    x = x > *hi ? *hi : x;
  }
  return x;
}
int64_t clamp_i(int64_t x, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && x < *lo) x = *lo;
  if (hi && x > *hi) x = *hi;
  return x;
}

Out k_hardtanh(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  if (x.dtype() == DType::Bool) kernel_error(opname(a), "\"hardtanh\" not implemented for 'Bool'");
  double lo = a.to_double("min_val"), hi = a.to_double("max_val");
  // empty_like(self), then clamp into it (as the meta function says).
  HostTensor out = empty_like(x, x.dtype());
  if (is_floating(x.dtype()))
    return {ew_map_into<1>(opname(a), {EwInput{x}}, x.dtype(), out, [&](const std::array<double, 1>& v) { return clamp_f(v[0], lo, hi); })};
  int64_t ilo = a.to_int("min_val"), ihi = a.to_int("max_val");
  return {ew_map_into<1>(opname(a), {EwInput{x}}, x.dtype(), out, [&](const std::array<int64_t, 1>& v) { return clamp_i(v[0], ilo, ihi); })};
}

// ---- where, clamp, masked_fill --------------------------------------------------------------

Out k_where(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& c = a.tensor("condition");
  if (c.dtype() != DType::Bool && c.dtype() != DType::UInt8)
    kernel_error(op, std::string("where expected condition to be a boolean tensor, but got a tensor with dtype ") +
                         dtype_aten_name(c.dtype()));
  std::array<EwInput, 3> in{EwInput{c}, ew_input(a.get("self")), ew_input(a.get("other"))};
  DType dt = ew_result_type(std::span<const EwInput>(in).subspan(1));
  if (is_floating(dt))
    return {ew_map<3>(op, in, dt, dt, [](const std::array<double, 3>& v) { return v[0] != 0 ? v[1] : v[2]; })};
  // The condition loads through the compute dtype; bool/u8 survive any integral wrap as != 0
  // except u8 into i8 (values > 127 stay nonzero) — still correct for != 0.
  return {ew_map<3>(op, in, dt, dt, [](const std::array<int64_t, 3>& v) { return v[0] != 0 ? v[1] : v[2]; })};
}

Out clamp_impl(const std::string& op, const HostTensor& x, const RtValue& lo_v, const RtValue& hi_v) {
  if (lo_v.is_none() && hi_v.is_none()) kernel_error(op, "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (x.dtype() == DType::Bool) kernel_error(op, "\"clamp\" not implemented for 'Bool'");
  std::vector<EwInput> in{EwInput{x}};
  if (!lo_v.is_none()) in.push_back(ew_input(lo_v));
  if (!hi_v.is_none()) in.push_back(ew_input(hi_v));
  DType dt = ew_result_type(in);
  bool has_lo = !lo_v.is_none(), has_hi = !hi_v.is_none();
  EwInput lo = has_lo ? in[1] : in[0], hi = has_hi ? in.back() : in[0];
  std::array<EwInput, 3> arr{in[0], lo, hi};
  if (is_floating(dt))
    return {ew_map<3>(op, arr, dt, dt, [&](const std::array<double, 3>& v) {
      return clamp_f(v[0], has_lo ? std::optional<double>(v[1]) : std::nullopt, has_hi ? std::optional<double>(v[2]) : std::nullopt);
    })};
  return {ew_map<3>(op, arr, dt, dt, [&](const std::array<int64_t, 3>& v) {
    return clamp_i(v[0], has_lo ? std::optional<int64_t>(v[1]) : std::nullopt, has_hi ? std::optional<int64_t>(v[2]) : std::nullopt);
  })};
}

Out k_clamp(const RtArgs& a, KernelContext&) { return clamp_impl(opname(a), a.tensor("self"), a.get("min"), a.get("max")); }

Out k_masked_fill(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& mask = a.tensor("mask");
  if (mask.dtype() != DType::Bool)
    kernel_error(op, std::string("masked_fill_ only supports boolean masks, but got mask with dtype ") + dtype_aten_name(mask.dtype()));
  EwInput value = ew_input(a.get("value"));
  if (!value.wrapped && value.t.dim() != 0)
    kernel_error(op, "only supports a 0-dimensional value tensor, but got tensor with " + std::to_string(value.t.dim()) + " dimension(s).");
  DType dt = self.dtype();
  std::array<EwInput, 3> in{EwInput{mask}, EwInput{self}, EwInput{value.t, false}};
  // A contiguous clone of the broadcast self, filled where the mask is set.
  HostTensor out = HostTensor::zeros(dt, ew_shape(op, in));
  if (is_floating(dt))
    return {ew_map_into<3>(op, in, dt, out, [](const std::array<double, 3>& v) { return v[0] != 0 ? v[2] : v[1]; })};
  return {ew_map_into<3>(op, in, DType::Int64, out, [](const std::array<int64_t, 3>& v) { return v[0] != 0 ? v[2] : v[1]; })};
}

// ---- copies and casts -----------------------------------------------------------------------

Out k_to_copy(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  return {copy_as(x, a.dtype("dtype").value_or(x.dtype()), a.memory_format("memory_format"))};
}

Out k_convert_element_type(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("a");
  return {copy_as(x, a.dtype("dtype").value_or(x.dtype()))};
}

Out k_clone(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  HostTensor out = empty_like(x, x.dtype(), a.memory_format("memory_format"));
  copy_into(opname(a), out, x);
  return {out};
}

Out k_lift_fresh_copy(const RtArgs& a, KernelContext&) { return {a.tensor("self").clone()}; }

// clone_preserve_strides(self) overwritten by src.
Out k_copy(const RtArgs& a, KernelContext&) {
  HostTensor out = clone_preserve_strides(a.tensor("self"));
  copy_into(opname(a), out, a.tensor("src"));
  return {out};
}

Out k_copy_(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& self = a.tensor("self");
  if (has_internal_overlap(self))
    kernel_error(op, "unsupported operation: more than one element of the written-to tensor refers to a single memory location.");
  // Through a temporary, so a source overlapping self reads its old values.
  HostTensor src = broadcast_to(op, a.tensor("src"), self.sizes()).clone();
  copy_into(op, self, src);
  return {self};
}

Out k_fill(const RtArgs& a, KernelContext&) {
  const HostTensor& self = a.tensor("self");
  EwInput v = ew_input(a.get("value"));
  if (!v.wrapped && v.t.dim() != 0)
    kernel_error(opname(a), "fill only supports 0-dimension value tensor but got tensor with " + std::to_string(v.t.dim()) + " dimensions.");
  HostTensor out = empty_like(self, self.dtype());
  copy_into(opname(a), out, v.t);
  return {out};
}

// ---- pointwise backward helpers -------------------------------------------------------------

template <size_t N, class F>
HostTensor float_binary_same(const RtArgs& a, const char* x, const char* y, F f) {
  std::array<EwInput, 2> in{ew_input(a.get(x)), ew_input(a.get(y))};
  DType dt = ew_result_type(in);
  return ew_map<2>(opname(a), in, dt, dt, f);
}

Out k_tanh_backward(const RtArgs& a, KernelContext&) {
  return {float_binary_same<2>(a, "grad_output", "output", [](const auto& v) { return v[0] * (1 - v[1] * v[1]); })};
}
Out k_sigmoid_backward(const RtArgs& a, KernelContext&) {
  return {float_binary_same<2>(a, "grad_output", "output", [](const auto& v) { return v[0] * (1 - v[1]) * v[1]; })};
}
Out k_threshold_backward(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  std::array<EwInput, 2> in{ew_input(a.get("grad_output")), ew_input(a.get("self"))};
  DType dt = ew_result_type(in);
  double th = a.to_double("threshold");
  if (is_floating(dt))
    return {ew_map<2>(op, in, dt, dt, [&](const std::array<double, 2>& v) { return v[1] <= th ? 0.0 : v[0]; })};
  return {ew_map<2>(op, in, dt, dt, [&](const std::array<int64_t, 2>& v) {
    return static_cast<double>(v[1]) <= th ? int64_t{0} : v[0];
  })};
}
Out k_gelu_backward(const RtArgs& a, KernelContext&) {
  bool t = gelu_mode(a);
  return {float_binary_same<2>(a, "grad_output", "self", [&](const auto& v) -> double {
    double x = static_cast<double>(v[1]), g = static_cast<double>(v[0]);
    if (t) {
      const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
      double inner = k * (x + c * x * x * x);
      double th = std::tanh(inner);
      return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * k * (1 + 3 * c * x * x));
    }
    double cdf = 0.5 * (1 + std::erf(x / std::numbers::sqrt2));
    double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
    return g * (cdf + x * pdf);
  })};
}
Out k_silu_backward(const RtArgs& a, KernelContext&) {
  return {float_binary_same<2>(a, "grad_output", "self", [](const auto& v) -> double {
    double x = static_cast<double>(v[1]);
    double s = 1.0 / (1.0 + std::exp(-x));
    return static_cast<double>(v[0]) * s * (1 + x * (1 - s));
  })};
}

}  // namespace

std::vector<KernelImpl> pointwise_kernel_impls() {
  return {
      {"aten.exp.default", float_unary<f_exp>},
      {"aten.expm1.default", float_unary<f_expm1>},
      {"aten.log.default", float_unary<f_log>},
      {"aten.log1p.default", float_unary<f_log1p>},
      {"aten.log2.default", float_unary<f_log2>},
      {"aten.log10.default", float_unary<f_log10>},
      {"aten.sqrt.default", float_unary<f_sqrt>},
      {"aten.rsqrt.default", float_unary<f_rsqrt>},
      {"aten.sin.default", float_unary<f_sin>},
      {"aten.cos.default", float_unary<f_cos>},
      {"aten.tan.default", float_unary<f_tan>},
      {"aten.asin.default", float_unary<f_asin>},
      {"aten.acos.default", float_unary<f_acos>},
      {"aten.atan.default", float_unary<f_atan>},
      {"aten.sinh.default", float_unary<f_sinh>},
      {"aten.cosh.default", float_unary<f_cosh>},
      {"aten.tanh.default", float_unary<f_tanh>},
      {"aten.asinh.default", float_unary<f_asinh>},
      {"aten.acosh.default", float_unary<f_acosh>},
      {"aten.atanh.default", float_unary<f_atanh>},
      {"aten.erf.default", float_unary<f_erf>},
      {"aten.sigmoid.default", float_unary<f_sigmoid>},
      {"aten.reciprocal.default", float_unary<f_reciprocal>},
      {"aten.exp.out", exp_out},
      {"aten.abs.default", k_abs},
      {"aten.neg.default", k_neg},
      {"aten.floor.default", k_floor},
      {"aten.ceil.default", k_ceil},
      {"aten.round.default", k_round},
      {"aten.trunc.default", k_trunc},
      {"aten.sign.default", k_sign},
      {"aten.relu.default", k_relu},
      {"aten.relu_.default", k_relu_},
      {"aten.bitwise_not.default", k_bitwise_not},
      {"aten.logical_not.default", k_logical_not},
      {"aten.isnan.default", k_isnan},
      {"aten.isinf.default", k_isinf},
      {"aten.gelu.default", k_gelu},
      {"aten.silu.default", k_silu},
      {"aten.elu.default", k_elu},
      {"aten.leaky_relu.default", k_leaky_relu},
      {"aten.hardtanh.default", k_hardtanh},
      {"aten.where.self", k_where},
      {"aten.clamp.default", k_clamp},
      {"aten.clamp.Tensor", k_clamp},
      {"aten.masked_fill.Scalar", k_masked_fill},
      {"aten._to_copy.default", k_to_copy},
      {"prims.convert_element_type.default", k_convert_element_type},
      {"aten.clone.default", k_clone},
      {"aten.lift_fresh_copy.default", k_lift_fresh_copy},
      {"aten.copy.default", k_copy},
      {"aten.copy_.default", k_copy_},
      {"aten.fill.Scalar", k_fill},
      {"aten.tanh_backward.default", k_tanh_backward},
      {"aten.sigmoid_backward.default", k_sigmoid_backward},
      {"aten.threshold_backward.default", k_threshold_backward},
      {"aten.gelu_backward.default", k_gelu_backward},
      {"aten.silu_backward.default", k_silu_backward},
  };
}

}  // namespace toroid::ops
