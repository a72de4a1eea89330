// Reference kernels: convolution.default (N-d: 1-d, 2-d, 3-d; stride, padding, dilation,
// groups, bias, transposed with output_padding) and convolution_backward (output_mask).
//
// Both are written over one enumeration of the forward's products: every (input element,
// weight element, output element) triple with out += in * w. The forward sums them; the
// backward routes grad_output back along the same triples, so the two agree by construction.
// Floating dtypes only (PyTorch's CPU convolutions); values accumulate in double and round once.
#include <cmath>
#include <optional>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

struct ConvGeom {
  bool transposed = false;
  int64_t N = 0, Cin = 0, Cout = 0, G = 1, S = 0;
  std::vector<int64_t> in, out, k, stride, pad, dil, opad;
  std::vector<int64_t> in_sizes, w_sizes, out_sizes;
};

std::vector<int64_t> expand_param(const std::string& op, const std::vector<int64_t>& v, int64_t S, const char* name) {
  if (static_cast<int64_t>(v.size()) == S) return v;
  if (v.size() == 1) return std::vector<int64_t>(static_cast<size_t>(S), v[0]);
  kernel_error(op, std::string("expected ") + name + " to be a single integer value or a list of " + std::to_string(S) +
                       " values to match the convolution dimensions, but got " + name + "=" + shape_str(v));
}

std::string join_x(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " x " : "") + std::to_string(v[i]);
  return s;
}

ConvGeom conv_geom(const std::string& op, const std::vector<int64_t>& in_sizes, const std::vector<int64_t>& w_sizes,
                   const RtArgs& a) {
  ConvGeom g;
  g.transposed = a.to_bool("transposed");
  g.G = a.to_int("groups");
  int64_t wd = static_cast<int64_t>(w_sizes.size());
  if (wd < 3) kernel_error(op, "weight should have at least three dimensions, got " + shape_str(w_sizes));
  if (static_cast<int64_t>(in_sizes.size()) != wd)
    kernel_error(op, "Expected " + std::to_string(wd) + "-dimensional input for " + std::to_string(wd) + "-dimensional weight " +
                         shape_str(w_sizes) + ", but got " + std::to_string(in_sizes.size()) + "-dimensional input of size " +
                         shape_str(in_sizes) + " instead");
  g.S = wd - 2;
  g.stride = expand_param(op, a.int_list("stride"), g.S, "stride");
  g.pad = expand_param(op, a.int_list("padding"), g.S, "padding");
  g.dil = expand_param(op, a.int_list("dilation"), g.S, "dilation");
  g.opad = g.transposed ? expand_param(op, a.int_list("output_padding"), g.S, "output_padding") : std::vector<int64_t>(static_cast<size_t>(g.S), 0);
  for (int64_t d = 0; d < g.S; ++d) {
    size_t u = static_cast<size_t>(d);
    if (g.stride[u] <= 0) kernel_error(op, "non-positive stride is not supported");
    if (g.pad[u] < 0) kernel_error(op, "negative padding is not supported");
    if (g.dil[u] <= 0) kernel_error(op, "dilation should be greater than zero");
    if (g.opad[u] < 0) kernel_error(op, "negative output_padding is not supported");
    if (g.transposed && g.opad[u] >= g.stride[u] && g.opad[u] >= g.dil[u])
      kernel_error(op, "output padding must be smaller than either stride or dilation, but got output_padding=" + shape_str(g.opad) +
                           ", stride=" + shape_str(g.stride) + ", dilation=" + shape_str(g.dil));
  }
  if (g.G <= 0) kernel_error(op, "non-positive groups is not supported");
  require_int32_params(op, g.stride, "stride");
  require_int32_params(op, g.pad, "padding");
  require_int32_params(op, g.dil, "dilation");
  require_int32_params(op, g.opad, "output_padding");
  g.N = in_sizes[0];
  g.Cin = in_sizes[1];
  g.in.assign(in_sizes.begin() + 2, in_sizes.end());
  g.k.assign(w_sizes.begin() + 2, w_sizes.end());
  if (!g.transposed) {
    g.Cout = w_sizes[0];
    if (g.Cout % g.G != 0)
      kernel_error(op, "Given groups=" + std::to_string(g.G) + ", expected weight to be divisible by " + std::to_string(g.G) +
                           " at dimension 0, but got weight of size " + shape_str(w_sizes) + " instead");
    if (g.Cin != w_sizes[1] * g.G)
      kernel_error(op, "Given groups=" + std::to_string(g.G) + ", weight of size " + shape_str(w_sizes) + ", expected input" +
                           shape_str(in_sizes) + " to have " + std::to_string(w_sizes[1] * g.G) + " channels, but got " +
                           std::to_string(g.Cin) + " channels instead");
    std::vector<int64_t> padded, eff;
    bool bad = false;
    for (int64_t d = 0; d < g.S; ++d) {
      size_t u = static_cast<size_t>(d);
      padded.push_back(g.in[u] + 2 * g.pad[u]);
      eff.push_back(checked_add(op, checked_mul(op, g.dil[u], g.k[u] - 1), 1));
      if (padded.back() < eff.back()) bad = true;
      g.out.push_back(bad ? 0 : (padded.back() - eff.back()) / g.stride[u] + 1);
    }
    if (bad)
      kernel_error(op, "Calculated padded input size per channel: (" + join_x(padded) + "). Kernel size: (" + join_x(eff) +
                           "). Kernel size can't be greater than actual input size");
  } else {
    if (g.Cin != w_sizes[0])
      kernel_error(op, "Given transposed=1, weight of size " + shape_str(w_sizes) + ", expected input" + shape_str(in_sizes) +
                           " to have " + std::to_string(w_sizes[0]) + " channels, but got " + std::to_string(g.Cin) + " channels instead");
    if (g.Cin % g.G != 0)
      kernel_error(op, "Given groups=" + std::to_string(g.G) + ", expected weight to be divisible by " + std::to_string(g.G) +
                           " at dimension 0, but got weight of size " + shape_str(w_sizes) + " instead");
    g.Cout = w_sizes[1] * g.G;
    for (int64_t d = 0; d < g.S; ++d) {
      size_t u = static_cast<size_t>(d);
      int64_t o = checked_add(op, checked_mul(op, g.in[u] - 1, g.stride[u]), -2 * g.pad[u] + g.dil[u] * (g.k[u] - 1) + g.opad[u] + 1);
      if (o < 0) kernel_error(op, "Given input size per channel: (" + join_x(g.in) + "), the calculated output size is negative");
      g.out.push_back(o);
    }
  }
  g.in_sizes = in_sizes;
  g.w_sizes = w_sizes;
  g.out_sizes = {g.N, g.Cout};
  g.out_sizes.insert(g.out_sizes.end(), g.out.begin(), g.out.end());
  return g;
}

// Row-major linear index of `idx` in a tensor of `sizes` (idx excludes the two leading dims,
// which are given as lead0/lead1).
int64_t linear3(int64_t lead0, int64_t lead1, const std::vector<int64_t>& sizes, const std::vector<int64_t>& sp) {
  int64_t l = lead0 * sizes[1] + lead1;
  for (size_t d = 0; d < sp.size(); ++d) l = l * sizes[d + 2] + sp[d];
  return l;
}

// fn(input linear index, weight linear index, output linear index) for every product.
template <class F>
void for_each_product(const ConvGeom& g, F&& fn) {
  size_t S = static_cast<size_t>(g.S);
  std::vector<int64_t> other(S);
  if (!g.transposed) {
    int64_t cinpg = g.Cin / g.G, coutpg = g.Cout / g.G;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t oc = 0; oc < g.Cout; ++oc) {
        int64_t grp = oc / coutpg;
        ref_for_each_index(g.out, [&](const std::vector<int64_t>& o) {
          int64_t ol = linear3(n, oc, g.out_sizes, o);
          for (int64_t icl = 0; icl < cinpg; ++icl)
            ref_for_each_index(g.k, [&](const std::vector<int64_t>& k) {
              for (size_t d = 0; d < S; ++d) {
                other[d] = o[d] * g.stride[d] - g.pad[d] + k[d] * g.dil[d];
                if (other[d] < 0 || other[d] >= g.in[d]) return;
              }
              fn(linear3(n, grp * cinpg + icl, g.in_sizes, other), linear3(oc, icl, g.w_sizes, k), ol);
            });
        });
      }
  } else {
    int64_t cinpg = g.Cin / g.G, coutpg = g.Cout / g.G;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t ic = 0; ic < g.Cin; ++ic) {
        int64_t grp = ic / cinpg;
        ref_for_each_index(g.in, [&](const std::vector<int64_t>& i) {
          int64_t il = linear3(n, ic, g.in_sizes, i);
          for (int64_t ocl = 0; ocl < coutpg; ++ocl)
            ref_for_each_index(g.k, [&](const std::vector<int64_t>& k) {
              for (size_t d = 0; d < S; ++d) {
                other[d] = i[d] * g.stride[d] - g.pad[d] + k[d] * g.dil[d];
                if (other[d] < 0 || other[d] >= g.out[d]) return;
              }
              fn(il, linear3(ic, ocl, g.w_sizes, k), linear3(n, grp * coutpg + ocl, g.out_sizes, other));
            });
        });
      }
  }
}

void check_dtypes(const std::string& op, const HostTensor& x, const HostTensor& w, const HostTensor* b) {
  if (!is_floating(x.dtype()))
    kernel_error(op, std::string("\"convolution\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  if (w.dtype() != x.dtype())
    kernel_error(op, std::string("Input type (") + dtype_aten_name(x.dtype()) + ") and weight type (" + dtype_aten_name(w.dtype()) +
                         ") should be the same");
  if (b && b->dtype() != x.dtype())
    kernel_error(op, std::string("Input type (") + dtype_aten_name(x.dtype()) + ") and bias type (" + dtype_aten_name(b->dtype()) +
                         ") should be the same");
}

Out k_convolution(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  const HostTensor& w = a.tensor("weight");
  const HostTensor* b = a.opt_tensor("bias");
  check_dtypes(op, x, w, b);
  ConvGeom g = conv_geom(op, x.sizes(), w.sizes(), a);
  if (b && (b->dim() != 1 || b->numel() != g.Cout))
    kernel_error(op, "Given weight of size " + shape_str(w.sizes()) + ", expected bias to be 1-dimensional with " + std::to_string(g.Cout) +
                         " elements, but got bias of size " + shape_str(b->sizes()) + " instead");
  std::vector<double> xv = to_double_vec(x), wv = to_double_vec(w), out(static_cast<size_t>(numel_of(g.out_sizes)), 0.0);
  for_each_product(g, [&](int64_t i, int64_t k, int64_t o) { out[static_cast<size_t>(o)] += xv[static_cast<size_t>(i)] * wv[static_cast<size_t>(k)]; });
  if (b) {
    std::vector<double> bv = to_double_vec(*b);
    int64_t per = numel_of(g.out);
    for (size_t q = 0; q < out.size(); ++q) out[q] += bv[static_cast<size_t>((static_cast<int64_t>(q) / per) % g.Cout)];
  }
  // Channels-last in, channels-last out: for 4-d, as the CPU and cuDNN kernels do (5-d output
  // follows the input only through oneDNN, see the meta's conv_format; the reference stays
  // contiguous there).
  HostTensor result = from_double_vec(x.dtype(), g.out_sizes, out);
  return {x.dim() == 4 ? in_memory_format_of(result, x) : result};
}

Out k_convolution_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& x = a.tensor("input");
  const HostTensor& w = a.tensor("weight");
  check_dtypes(op, x, w, nullptr);
  if (go.dtype() != x.dtype())
    kernel_error(op, std::string("grad_output type (") + dtype_aten_name(go.dtype()) + ") and input type (" + dtype_aten_name(x.dtype()) +
                         ") should be the same");
  ConvGeom g = conv_geom(op, x.sizes(), w.sizes(), a);
  if (go.sizes() != g.out_sizes)
    kernel_error(op, "Expected grad_output of size " + shape_str(g.out_sizes) + " (the convolution's output), but got " + shape_str(go.sizes()));
  std::vector<int64_t> mask = a.int_list("output_mask");
  if (mask.size() != 3) kernel_error(op, "output_mask must have 3 entries, got " + std::to_string(mask.size()));
  std::vector<double> gv = to_double_vec(go), xv = to_double_vec(x), wv = to_double_vec(w);
  std::vector<double> gi(mask[0] ? xv.size() : 0, 0.0), gw(mask[1] ? wv.size() : 0, 0.0);
  if (mask[0] || mask[1])
    for_each_product(g, [&](int64_t i, int64_t k, int64_t o) {
      double gr = gv[static_cast<size_t>(o)];
      if (mask[0]) gi[static_cast<size_t>(i)] += gr * wv[static_cast<size_t>(k)];
      if (mask[1]) gw[static_cast<size_t>(k)] += gr * xv[static_cast<size_t>(i)];
    });
  // A result output_mask leaves out is an empty 1-d tensor (meta_helpers.h, undefined_result).
  Out r(3, HostTensor::zeros(go.dtype(), {0}));
  // Both gradients channels-last where the input is (else where the weight is), as the meta says.
  const HostTensor& layout = x.is_contiguous() ? w : x;
  if (mask[0]) r[0] = in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), gi), layout);
  if (mask[1]) r[1] = in_memory_format_of(from_double_vec(w.dtype(), w.sizes(), gw), layout);
  if (mask[2]) {
    std::vector<double> gb(static_cast<size_t>(g.Cout), 0.0);
    int64_t per = numel_of(g.out);
    for (size_t q = 0; q < gv.size(); ++q) gb[static_cast<size_t>((static_cast<int64_t>(q) / per) % g.Cout)] += gv[q];
    std::optional<std::vector<int64_t>> bs = a.opt_int_list("bias_sizes");
    std::vector<int64_t> bsizes = bs ? *bs : std::vector<int64_t>{g.Cout};
    if (numel_of(bsizes) != g.Cout)
      kernel_error(op, "bias_sizes " + shape_str(bsizes) + " do not match the " + std::to_string(g.Cout) + " output channels");
    r[2] = from_double_vec(go.dtype(), bsizes, gb);
  }
  return r;
}

}  // namespace

std::vector<KernelImpl> conv_kernel_impls() {
  return {
      {"aten.convolution.default", k_convolution},
      {"aten.convolution_backward.default", k_convolution_backward},
  };
}

}  // namespace toroid::ops
