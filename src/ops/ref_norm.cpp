// Reference kernels: softmax and normalization. _softmax, _log_softmax, softmax.int,
// log_softmax.int and their backward forms; native_layer_norm, layer_norm, native_group_norm,
// native_batch_norm and the _native_batch_norm_legit family. Everything is computed in double
// from the exact input values and rounded once to the result dtype. Statistics (mean, rstd)
// have the input's dtype (float32 for 16-bit inputs with a float32 weight, the CPU's mixed-type
// kernels), as the meta functions say.
#include <cmath>
#include <limits>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

void require_float(const std::string& op, DType d, const char* what) {
  if (!is_floating(d)) kernel_error(op, std::string(what) + " not implemented for '" + dtype_aten_name(d) + "'");
}

// x viewed as [outer, n, inner] around dim (a 0-dim tensor is [1, 1, 1]).
struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};
Around around(const HostTensor& x, int64_t dim) {
  Around r;
  for (int64_t d = 0; d < x.dim(); ++d) {
    int64_t s = x.sizes()[static_cast<size_t>(d)];
    if (d < dim) r.outer *= s;
    else if (d == dim) r.n = s;
    else r.inner *= s;
  }
  return r;
}

// ---- softmax ------------------------------------------------------------------------------------

std::vector<double> softmax_values(const std::vector<double>& x, const Around& g, bool log) {
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * g.n + k) * g.inner + i); };
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t k = 0; k < g.n; ++k) {
        double v = x[at(k)];
        if (std::isnan(v)) nan = true;
        else if (v > mx) mx = v;
      }
      double sum = 0;
      for (int64_t k = 0; k < g.n; ++k) sum += std::exp(x[at(k)] - mx);
      for (int64_t k = 0; k < g.n; ++k) {
        double v = x[at(k)] - mx;
        out[at(k)] = nan ? std::numeric_limits<double>::quiet_NaN() : log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return out;
}

HostTensor softmax_impl(const std::string& op, const HostTensor& x, int64_t dim_arg, DType out, bool log) {
  require_float(op, out, log ? "log_softmax" : "softmax");
  int64_t dim = wrap_dim(op, dim_arg, x.dim());
  Around g = around(x, x.dim() == 0 ? 0 : dim);
  std::vector<double> in = to_double_vec(x);
  for (double& v : in) v = round_to(out, v);  // a dtype= argument converts the input first
  return from_double_vec(out, x.sizes(), softmax_values(in, g, log));
}

Out softmax_core(const RtArgs& a, bool log) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  DType out = x.dtype();
  if (a.to_bool("half_to_float")) {
    if (x.dtype() != DType::Float16) kernel_error(op, "conversion is supported for Half type only");
    out = DType::Float32;
  }
  return {softmax_impl(op, x, a.to_int("dim"), out, log)};
}
Out k_softmax(const RtArgs& a, KernelContext&) { return softmax_core(a, false); }
Out k_log_softmax(const RtArgs& a, KernelContext&) { return softmax_core(a, true); }

Out softmax_int(const RtArgs& a, bool log) {
  const HostTensor& x = a.tensor("self");
  return {softmax_impl(op_of(a), x, a.to_int("dim"), a.dtype("dtype").value_or(x.dtype()), log)};
}
Out k_softmax_int(const RtArgs& a, KernelContext&) { return softmax_int(a, false); }
Out k_log_softmax_int(const RtArgs& a, KernelContext&) { return softmax_int(a, true); }

// grad_input = y * (g - sum(g * y)) for softmax, g - exp(y) * sum(g) for log_softmax.
Out softmax_backward(const RtArgs& a, bool log) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& y = a.tensor("output");
  if (go.sizes() != y.sizes())
    kernel_error(op, "grad_output of shape " + shape_str(go.sizes()) + " does not match output of shape " + shape_str(y.sizes()));
  DType out = *a.dtype("input_dtype");
  require_float(op, out, "softmax_backward");
  int64_t dim = wrap_dim(op, a.to_int("dim"), go.dim());
  Around g = around(go, go.dim() == 0 ? 0 : dim);
  std::vector<double> gv = to_double_vec(go), yv = to_double_vec(y), r(gv.size());
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * g.n + k) * g.inner + i); };
      double s = 0;
      for (int64_t k = 0; k < g.n; ++k) s += log ? gv[at(k)] : gv[at(k)] * yv[at(k)];
      for (int64_t k = 0; k < g.n; ++k) r[at(k)] = log ? gv[at(k)] - std::exp(yv[at(k)]) * s : yv[at(k)] * (gv[at(k)] - s);
    }
  return {from_double_vec(out, go.sizes(), r)};
}
Out k_softmax_backward(const RtArgs& a, KernelContext&) { return softmax_backward(a, false); }
Out k_log_softmax_backward(const RtArgs& a, KernelContext&) { return softmax_backward(a, true); }

// ---- layer norm -----------------------------------------------------------------------------------

DType stats_dtype(const HostTensor& x, const HostTensor* w) {
  if ((x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16) && w && w->dtype() == DType::Float32) return DType::Float32;
  return x.dtype();
}

// Checks normalized_shape against x and weight/bias; returns the number of rows (M) and the
// row length (N).
std::pair<int64_t, int64_t> layer_norm_split(const std::string& op, const HostTensor& x, const std::vector<int64_t>& ns,
                                             const HostTensor* w, const HostTensor* b) {
  if (ns.empty()) kernel_error(op, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []");
  bool ok = static_cast<int64_t>(ns.size()) <= x.dim();
  size_t axis = ok ? static_cast<size_t>(x.dim()) - ns.size() : 0;
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = ns[i] == x.sizes()[axis + i];
  if (!ok)
    kernel_error(op, "Given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " + shape_str(ns).substr(1) +
                         ", but got input of size" + shape_str(x.sizes()));
  if (w && w->sizes() != ns)
    kernel_error(op, "Expected weight to be of same shape as normalized_shape, but got weight of shape " + shape_str(w->sizes()) +
                         " and normalized_shape = " + shape_str(ns));
  if (b && b->sizes() != ns)
    kernel_error(op, "Expected bias to be of same shape as normalized_shape, but got bias of shape " + shape_str(b->sizes()) +
                         " and normalized_shape = " + shape_str(ns));
  int64_t n = numel_of(ns);
  int64_t m = 1;
  for (size_t d = 0; d < axis; ++d) m *= x.sizes()[d];
  return {m, n};
}

struct LayerNormResult {
  HostTensor out, mean, rstd;
};

LayerNormResult layer_norm_impl(const RtArgs& a) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  require_float(op, x.dtype(), "layer_norm");
  std::vector<int64_t> ns = a.int_list("normalized_shape");
  const HostTensor* w = a.opt_tensor("weight");
  const HostTensor* b = a.opt_tensor("bias");
  auto [m, n] = layer_norm_split(op, x, ns, w, b);
  double eps = a.to_double("eps");
  std::vector<double> xv = to_double_vec(x), wv, bv, out(xv.size()), mean(static_cast<size_t>(m)), rstd(static_cast<size_t>(m));
  if (w) wv = to_double_vec(*w);
  if (b) bv = to_double_vec(*b);
  for (int64_t r = 0; r < m; ++r) {
    double s = 0;
    for (int64_t k = 0; k < n; ++k) s += xv[static_cast<size_t>(r * n + k)];
    double mu = n ? s / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
    double ss = 0;
    for (int64_t k = 0; k < n; ++k) {
      double d = xv[static_cast<size_t>(r * n + k)] - mu;
      ss += d * d;
    }
    double var = n ? ss / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
    double rs = 1.0 / std::sqrt(var + eps);
    mean[static_cast<size_t>(r)] = mu;
    rstd[static_cast<size_t>(r)] = rs;
    for (int64_t k = 0; k < n; ++k) {
      size_t u = static_cast<size_t>(r * n + k);
      double v = (xv[u] - mu) * rs;
      if (w) v *= wv[static_cast<size_t>(k)];
      if (b) v += bv[static_cast<size_t>(k)];
      out[u] = v;
    }
  }
  std::vector<int64_t> stat_sizes(x.sizes().begin(), x.sizes().end() - static_cast<std::ptrdiff_t>(ns.size()));
  stat_sizes.resize(static_cast<size_t>(x.dim()), 1);
  DType sd = stats_dtype(x, w);
  return {from_double_vec(x.dtype(), x.sizes(), out), from_double_vec(sd, stat_sizes, mean), from_double_vec(sd, stat_sizes, rstd)};
}

Out k_native_layer_norm(const RtArgs& a, KernelContext&) {
  LayerNormResult r = layer_norm_impl(a);
  return {r.out, r.mean, r.rstd};
}
Out k_layer_norm(const RtArgs& a, KernelContext&) { return {layer_norm_impl(a).out}; }

// ---- group norm ------------------------------------------------------------------------------------

Out k_native_group_norm(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  require_float(op, x.dtype(), "group_norm");
  const HostTensor* w = a.opt_tensor("weight");
  const HostTensor* b = a.opt_tensor("bias");
  int64_t N = a.to_int("N"), C = a.to_int("C"), HxW = a.to_int("HxW"), G = a.to_int("group");
  double eps = a.to_double("eps");
  if (G <= 0) kernel_error(op, "Expected group to be positive, got " + std::to_string(G));
  if (C % G != 0)
    kernel_error(op, "Expected number of channels in input to be divisible by num_groups, but got input of shape " + shape_str(x.sizes()) +
                         " and num_groups=" + std::to_string(G));
  if (x.numel() != checked_mul(op, checked_mul(op, N, C), HxW))
    kernel_error(op, "Expected input of " + std::to_string(N * C * HxW) + " elements (N * C * HxW), got " + shape_str(x.sizes()));
  if (x.dim() < 2 || x.sizes()[0] != N || x.sizes()[1] != C) kernel_error(op, "Expected input of shape [N, C, *], got " + shape_str(x.sizes()));
  for (const HostTensor* t : {w, b})
    if (t && (t->dim() != 1 || t->numel() != C))
      kernel_error(op, "Expected weight and bias to be a vector of size equal to the number of channels in input, but got " + shape_str(t->sizes()) +
                           " and input of shape " + shape_str(x.sizes()));
  std::vector<double> xv = to_double_vec(x), wv, bv, out(xv.size()), mean(static_cast<size_t>(N * G)), rstd(static_cast<size_t>(N * G));
  if (w) wv = to_double_vec(*w);
  if (b) bv = to_double_vec(*b);
  int64_t cpg = C / G, len = cpg * HxW;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      int64_t base = (n * C + g * cpg) * HxW;
      double s = 0, ss = 0;
      for (int64_t k = 0; k < len; ++k) s += xv[static_cast<size_t>(base + k)];
      double mu = len ? s / static_cast<double>(len) : std::numeric_limits<double>::quiet_NaN();
      for (int64_t k = 0; k < len; ++k) {
        double d = xv[static_cast<size_t>(base + k)] - mu;
        ss += d * d;
      }
      double rs = 1.0 / std::sqrt((len ? ss / static_cast<double>(len) : std::numeric_limits<double>::quiet_NaN()) + eps);
      mean[static_cast<size_t>(n * G + g)] = mu;
      rstd[static_cast<size_t>(n * G + g)] = rs;
      for (int64_t k = 0; k < len; ++k) {
        int64_t c = g * cpg + k / HxW;
        size_t u = static_cast<size_t>(base + k);
        double v = (xv[u] - mu) * rs;
        if (w) v *= wv[static_cast<size_t>(c)];
        if (b) v += bv[static_cast<size_t>(c)];
        out[u] = v;
      }
    }
  DType sd = stats_dtype(x, w);
  return {in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), out), x), from_double_vec(sd, {N, G}, mean),
          from_double_vec(sd, {N, G}, rstd)};
}

// ---- batch norm ------------------------------------------------------------------------------------

// Per channel (dim 1): normalizes with the batch statistics (training) or the running ones.
// Training updates running_mean/var in place (momentum, unbiased variance), when given.
Out batch_norm_impl(const RtArgs& a, const HostTensor* rmean, const HostTensor* rvar, bool training) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  require_float(op, x.dtype(), "batch_norm");
  if (x.dim() < 2) kernel_error(op, "Expected an input with at least 2 dims, got " + shape_str(x.sizes()));
  const HostTensor* w = a.opt_tensor("weight");
  const HostTensor* b = a.opt_tensor("bias");
  double momentum = a.to_double("momentum"), eps = a.to_double("eps");
  int64_t C = x.sizes()[1];
  for (const HostTensor* t : {w, b, rmean, rvar})
    if (t && t->numel() != C)
      kernel_error(op, "Expected a tensor of " + std::to_string(C) + " elements (the channels of the input), got " + shape_str(t->sizes()));
  if (!training && (!rmean || !rvar)) kernel_error(op, "running_mean and running_var must be defined in evaluation mode");
  int64_t N = x.sizes()[0], S = x.numel() / std::max<int64_t>(N * C, 1);
  int64_t cnt = N * S;
  std::vector<double> xv = to_double_vec(x), out(xv.size()), mean(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  std::vector<double> wv = w ? to_double_vec(*w) : std::vector<double>(), bv = b ? to_double_vec(*b) : std::vector<double>();
  auto at = [&](int64_t n, int64_t c, int64_t s) { return static_cast<size_t>((n * C + c) * S + s); };
  for (int64_t c = 0; c < C; ++c) {
    double mu, var;
    if (training) {
      double s = 0, ss = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) s += xv[at(n, c, k)];
      mu = s / static_cast<double>(cnt);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < S; ++k) ss += (xv[at(n, c, k)] - mu) * (xv[at(n, c, k)] - mu);
      var = ss / static_cast<double>(cnt);
      if (rmean) {
        double old = rmean->get_double(c);
        rmean->set_double(c, (1 - momentum) * old + momentum * mu);
      }
      if (rvar) {
        double unbiased = ss / static_cast<double>(cnt - 1);
        double old = rvar->get_double(c);
        rvar->set_double(c, (1 - momentum) * old + momentum * unbiased);
      }
    } else {
      mu = rmean->get_double(c);
      var = rvar->get_double(c);
    }
    double is = 1.0 / std::sqrt(var + eps);
    mean[static_cast<size_t>(c)] = mu;
    invstd[static_cast<size_t>(c)] = is;
    double scale = w ? wv[static_cast<size_t>(c)] : 1.0, shift = b ? bv[static_cast<size_t>(c)] : 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < S; ++k) out[at(n, c, k)] = (xv[at(n, c, k)] - mu) * is * scale + shift;
  }
  // The output keeps the input's strides when they are dense (channels-last in, channels-last out).
  HostTensor o = in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), out), x);
  DType sd = stats_dtype(x, w);
  if (!training) return {o, HostTensor::zeros(sd, {0}), HostTensor::zeros(sd, {0})};
  return {o, from_double_vec(sd, {C}, mean), from_double_vec(sd, {C}, invstd)};
}

Out k_native_batch_norm(const RtArgs& a, KernelContext&) {
  return batch_norm_impl(a, a.opt_tensor("running_mean"), a.opt_tensor("running_var"), a.to_bool("training"));
}
Out k_bn_legit(const RtArgs& a, KernelContext&) {
  return batch_norm_impl(a, &a.tensor("running_mean"), &a.tensor("running_var"), a.to_bool("training"));
}
Out k_bn_legit_no_stats(const RtArgs& a, KernelContext&) {
  if (!a.to_bool("training")) kernel_error(op_of(a), "running_mean and running_var must be defined in evaluation mode");
  return batch_norm_impl(a, nullptr, nullptr, true);
}
Out k_bn_legit_no_training(const RtArgs& a, KernelContext&) {
  return batch_norm_impl(a, &a.tensor("running_mean"), &a.tensor("running_var"), false);
}

}  // namespace

std::vector<KernelImpl> norm_kernel_impls() {
  return {
      {"aten._softmax.default", k_softmax},
      {"aten._log_softmax.default", k_log_softmax},
      {"aten.softmax.int", k_softmax_int},
      {"aten.log_softmax.int", k_log_softmax_int},
      {"aten._softmax_backward_data.default", k_softmax_backward},
      {"aten._log_softmax_backward_data.default", k_log_softmax_backward},
      {"aten.native_layer_norm.default", k_native_layer_norm},
      {"aten.layer_norm.default", k_layer_norm},
      {"aten.native_group_norm.default", k_native_group_norm},
      {"aten.native_batch_norm.default", k_native_batch_norm},
      {"aten._native_batch_norm_legit.default", k_bn_legit},
      {"aten._native_batch_norm_legit.no_stats", k_bn_legit_no_stats},
      {"aten._native_batch_norm_legit_no_training.default", k_bn_legit_no_training},
  };
}

}  // namespace toroid::ops
