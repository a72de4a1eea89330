// Meta functions of pooling: avg_pool1d/2d/3d, adaptive_avg_pool1d, _adaptive_avg_pool2d/3d,
// max_pool2d_with_indices, max_pool3d_with_indices (values and int64 indices), and the backward
// ops avg_pool2d_backward, max_pool2d_with_indices_backward, _adaptive_avg_pool2d_backward.
//
// Output sizes follow PyTorch's pooling_output_shape: floor((in + 2*pad - dil*(k-1) - 1
// [+ stride-1 with ceil_mode]) / stride) + 1, and with ceil_mode the last window must start
// inside the input or the left padding (else the size drops by one). 2-d pools keep the input's
// suggested memory format (channels-last in, channels-last out); avg_pool3d and the adaptive
// 3-d pool are contiguous; max_pool3d keeps channels_last_3d for 5-d inputs.
#include "meta_families.h"
#include "meta_helpers.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

bool is_zero(MetaContext& ctx, SymExpr s) { return holds(ctx, sym::eq(s, I(0))); }

// pooling_output_shape for one spatial dim.
SymExpr pool_out(MetaContext& ctx, SymExpr in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  if (stride == 0) ctx.fail("stride should not be zero");
  if (pad < 0) ctx.fail("pad must be non-negative, but got pad: " + std::to_string(pad));
  if (pad > ((k - 1) * dil + 1) / 2)
    ctx.fail("pad should be at most half of effective kernel size, but got pad=" + std::to_string(pad) +
             ", kernel_size=" + std::to_string(k) + " and dilation=" + std::to_string(dil));
  SymExpr out = simp(ctx, sym::floordiv(in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0), I(stride)) + 1);
  // The last window must start inside the input or the left padding.
  if (ceil && holds(ctx, sym::le(in + pad, (out - 1) * stride))) out = simp(ctx, out - 1);
  return out;
}

// Unpacks an int[2] argument of a 2-d pool: one value repeats; `allow_empty` for stride (which
// then defaults to the kernel size).
std::vector<int64_t> pool_param(const BoundArgs& a, MetaContext& ctx, const char* op, const char* name, size_t n,
                                bool allow_empty) {
  std::vector<int64_t> v = const_list(a, ctx, name);
  if (v.empty() && allow_empty) return v;
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  if (v.size() != n) {
    const char* count = n == 2 ? "two" : "three";
    ctx.fail(std::string(op) + ": " + name + " must either be " + (allow_empty ? "omitted, " : "") +
             "a single int, or a tuple of " + count + " ints");
  }
  return v;
}

struct Window {
  std::vector<int64_t> k, s, p, d;  // kernel, stride, padding, dilation per spatial dim
  bool ceil = false;
};

Window window(const BoundArgs& a, MetaContext& ctx, const char* op, size_t n, bool has_dilation) {
  Window w;
  w.k = pool_param(a, ctx, op, "kernel_size", n, false);
  w.s = pool_param(a, ctx, op, "stride", n, true);
  if (w.s.empty()) w.s = w.k;
  w.p = pool_param(a, ctx, op, "padding", n, false);
  w.d = has_dilation ? pool_param(a, ctx, op, "dilation", n, false) : std::vector<int64_t>(n, 1);
  w.ceil = flag(a, "ceil_mode");
  return w;
}

void positive_params(MetaContext& ctx, const Window& w) {
  static const char* const names2[] = {"H", "W"};
  static const char* const names3[] = {"T", "H", "W"};
  const char* const* names = w.k.size() == 2 ? names2 : names3;
  auto list = [&](const char* prefix, const std::vector<int64_t>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += std::string(i ? ", " : "") + prefix + names[i] + ": " + std::to_string(v[i]);
    return out;
  };
  for (int64_t v : w.k)
    if (v <= 0) ctx.fail("kernel size should be greater than zero, but got " + list("k", w.k));
  for (int64_t v : w.s)
    if (v <= 0) ctx.fail("stride should be greater than zero, but got " + list("d", w.s));
  for (int64_t v : w.d)
    if (v <= 0) ctx.fail("dilation should be greater than zero, but got " + list("dilation", w.d));
}

void no_unsigned(MetaContext& ctx, const TensorMeta& x, const char* op) {
  if (x.dtype == DType::UInt8 || x.dtype == DType::Bool)
    ctx.fail(std::string("\"") + op + "\" not implemented for '" + dtype_short_name(x.dtype) + "'");
}

// The output of a 2-d pool over x ([C, H, W] or [N, C, H, W]), after pool2d_shape_check.
std::vector<SymExpr> pool2d_shape(MetaContext& ctx, const TensorMeta& x, const Window& w, MemoryFormat f) {
  int64_t r = x.rank();
  if (f == MemoryFormat::ChannelsLast) {
    if (r != 4) ctx.fail("non-empty 4D (batch mode) tensor expected for input with channels_last layout");
  } else if (r != 3 && r != 4) {
    ctx.fail("non-empty 3D or 4D (batch mode) tensor expected for input, got " + shape_str(x.sizes));
  }
  positive_params(ctx, w);
  SymExpr c = x.sizes[static_cast<size_t>(r - 3)], ih = x.sizes[static_cast<size_t>(r - 2)],
          iw = x.sizes[static_cast<size_t>(r - 1)];
  SymExpr oh = pool_out(ctx, ih, w.k[0], w.p[0], w.s[0], w.d[0], w.ceil);
  SymExpr ow = pool_out(ctx, iw, w.k[1], w.p[1], w.s[1], w.d[1], w.ceil);
  bool valid = !is_zero(ctx, x.sizes[1]) && !is_zero(ctx, x.sizes[2]);
  if (f == MemoryFormat::ChannelsLast) {
    if (!(valid && !is_zero(ctx, x.sizes[3])))
      ctx.fail("Expected 4D (batch mode) tensor expected for input with channels_last layout with optional 0 dim "
               "batch size for input, but got: " + shape_str(x.sizes));
  } else if (!((r == 3 && !is_zero(ctx, x.sizes[0]) && valid) || (r == 4 && valid && !is_zero(ctx, x.sizes[3])))) {
    ctx.fail("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: " +
             shape_str(x.sizes));
  }
  if (w.k[1] / 2 < w.p[1] || w.k[0] / 2 < w.p[0])
    ctx.fail("pad should be smaller than or equal to half of kernel size, but got padW = " + std::to_string(w.p[1]) +
             ", padH = " + std::to_string(w.p[0]) + ", kW = " + std::to_string(w.k[1]) + ", kH = " + std::to_string(w.k[0]));
  check(ctx, sym::logical_and(sym::le(I(1), oh), sym::le(I(1), ow)), [&] {
    return "Given input size: (" + c.str() + "x" + ih.str() + "x" + iw.str() + "). Calculated output size: (" + c.str() +
           "x" + oh.str() + "x" + ow.str() + "). Output size is too small";
  });
  std::vector<SymExpr> out(x.sizes.begin(), x.sizes.end() - 2);
  out.push_back(oh);
  out.push_back(ow);
  return out;
}

TensorMeta avg_pool2d_meta(MetaContext& ctx, const TensorMeta& x, const Window& w, const BoundArgs& a) {
  no_unsigned(ctx, x, "avg_pool2d");
  if (!a.is_none("divisor_override") && const_int(ctx, a.scalar("divisor_override"), "divisor_override") == 0)
    ctx.fail("divisor must be not zero");
  MemoryFormat f = suggest_memory_format(ctx, x);
  return fresh_format(ctx, x.dtype, x.device, pool2d_shape(ctx, x, w, f), f);
}

Results avg_pool2d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  return {ResultSpec::tensor(avg_pool2d_meta(ctx, x, window(a, ctx, "avg_pool2d", 2, false), a))};
}

// x.unsqueeze(-2), as a meta (the 1-d pools run the 2-d ones on it).
TensorMeta unsqueeze_h(const TensorMeta& x) {
  TensorMeta m = x;
  size_t d = x.sizes.size() - 1;
  m.sizes.insert(m.sizes.begin() + static_cast<std::ptrdiff_t>(d), I(1));
  m.strides.insert(m.strides.begin() + static_cast<std::ptrdiff_t>(d), x.sizes[d] * x.strides[d]);
  return m;
}

TensorMeta squeeze_h(MetaContext& ctx, TensorMeta m) {
  size_t d = m.sizes.size() - 2;
  m.sizes.erase(m.sizes.begin() + static_cast<std::ptrdiff_t>(d));
  m.strides.erase(m.strides.begin() + static_cast<std::ptrdiff_t>(d));
  for (SymExpr& s : m.strides) s = simp(ctx, s);
  return m;
}

void check_1d_input(MetaContext& ctx, const TensorMeta& x, const char* op) {
  if (x.rank() < 2 || x.rank() > 3)
    ctx.fail("Expected 2 to 3 dimensions, but got " + std::to_string(x.rank()) +
             "-dimensional tensor for argument #1 'self' (while checking arguments for " + op + ")");
}

int64_t one_int(const BoundArgs& a, MetaContext& ctx, const char* op, const char* name, bool allow_empty) {
  std::vector<int64_t> v = const_list(a, ctx, name);
  if (v.empty() && allow_empty) return 0;
  if (v.size() != 1)
    ctx.fail(std::string(op) + "() argument '" + name + "' should contain one int (got " + std::to_string(v.size()) + ")");
  return v[0];
}

Results avg_pool1d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  check_1d_input(ctx, x, "avg_pool1d");
  int64_t k = one_int(a, ctx, "avg_pool1d", "kernel_size", false);
  int64_t s = one_int(a, ctx, "avg_pool1d", "stride", true);
  int64_t p = one_int(a, ctx, "avg_pool1d", "padding", false);
  if (a.int_list("stride").empty()) s = k;
  Window w{{1, k}, {1, s}, {0, p}, {1, 1}, flag(a, "ceil_mode")};
  TensorMeta x2 = unsqueeze_h(x);
  no_unsigned(ctx, x, "avg_pool2d");
  MemoryFormat f = suggest_memory_format(ctx, x2);
  TensorMeta out = fresh_format(ctx, x.dtype, x.device, pool2d_shape(ctx, x2, w, f), f);
  return {ResultSpec::tensor(squeeze_h(ctx, out))};
}

Results avg_pool2d_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& go = tensor_arg(a, ctx, "grad_output");
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  Window w = window(a, ctx, "avg_pool2d", 2, false);
  if (!a.is_none("divisor_override") && const_int(ctx, a.scalar("divisor_override"), "divisor_override") == 0)
    ctx.fail("divisor must be not zero");
  MemoryFormat f = suggest_memory_format(ctx, x);
  std::vector<SymExpr> expected = pool2d_shape(ctx, x, w, f);
  if (go.dtype != x.dtype)
    ctx.fail(std::string("expected dtype ") + dtype_short_name(x.dtype) + " for `gradOutput` but got dtype " +
             dtype_short_name(go.dtype));
  for (size_t i = expected.size() - 3; i < expected.size(); ++i)
    if (go.rank() != x.rank() || !is_eq(ctx, go.sizes[i], expected[i]))
      ctx.fail("Expected a tensor of dimension " + std::to_string(x.rank()) + " and tensor.size[" + std::to_string(i) +
               "] == " + expected[i].str() + " but got: dimension " + std::to_string(go.rank()) + " and tensor.size " +
               shape_str(go.sizes));
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, x.sizes, f))};
}

Results max_pool2d_with_indices(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  Window w = window(a, ctx, "max_pool2d", 2, true);
  if (x.dtype == DType::Bool) ctx.fail("\"max_pool2d\" not implemented for 'b8'");
  MemoryFormat f = suggest_memory_format(ctx, x);
  std::vector<SymExpr> out = pool2d_shape(ctx, x, w, f);
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, out, f)),
          ResultSpec::tensor(fresh_format(ctx, DType::Int64, x.device, out, f))};
}

Results max_pool2d_with_indices_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& go = tensor_arg(a, ctx, "grad_output");
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  const TensorMeta& idx = tensor_arg(a, ctx, "indices");
  Window w = window(a, ctx, "max_pool2d", 2, true);
  MemoryFormat f = suggest_memory_format(ctx, x);
  std::vector<SymExpr> expected = pool2d_shape(ctx, x, w, f);
  if (go.dtype != x.dtype)
    ctx.fail(std::string("Expected dtype ") + dtype_short_name(x.dtype) + " for `gradOutput` but got dtype " +
             dtype_short_name(go.dtype));
  if (idx.dtype != DType::Int64)
    ctx.fail(std::string("expected indices to have dtype i64, but got ") + dtype_short_name(idx.dtype));
  for (const TensorMeta* t : {&go, &idx})
    for (size_t i = expected.size() - 3; i < expected.size(); ++i)
      if (t->rank() != x.rank() || !is_eq(ctx, t->sizes[i], expected[i]))
        ctx.fail("Expected a tensor of dimension " + std::to_string(x.rank()) + " and tensor.size[" +
                 std::to_string(i) + "] == " + expected[i].str() + " but got: dimension " + std::to_string(t->rank()) +
                 " and tensor.size " + shape_str(t->sizes) + (t == &idx ? " (indices)" : " (grad_output)"));
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, x.sizes, f))};
}

// pool3d_shape_check and the output shape of a 3-d pool over [C, T, H, W] or [N, C, T, H, W].
std::vector<SymExpr> pool3d_shape(MetaContext& ctx, const TensorMeta& x, const Window& w, const char* fn,
                                  bool check_input_size) {
  int64_t r = x.rank();
  if (r != 4 && r != 5) ctx.fail("non-empty 4D or 5D (batch mode) tensor expected for input");
  SymExpr c = x.sizes[static_cast<size_t>(r - 4)];
  std::vector<SymExpr> in(x.sizes.end() - 3, x.sizes.end()), out;
  positive_params(ctx, w);
  for (size_t i = 0; i < 3; ++i) out.push_back(pool_out(ctx, in[i], w.k[i], w.p[i], w.s[i], w.d[i], w.ceil));
  for (int64_t i = 0; i < r; ++i) {
    if (r == 5 && i == 0) continue;  // the batch may be empty
    if (is_zero(ctx, x.sizes[static_cast<size_t>(i)]))
      ctx.fail(std::string(fn) + ": Expected input's non-batch dimensions to have positive length, but input has a "
               "shape of " + shape_str(x.sizes) + " and non-batch dimension " + std::to_string(i) + " has length zero!");
  }
  if (check_input_size &&
      !(is_le(ctx, I(w.k[0]), in[0]) && is_le(ctx, I(w.k[1]), in[1]) && is_le(ctx, I(w.k[2]), in[2])))
    ctx.fail("input image (T: " + in[0].str() + " H: " + in[1].str() + " W: " + in[2].str() +
             ") smaller than kernel size (kT: " + std::to_string(w.k[0]) + " kH: " + std::to_string(w.k[1]) +
             " kW: " + std::to_string(w.k[2]) + ")");
  if (2 * w.p[0] > w.k[0] || 2 * w.p[1] > w.k[1] || 2 * w.p[2] > w.k[2])
    ctx.fail("pad should be smaller than or equal to half of kernel size, but got kT: " + std::to_string(w.k[0]) +
             " kW: " + std::to_string(w.k[2]) + " kH: " + std::to_string(w.k[1]) + " padT: " + std::to_string(w.p[0]) +
             " padW: " + std::to_string(w.p[2]) + " padH: " + std::to_string(w.p[1]));
  check(ctx, sym::logical_and(sym::logical_and(sym::le(I(1), out[0]), sym::le(I(1), out[1])), sym::le(I(1), out[2])), [&] {
    return "Given input size: (" + c.str() + "x" + join(in, "x") + "). Calculated output size: (" + c.str() + "x" +
           join(out, "x") + "). Output size is too small";
  });
  std::vector<SymExpr> shape(x.sizes.begin(), x.sizes.end() - 3);
  shape.insert(shape.end(), out.begin(), out.end());
  return shape;
}

Results avg_pool3d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  Window w = window(a, ctx, "avg_pool3d", 3, false);
  no_unsigned(ctx, x, "avg_pool3d");
  if (!a.is_none("divisor_override") && const_int(ctx, a.scalar("divisor_override"), "divisor_override") == 0)
    ctx.fail("divisor must be not zero");
  std::vector<SymExpr> out = pool3d_shape(ctx, x, w, "avg_pool3d()", true);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

Results max_pool3d_with_indices(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  Window w = window(a, ctx, "max_pool3d", 3, true);
  if (x.dtype == DType::Bool) ctx.fail("\"max_pool3d\" not implemented for 'b8'");
  std::vector<SymExpr> out = pool3d_shape(ctx, x, w, "max_pool3d_with_indices()", false);
  // channels_last_3d applies to 5-d inputs only.
  MemoryFormat f = x.rank() == 5 && suggest_memory_format(ctx, x) == MemoryFormat::ChannelsLast3d
                       ? MemoryFormat::ChannelsLast3d
                       : MemoryFormat::Contiguous;
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, out, f)),
          ResultSpec::tensor(fresh_format(ctx, DType::Int64, x.device, out, f))};
}

// Adaptive average pools: the last n dims become output_size.
std::vector<SymExpr> adaptive_shape(const BoundArgs& a, MetaContext& ctx, const TensorMeta& x, size_t n, const char* op) {
  int64_t r = x.rank();
  if (r != static_cast<int64_t>(n) + 1 && r != static_cast<int64_t>(n) + 2)
    ctx.fail(std::string(op) + "(): Expected " + std::to_string(n + 1) + "D or " + std::to_string(n + 2) +
             "D tensor, but got " + shape_str(x.sizes));
  for (int64_t i = 1; i < r; ++i)
    if (!holds(ctx, sym::lt(I(0), x.sizes[static_cast<size_t>(i)])))
      ctx.fail(std::string(op) + "(): Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes " + shape_str(x.sizes) + " with dimension " + std::to_string(i) + " being empty");
  std::vector<SymExpr> os = a.int_list("output_size");
  if (os.size() != n)
    ctx.fail(std::string(op) + "(): internal error: output_size.size() must be " + std::to_string(n));
  for (SymExpr o : os)
    if (o.as_int() && *o.as_int() < 0)
      ctx.fail(std::string(op) + "(): elements of output_size must be greater than or equal to 0 but received " +
               shape_str(os));
  std::vector<SymExpr> out(x.sizes.begin(), x.sizes.end() - static_cast<std::ptrdiff_t>(n));
  out.insert(out.end(), os.begin(), os.end());
  return out;
}

Results adaptive_avg_pool2d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::vector<SymExpr> out = adaptive_shape(a, ctx, x, 2, "adaptive_avg_pool2d");
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, out, suggest_memory_format(ctx, x)))};
}

Results adaptive_avg_pool3d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, adaptive_shape(a, ctx, x, 3, "adaptive_avg_pool3d")))};
}

// adaptive_avg_pool1d is adaptive_avg_pool2d over x.unsqueeze(-2) with output (1, L), squeezed.
Results adaptive_avg_pool1d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  check_1d_input(ctx, x, "adaptive_avg_pool1d");
  std::vector<SymExpr> os = a.int_list("output_size");
  if (os.size() != 1)
    ctx.fail("adaptive_avg_pool1d() argument 'output_size' should contain one int (got " + std::to_string(os.size()) + ")");
  TensorMeta x2 = unsqueeze_h(x);
  for (int64_t i = 1; i < x2.rank(); ++i)
    if (!holds(ctx, sym::lt(I(0), x2.sizes[static_cast<size_t>(i)])))
      ctx.fail("adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes " + shape_str(x2.sizes) + " with dimension " + std::to_string(i) + " being empty");
  std::vector<SymExpr> out(x2.sizes.begin(), x2.sizes.end() - 1);
  out.push_back(os[0]);
  TensorMeta r = fresh_format(ctx, x.dtype, x.device, out, suggest_memory_format(ctx, x2));
  return {ResultSpec::tensor(squeeze_h(ctx, r))};
}

Results adaptive_avg_pool2d_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& go = tensor_arg(a, ctx, "grad_output");
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  for (int64_t i = 1; i < go.rank(); ++i)
    if (!holds(ctx, sym::lt(I(0), go.sizes[static_cast<size_t>(i)])))
      ctx.fail("adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size for non-batch dimensions, " +
               shape_str(go.sizes) + " with dimension " + std::to_string(i) + " being empty");
  if (go.rank() != 3 && go.rank() != 4)
    ctx.fail("adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got " + shape_str(x.sizes));
  if (go.rank() != x.rank())
    ctx.fail("adaptive_avg_pool2d_backward(): expected grad_output and self to have the same rank, got " +
             shape_str(go.sizes) + " and " + shape_str(x.sizes));
  if (go.dtype != x.dtype)
    ctx.fail(std::string("expected dtype ") + dtype_short_name(x.dtype) + " for `grad_output` but got dtype " +
             dtype_short_name(go.dtype));
  MemoryFormat f = suggest_memory_format(ctx, x) == MemoryFormat::ChannelsLast ? MemoryFormat::ChannelsLast
                                                                               : MemoryFormat::Contiguous;
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, x.sizes, f))};
}

}  // namespace

std::vector<MetaImpl> pool_meta_impls() {
  return {
      {"aten.avg_pool1d.default", avg_pool1d},
      {"aten.avg_pool2d.default", avg_pool2d},
      {"aten.avg_pool3d.default", avg_pool3d},
      {"aten.avg_pool2d_backward.default", avg_pool2d_backward},
      {"aten.max_pool2d_with_indices.default", max_pool2d_with_indices},
      {"aten.max_pool3d_with_indices.default", max_pool3d_with_indices},
      {"aten.max_pool2d_with_indices_backward.default", max_pool2d_with_indices_backward},
      {"aten.adaptive_avg_pool1d.default", adaptive_avg_pool1d},
      {"aten._adaptive_avg_pool2d.default", adaptive_avg_pool2d},
      {"aten._adaptive_avg_pool3d.default", adaptive_avg_pool3d},
      {"aten._adaptive_avg_pool2d_backward.default", adaptive_avg_pool2d_backward},
  };
}

}  // namespace toroid::ops
