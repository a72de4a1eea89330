// Meta functions of convolution: convolution (1-d, 2-d, 3-d; transposed, groups, dilation,
// padding, output_padding), convolution_backward (output_mask), and col2im.
//
// Output memory format. PyTorch's meta kernel for convolution is overridden, under fake tensors
// (torch.compile) as in eager, by the layout of the backend that would run: toroid follows the
// backends (checked against torch 2.11 on CPU and CUDA), see conv_format below. In short: a
// 2-d/3-d convolution is channels-last when the input or the weight suggests channels-last,
// except float64 on CUDA (cuDNN's channels-last path excludes double) and 3-d on the CPU unless
// oneDNN runs it (float16/bfloat16, or float32 past oneDNN's size heuristic); 1-d is contiguous.
#include "meta_families.h"
#include "meta_helpers.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

// A per-dim parameter list: one value repeats, else exactly `n` values.
std::vector<int64_t> expand_param(const BoundArgs& a, MetaContext& ctx, const char* name, size_t n) {
  std::vector<int64_t> v = const_list(a, ctx, name);
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  if (v.size() != n)
    ctx.fail(std::string("expected ") + name + " to be a single integer value or a list of " + std::to_string(n) +
             " values to match the convolution dimensions, but got " + name + "=[" + join(v, ", ") + "]");
  return v;
}

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

ConvParams conv_params(const BoundArgs& a, MetaContext& ctx, size_t spatial) {
  ConvParams p;
  p.stride = expand_param(a, ctx, "stride", spatial);
  p.padding = expand_param(a, ctx, "padding", spatial);
  p.dilation = expand_param(a, ctx, "dilation", spatial);
  p.transposed = flag(a, "transposed");
  p.output_padding = p.transposed ? expand_param(a, ctx, "output_padding", spatial) : std::vector<int64_t>(spatial, 0);
  p.groups = const_int(ctx, a.scalar("groups"), "groups");
  for (int64_t s : p.stride)
    if (s <= 0) ctx.fail("non-positive stride is not supported");
  for (int64_t s : p.padding)
    if (s < 0) ctx.fail("negative padding is not supported");
  for (int64_t s : p.output_padding)
    if (s < 0) ctx.fail("negative output_padding is not supported");
  for (int64_t s : p.dilation)
    if (s <= 0) ctx.fail("dilation should be greater than zero");
  if (p.groups <= 0) ctx.fail("non-positive groups is not supported");
  for (size_t i = 0; i < spatial; ++i)
    if (p.transposed && p.output_padding[i] >= std::max(p.stride[i], p.dilation[i]))
      ctx.fail("output padding must be smaller than either stride or dilation, but got output_padding=[" +
               join(p.output_padding, ", ") + "], stride=[" + join(p.stride, ", ") + "], dilation=[" +
               join(p.dilation, ", ") + "]");
  return p;
}

// Would PyTorch run this CPU convolution with oneDNN (ConvParams::use_mkldnn)? float16 and
// bfloat16 always; float32 when the batch, kernel or size is past its heuristic (the
// single-thread clause is taken as false: PyTorch runs multi-threaded).
bool cpu_uses_onednn(MetaContext& ctx, const TensorMeta& x, const TensorMeta& w, const ConvParams& p) {
  if (p.transposed)
    for (size_t i = 0; i < p.stride.size(); ++i)
      if (p.output_padding[i] >= p.stride[i]) return false;
  if (x.dtype == DType::Float16 || x.dtype == DType::BFloat16) return true;
  if (x.dtype != DType::Float32) return false;
  SymExpr kw = w.sizes[w.sizes.size() - 1], kh = w.sizes[w.sizes.size() - 2];
  return p.groups > 1 || (holds(ctx, sym::lt(I(3), kw)) && holds(ctx, sym::lt(I(3), kh))) ||
         holds(ctx, sym::lt(I(1), x.sizes[0])) ||
         holds(ctx, sym::lt(I(20480), x.sizes[0] * x.sizes[1] * x.sizes[2] * x.sizes[3]));
}

// The memory format of a convolution's results (output; grad_input and grad_weight). With the
// input or the weight suggesting channels-last (ChannelsLast for 4-d, ChannelsLast3d for 5-d):
// CUDA (cuDNN) gives channels-last except for float64; the CPU gives it for 4-d (oneDNN and the
// slow kernels alike) and for 5-d only through oneDNN. Everything else is contiguous.
MemoryFormat conv_format(MetaContext& ctx, const TensorMeta& x, const TensorMeta& w, const ConvParams& p) {
  MemoryFormat want = x.rank() == 4 ? MemoryFormat::ChannelsLast
                      : x.rank() == 5 ? MemoryFormat::ChannelsLast3d
                                      : MemoryFormat::Contiguous;
  if (want == MemoryFormat::Contiguous) return want;
  if (suggest_memory_format(ctx, x) != want && suggest_memory_format(ctx, w) != want) return MemoryFormat::Contiguous;
  if (!x.device.is_cpu()) return x.dtype == DType::Float64 ? MemoryFormat::Contiguous : want;
  if (x.rank() == 4 || cpu_uses_onednn(ctx, x, w, p)) return want;
  return MemoryFormat::Contiguous;
}

// Checks the operands (as ATen's check_shape_forward) and returns the output shape.
std::vector<SymExpr> conv_output_shape(MetaContext& ctx, const TensorMeta& x, const TensorMeta& w,
                                       const TensorMeta* bias, const ConvParams& p) {
  if (w.rank() < 3) ctx.fail("weight should have at least three dimensions");
  if (x.rank() != w.rank())
    ctx.fail("Expected " + std::to_string(w.rank()) + "-dimensional input for " + std::to_string(w.rank()) +
             "-dimensional weight " + shape_str(w.sizes) + ", but got " + std::to_string(x.rank()) +
             "-dimensional input of size " + shape_str(x.sizes) + " instead");
  if (x.dtype != w.dtype)
    ctx.fail(std::string("Input type (") + dtype_short_name(x.dtype) + ") and weight type (" + dtype_short_name(w.dtype) +
             ") should be the same");
  if (bias && bias->dtype != x.dtype)
    ctx.fail(std::string("Input type (") + dtype_short_name(x.dtype) + ") and bias type (" +
             dtype_short_name(bias->dtype) + ") should be the same");
  SymExpr g = I(p.groups);
  SymExpr in_ch = x.sizes[1];
  SymExpr out_ch;
  if (!p.transposed) {
    check(ctx, sym::le(g, w.sizes[0]), [&] {
      return "Given groups=" + std::to_string(p.groups) + ", expected weight to be at least " + std::to_string(p.groups) +
             " at dimension 0, but got weight of size " + shape_str(w.sizes) + " instead";
    });
    check(ctx, sym::eq(sym::mod(w.sizes[0], g), I(0)), [&] {
      return "Given groups=" + std::to_string(p.groups) + ", expected weight to be divisible by " +
             std::to_string(p.groups) + " at dimension 0, but got weight of size " + shape_str(w.sizes) + " instead";
    });
    check(ctx, sym::eq(in_ch, w.sizes[1] * g), [&] {
      return "Given groups=" + std::to_string(p.groups) + ", weight of size " + shape_str(w.sizes) + ", expected input" +
             shape_str(x.sizes) + " to have " + simp(ctx, w.sizes[1] * g).str() + " channels, but got " + in_ch.str() +
             " channels instead";
    });
    out_ch = w.sizes[0];
  } else {
    check(ctx, sym::eq(in_ch, w.sizes[0]), [&] {
      return "Given transposed=1, weight of size " + shape_str(w.sizes) + ", expected input" + shape_str(x.sizes) +
             " to have " + w.sizes[0].str() + " channels, but got " + in_ch.str() + " channels instead";
    });
    check(ctx, sym::eq(sym::mod(w.sizes[0], g), I(0)), [&] {
      return "Given groups=" + std::to_string(p.groups) + ", expected weight to be divisible by " +
             std::to_string(p.groups) + " at dimension 0, but got weight of size " + shape_str(w.sizes) + " instead";
    });
    out_ch = simp(ctx, w.sizes[1] * g);
  }
  if (bias) {
    if (bias->rank() != 1 || !is_eq(ctx, bias->sizes[0], out_ch))
      ctx.fail(std::string("Given ") + (p.transposed ? "transposed=1, " : "") + "weight of size " + shape_str(w.sizes) +
               ", expected bias to be 1-dimensional with " + out_ch.str() + " elements, but got bias of size " +
               shape_str(bias->sizes) + " instead");
  }
  size_t spatial = static_cast<size_t>(x.rank() - 2);
  std::vector<SymExpr> out{x.sizes[0], out_ch};
  if (x.sizes[1].as_int() == std::optional<int64_t>(0)) out[1] = I(0);
  for (size_t i = 0; i < spatial; ++i) {
    SymExpr in = x.sizes[2 + i], k = w.sizes[2 + i];
    SymExpr eff_k = simp(ctx, (k - 1) * p.dilation[i] + 1);
    if (!p.transposed) {
      SymExpr padded = simp(ctx, in + 2 * p.padding[i]);
      check(ctx, sym::le(eff_k, padded), [&] {
        std::vector<SymExpr> pin, ks;
        for (size_t j = 0; j < spatial; ++j) {
          pin.push_back(simp(ctx, x.sizes[2 + j] + 2 * p.padding[j]));
          ks.push_back(simp(ctx, (w.sizes[2 + j] - 1) * p.dilation[j] + 1));
        }
        return "Calculated padded input size per channel: (" + join(pin, " x ") + "). Kernel size: (" + join(ks, " x ") +
               "). Kernel size can't be greater than actual input size";
      });
      out.push_back(simp(ctx, sym::floordiv(padded - eff_k, I(p.stride[i])) + 1));
    } else {
      SymExpr o = simp(ctx, (in - 1) * p.stride[i] - 2 * p.padding[i] + eff_k + p.output_padding[i]);
      check(ctx, sym::le(I(0), o), [&] {
        return "Given input size per channel " + shape_str(std::vector<SymExpr>(x.sizes.begin() + 2, x.sizes.end())) +
               ", the calculated output size per channel is negative (" + o.str() + " at dim " +
               std::to_string(2 + i) + ")";
      });
      out.push_back(o);
    }
  }
  return out;
}

Results convolution(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "input");
  const TensorMeta& w = tensor_arg(a, ctx, "weight");
  Value* b = a.tensor("bias");
  if (x.rank() < 3) ctx.fail("expected a batched input of at least 3 dimensions, got " + shape_str(x.sizes));
  ConvParams p = conv_params(a, ctx, static_cast<size_t>(x.rank() - 2));
  std::vector<SymExpr> out = conv_output_shape(ctx, x, w, b ? &b->meta() : nullptr, p);
  Device dev = common_device(ctx, std::vector<Operand>{Operand::of(x), Operand::of(w)});
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, dev, out, conv_format(ctx, x, w, p)))};
}

Results convolution_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& go = tensor_arg(a, ctx, "grad_output");
  const TensorMeta& x = tensor_arg(a, ctx, "input");
  const TensorMeta& w = tensor_arg(a, ctx, "weight");
  if (x.rank() < 3) ctx.fail("expected a batched input of at least 3 dimensions, got " + shape_str(x.sizes));
  ConvParams p = conv_params(a, ctx, static_cast<size_t>(x.rank() - 2));
  std::vector<SymExpr> expected = conv_output_shape(ctx, x, w, nullptr, p);
  bool same = go.rank() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; same && i < expected.size(); ++i) same = is_eq(ctx, go.sizes[i], expected[i]);
  if (!same)
    ctx.fail("expected grad_output of size " + shape_str(expected) + " (the convolution's output), but got " +
             shape_str(go.sizes));
  if (go.dtype != x.dtype)
    ctx.fail(std::string("expected grad_output to have dtype ") + dtype_short_name(x.dtype) + ", but got " +
             dtype_short_name(go.dtype));
  std::vector<bool> mask = bool_list(a, ctx, "output_mask");
  if (mask.size() != 3) ctx.fail("output_mask must have 3 entries");
  MemoryFormat f = conv_format(ctx, x, w, p);
  Results r;
  r.push_back(mask[0] ? ResultSpec::tensor(fresh_format(ctx, go.dtype, go.device, x.sizes, f))
                      : undefined_result(ctx, go.dtype, go.device));
  r.push_back(mask[1] ? ResultSpec::tensor(fresh_format(ctx, go.dtype, go.device, w.sizes, f))
                      : undefined_result(ctx, go.dtype, go.device));
  if (mask[2]) {
    if (a.is_none("bias_sizes")) ctx.fail("bias_sizes must be given when output_mask[2] is true");
    r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, go.dtype, go.device, a.int_list("bias_sizes"))));
  } else {
    r.push_back(undefined_result(ctx, go.dtype, go.device));
  }
  return r;
}

// col2im: a [N, C*kh*kw, L] (or unbatched [C*kh*kw, L]) column matrix folded back into
// [N, C, oh, ow].
Results col2im(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::vector<SymExpr> osize = a.int_list("output_size");
  std::vector<int64_t> k = const_list(a, ctx, "kernel_size"), d = const_list(a, ctx, "dilation"),
                       p = const_list(a, ctx, "padding"), s = const_list(a, ctx, "stride");
  if (osize.size() != 2) ctx.fail("only 2D output_size supported");
  if (k.size() != 2) ctx.fail("only 2D kernel supported");
  if (d.size() != 2) ctx.fail("only 2D dilation supported");
  if (p.size() != 2) ctx.fail("only 2D padding supported");
  if (s.size() != 2) ctx.fail("only 2D stride supported");
  if (k[0] <= 0 || k[1] <= 0)
    ctx.fail("kernel size should be greater than zero, but got kernel_height: " + std::to_string(k[0]) +
             " kernel_width: " + std::to_string(k[1]));
  if (s[0] <= 0 || s[1] <= 0)
    ctx.fail("stride should be greater than zero, but got stride_height: " + std::to_string(s[0]) +
             " stride_width: " + std::to_string(s[1]));
  if (d[0] <= 0 || d[1] <= 0)
    ctx.fail("dilation should be greater than zero, but got dilation_height: " + std::to_string(d[0]) +
             " dilation_width: " + std::to_string(d[1]));
  if (p[0] < 0 || p[1] < 0)
    ctx.fail("padding should be non-negative, but got pad_height: " + std::to_string(p[0]) +
             " pad_width: " + std::to_string(p[1]));
  int64_t r = x.rank();
  bool ok = r == 2 || r == 3;
  if (ok)
    for (int64_t i = r - 2; i < r; ++i) ok = ok && !holds(ctx, sym::eq(x.sizes[static_cast<size_t>(i)], I(0)));
  if (!ok)
    ctx.fail("Expected 2D or 3D (batch mode) tensor for input with possible 0 batch size and non-zero dimensions, but got: " +
             shape_str(x.sizes));
  SymExpr rows = x.sizes[static_cast<size_t>(r - 2)], cols = x.sizes[static_cast<size_t>(r - 1)];
  int64_t kk = k[0] * k[1];
  check(ctx, sym::eq(sym::mod(rows, I(kk)), I(0)), [&] {
    return "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=" +
           rows.str() + " and kernel_size=(" + join(k, ", ") + ")";
  });
  std::vector<SymExpr> blocks;
  for (size_t i = 0; i < 2; ++i)
    blocks.push_back(simp(ctx, sym::floordiv(osize[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1, I(s[i])) + 1));
  SymExpr L = simp(ctx, blocks[0] * blocks[1]);
  auto params = [&] {
    return "Given output_size=(" + join(osize, ", ") + "), kernel_size=(" + join(k, ", ") + "), dilation=(" +
           join(d, ", ") + "), padding=(" + join(p, ", ") + "), stride=(" + join(s, ", ") + ")";
  };
  check(ctx, sym::logical_and(sym::le(I(1), blocks[0]), sym::le(I(1), blocks[1])), [&] {
    return params() + ", calculated shape of the array of sliding blocks as (" + join(blocks, ", ") +
           "), but its components must be at least one.";
  });
  check(ctx, sym::eq(cols, L), [&] {
    return params() + ", expected size of input's dimension 2 to match the calculated number of sliding blocks " +
           join(blocks, " * ") + " = " + L.str() + ", but got input.size(2)=" + cols.str() + ".";
  });
  std::vector<SymExpr> out;
  if (r == 3) out.push_back(x.sizes[0]);
  out.push_back(simp(ctx, sym::floordiv(rows, I(kk))));
  out.push_back(osize[0]);
  out.push_back(osize[1]);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

}  // namespace

std::vector<MetaImpl> conv_meta_impls() {
  return {
      {"aten.convolution.default", convolution},
      {"aten.convolution_backward.default", convolution_backward},
      {"aten.col2im.default", col2im},
  };
}

}  // namespace toroid::ops
