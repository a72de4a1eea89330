// Reference kernels: tensor creation (full, empty, arange, zeros/ones and their _like forms)
// and the random ops (rand, randn, randperm, native_dropout, bernoulli) on Philox-4x32-10.
//
// Random stream (docs/random.md): key = ctx.seed; a call producing n values draws value i
// from the block at counter *ctx.philox_offset + i, then advances *ctx.philox_offset by n, so
// results depend only on (seed, offset, i), never on layout, and two calls never share a block.
#include <cmath>
#include <limits>

#include "ref_families.h"
#include "toroid/ops/philox.h"
#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

void check_sizes(const std::string& op, const std::vector<int64_t>& sizes) {
  for (int64_t s : sizes)
    if (s < 0) kernel_error(op, "Trying to create tensor with negative dimension " + std::to_string(s) + ": " + shape_str(sizes));
}

HostTensor fill_with(const std::string& op, HostTensor out, const RtValue& value) {
  copy_into(op, out, scalar_to_tensor(value));
  return out;
}

HostTensor filled(const std::string& op, DType dtype, const std::vector<int64_t>& sizes, const RtValue& value) {
  check_sizes(op, sizes);
  return fill_with(op, HostTensor::zeros(dtype, sizes), value);
}

HostTensor empty_in_format(const std::string& op, DType dtype, const std::vector<int64_t>& sizes, std::optional<MemoryFormat> f) {
  check_sizes(op, sizes);
  if (f == MemoryFormat::ChannelsLast || f == MemoryFormat::ChannelsLast3d) {
    size_t rank = f == MemoryFormat::ChannelsLast ? 4 : 5;
    if (sizes.size() != rank)
      kernel_error(op, std::string("required rank ") + std::to_string(rank) + " tensor to use " +
                           memory_format_torch_name(*f) + " format");
    return HostTensor::empty_strided(dtype, sizes, meta::format_strides(sizes, *f));
  }
  return HostTensor::zeros(dtype, sizes);
}

// *_like(self, value): empty_like(self, dtype, memory_format) filled with value.
HostTensor filled_like(const RtArgs& a, const RtValue& value) {
  const HostTensor& self = a.tensor("self");
  HostTensor out = empty_like(self, a.dtype("dtype").value_or(self.dtype()), a.memory_format("memory_format"));
  return fill_with(opname(a), out, value);
}

// ---- deterministic creation ---------------------------------------------------------------

Out k_full(const RtArgs& a, KernelContext&) {
  const RtValue& v = a.get("fill_value");
  DType d = a.dtype("dtype").value_or(v.is_tensor() ? v.tensor().dtype()
                                                    : v.kind() == RtValue::Kind::Float ? DType::Float32 : scalar_dtype(v));
  return {filled(opname(a), d, a.int_list("size"), v)};
}

Out k_full_like(const RtArgs& a, KernelContext&) { return {filled_like(a, a.get("fill_value"))}; }

template <int V>
Out k_const(const RtArgs& a, KernelContext&) {
  return {filled(opname(a), a.dtype("dtype").value_or(DType::Float32), a.int_list("size"), RtValue::integer(V))};
}

template <int V>
Out k_const_like(const RtArgs& a, KernelContext&) { return {filled_like(a, RtValue::integer(V))}; }

Out k_empty(const RtArgs& a, KernelContext&) {
  // Empty memory is unspecified; the reference returns zeros.
  return {empty_in_format(opname(a), a.dtype("dtype").value_or(DType::Float32), a.int_list("size"), a.memory_format("memory_format"))};
}

Out k_empty_strided(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  std::vector<int64_t> size = a.int_list("size"), stride = a.int_list("stride");
  check_sizes(op, size);
  if (size.size() != stride.size())
    kernel_error(op, "mismatch in length of strides and shape: " + shape_str(size) + " and " + shape_str(stride));
  for (int64_t s : stride)
    if (s < 0) kernel_error(op, "negative strides are not supported: " + shape_str(stride));
  return {HostTensor::empty_strided(a.dtype("dtype").value_or(DType::Float32), size, stride)};
}

Out k_scalar_tensor(const RtArgs& a, KernelContext&) {
  return {filled(opname(a), a.dtype("dtype").value_or(DType::Float32), {}, a.get("s"))};
}

Out k_arange(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const RtValue &sv = a.get("start"), &ev = a.get("end"), &tv = a.get("step");
  for (const RtValue* v : {&sv, &ev, &tv})
    if (!v->is_number()) kernel_error(op, "start, end and step must be numbers");
  bool any_float = sv.kind() == RtValue::Kind::Float || ev.kind() == RtValue::Kind::Float || tv.kind() == RtValue::Kind::Float;
  DType d = a.dtype("dtype").value_or(any_float ? DType::Float32 : DType::Int64);
  double start = sv.to_double(), end = ev.to_double(), step = tv.to_double();
  if (!std::isfinite(start) || !std::isfinite(end)) kernel_error(op, "unsupported range: " + std::to_string(start) + " -> " + std::to_string(end));
  if (step == 0) kernel_error(op, "step must be nonzero");
  if ((step > 0 && end < start) || (step < 0 && end > start))
    kernel_error(op, "upper bound and larger bound inconsistent with step sign");
  int64_t n;
  if (!any_float) {
    // Exact integer count: ceil((end - start) / step), overflow-checked.
    int64_t diff, st = tv.to_int();
    if (__builtin_sub_overflow(ev.to_int(), sv.to_int(), &diff) || (st == -1 && diff == std::numeric_limits<int64_t>::min()))
      kernel_error(op, "range too large");
    n = diff / st + ((diff % st) != 0 ? 1 : 0);
  } else {
    double c = std::ceil((end - start) / step);
    if (!(c < 1e12)) kernel_error(op, "range too large");
    n = static_cast<int64_t>(c);
  }
  if (n < 0) n = 0;
  if (n > (int64_t{1} << 40)) kernel_error(op, "range too large: " + std::to_string(n) + " elements");
  HostTensor out = HostTensor::zeros(d, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (!any_float && !is_floating(d)) out.set_int(i, wrap_add(sv.to_int(), wrap_mul(i, tv.to_int())));
    else out.set_double(i, start + static_cast<double>(i) * step);
  }
  return {out};
}

// ---- random -------------------------------------------------------------------------------

// Reserves n counters; returns the first.
uint64_t take_counters(KernelContext& ctx, int64_t n) {
  if (!ctx.philox_offset) TOROID_INTERNAL_ERROR("random kernel called without a philox offset");
  uint64_t first = *ctx.philox_offset;
  *ctx.philox_offset += static_cast<uint64_t>(n);
  return first;
}

// A uniform in [0, 1) with as many random bits as the dtype's significand, so rounding never
// gives 1.0.
double uniform_for(DType d, const PhiloxBlock& b) {
  switch (d) {
    case DType::Float64: return uniform_f64(b[0], b[1]);
    case DType::Float16: return static_cast<double>(b[0] >> 21) * 0x1p-11;
    case DType::BFloat16: return static_cast<double>(b[0] >> 24) * 0x1p-8;
    default: return uniform_f32(b[0]);
  }
}

DType random_dtype(const std::string& op, const RtArgs& a) {
  DType d = a.dtype("dtype").value_or(DType::Float32);
  if (!is_floating(d)) kernel_error(op, std::string("\"check_uniform_bounds\" not implemented for '") + dtype_aten_name(d) + "'");
  return d;
}

Out k_rand(const RtArgs& a, KernelContext& ctx) {
  std::string op = opname(a);
  DType d = random_dtype(op, a);
  std::vector<int64_t> size = a.int_list("size");
  check_sizes(op, size);
  HostTensor out = HostTensor::zeros(d, size);
  uint64_t base = take_counters(ctx, out.numel());
  for (int64_t i = 0; i < out.numel(); ++i) out.set_double(i, uniform_for(d, philox_block(ctx.seed, base + static_cast<uint64_t>(i))));
  return {out};
}

Out k_randn(const RtArgs& a, KernelContext& ctx) {
  std::string op = opname(a);
  DType d = random_dtype(op, a);
  std::vector<int64_t> size = a.int_list("size");
  check_sizes(op, size);
  HostTensor out = HostTensor::zeros(d, size);
  uint64_t base = take_counters(ctx, out.numel());
  for (int64_t i = 0; i < out.numel(); ++i) out.set_double(i, normal_from_block(philox_block(ctx.seed, base + static_cast<uint64_t>(i))));
  return {out};
}

Out k_randperm(const RtArgs& a, KernelContext& ctx) {
  std::string op = opname(a);
  int64_t n = a.to_int("n");
  DType d = a.dtype("dtype").value_or(DType::Int64);
  if (n < 0) kernel_error(op, "randperm: n must be non-negative, got " + std::to_string(n));
  if (d == DType::Bool && n > 2) kernel_error(op, "randperm: n is too large for result tensor type: 'Bool'");
  if (n > 1 && round_to(d, static_cast<double>(n - 1)) != static_cast<double>(n - 1))
    kernel_error(op, std::string("randperm: n is too large for result tensor type: '") + dtype_aten_name(d) + "'");
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  uint64_t base = take_counters(ctx, n);
  // Fisher-Yates from the back: position i swaps with a uniform j in [0, i]. The 64-bit modulo
  // bias is below n / 2^64, far under any test's resolution.
  for (int64_t i = n - 1; i > 0; --i) {
    PhiloxBlock b = philox_block(ctx.seed, base + static_cast<uint64_t>(i));
    uint64_t r = (static_cast<uint64_t>(b[1]) << 32) | b[0];
    auto j = static_cast<int64_t>(r % static_cast<uint64_t>(i + 1));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  HostTensor out = HostTensor::zeros(d, {n});
  for (int64_t i = 0; i < n; ++i) out.set_int(i, perm[static_cast<size_t>(i)]);
  return {out};
}

Out k_native_dropout(const RtArgs& a, KernelContext& ctx) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("input");
  double p = a.to_double("p");
  if (!(p >= 0 && p <= 1)) kernel_error(op, "dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  bool train = a.is_none("train") ? true : a.to_bool("train");
  // Laid out as the meta function says: the mask like the input, the output as x * mask.
  HostTensor mask = empty_like(x, DType::Bool);
  if (!train) {
    for (int64_t i = 0; i < mask.numel(); ++i) mask.set_int(i, 1);
    HostTensor out = empty_like(x, x.dtype());
    copy_into(op, out, x);
    return {out, mask};
  }
  if (!is_floating(x.dtype())) kernel_error(op, std::string("dropout not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  double p1m = 1.0 - p;
  // The scale is a Scalar in PyTorch's computation: float precision for all but f64.
  double scale = round_to(x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, p1m == 0 ? 0.0 : 1.0 / p1m);
  HostTensor c = x.clone();
  std::array<EwInput, 2> layout{EwInput{x}, EwInput{mask}};
  HostTensor out = ew_output(op, layout, x.dtype());
  uint64_t base = take_counters(ctx, x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    PhiloxBlock b = philox_block(ctx.seed, base + static_cast<uint64_t>(i));
    bool keep = uniform_f64(b[0], b[1]) < p1m;
    mask.set_int(i, keep);
    out.set_double(i, keep ? c.get_double(i) * scale : 0.0 * c.get_double(i));
  }
  return {out, mask};
}

Out k_bernoulli_p(const RtArgs& a, KernelContext& ctx) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  double p = a.to_double("p");
  if (!(p >= 0 && p <= 1)) kernel_error(op, "bernoulli_ expects p to be in [0, 1], but got p=" + std::to_string(p));
  HostTensor out = empty_like(x, x.dtype());
  uint64_t base = take_counters(ctx, x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    PhiloxBlock b = philox_block(ctx.seed, base + static_cast<uint64_t>(i));
    out.set_int(i, uniform_f64(b[0], b[1]) < p ? 1 : 0);
  }
  return {out};
}

}  // namespace

std::vector<KernelImpl> creation_kernel_impls() {
  return {
      {"aten.full.default", k_full},
      {"aten.full_like.default", k_full_like},
      {"aten.zeros.default", k_const<0>},
      {"aten.ones.default", k_const<1>},
      {"aten.zeros_like.default", k_const_like<0>},
      {"aten.ones_like.default", k_const_like<1>},
      {"aten.empty.memory_format", k_empty},
      {"aten.empty_strided.default", k_empty_strided},
      {"aten.scalar_tensor.default", k_scalar_tensor},
      {"aten.arange.start_step", k_arange},
      {"aten.rand.default", k_rand},
      {"aten.randn.default", k_randn},
      {"aten.randperm.default", k_randperm},
      {"aten.native_dropout.default", k_native_dropout},
      {"aten.bernoulli.p", k_bernoulli_p},
  };
}

}  // namespace toroid::ops
