// Reference kernels: the normalization backward ops, native_layer_norm_backward and
// native_group_norm_backward. They use the saved mean and rstd they are given (as PyTorch
// does), compute in double and round once. A result whose output_mask entry is false is an empty
// 1-d tensor of size 0, as the meta functions say (meta_helpers.h, undefined_result).
//
// With xhat = (x - mean) * rstd and g = grad_out * weight (grad_out without a weight), over the
// n elements normalized together:
//   grad_input  = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   grad_weight = sum over the batch of grad_out * xhat,  grad_bias = sum of grad_out.
#include <cmath>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

std::vector<int64_t> mask_arg(const std::string& op, const RtArgs& a) {
  std::vector<int64_t> m = a.int_list("output_mask");
  if (m.size() != 3) kernel_error(op, "output_mask must have 3 entries, got " + std::to_string(m.size()));
  return m;
}

Out k_native_layer_norm_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_out");
  const HostTensor& x = a.tensor("input");
  const HostTensor& mean = a.tensor("mean");
  const HostTensor& rstd = a.tensor("rstd");
  const HostTensor* w = a.opt_tensor("weight");
  std::vector<int64_t> ns = a.int_list("normalized_shape");
  std::vector<int64_t> mask = mask_arg(op, a);
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"layer_norm_backward\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  if (go.sizes() != x.sizes()) kernel_error(op, "grad_out of shape " + shape_str(go.sizes()) + " does not match input of shape " + shape_str(x.sizes()));
  bool ok = !ns.empty() && static_cast<int64_t>(ns.size()) <= x.dim();
  size_t axis = ok ? static_cast<size_t>(x.dim()) - ns.size() : 0;
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = ns[i] == x.sizes()[axis + i];
  if (!ok) kernel_error(op, "Given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " + shape_str(ns).substr(1) + ", but got input of size" + shape_str(x.sizes()));
  int64_t n = numel_of(ns), m = n ? x.numel() / n : 0;
  if (mean.numel() != m || rstd.numel() != m)
    kernel_error(op, "Expected mean and rstd of " + std::to_string(m) + " elements, got " + shape_str(mean.sizes()) + " and " + shape_str(rstd.sizes()));
  if (w && w->numel() != n) kernel_error(op, "Expected weight of shape " + shape_str(ns) + ", got " + shape_str(w->sizes()));
  std::vector<double> gv = to_double_vec(go), xv = to_double_vec(x), mv = to_double_vec(mean), rv = to_double_vec(rstd);
  std::vector<double> wv = w ? to_double_vec(*w) : std::vector<double>(static_cast<size_t>(n), 1.0);
  std::vector<double> gi(xv.size(), 0.0), gw(static_cast<size_t>(n), 0.0), gb(static_cast<size_t>(n), 0.0);
  for (int64_t r = 0; r < m; ++r) {
    double mu = mv[static_cast<size_t>(r)], rs = rv[static_cast<size_t>(r)];
    double sg = 0, sgx = 0;
    for (int64_t k = 0; k < n; ++k) {
      size_t u = static_cast<size_t>(r * n + k);
      double xh = (xv[u] - mu) * rs, g = gv[u] * wv[static_cast<size_t>(k)];
      sg += g;
      sgx += g * xh;
      gw[static_cast<size_t>(k)] += gv[u] * xh;
      gb[static_cast<size_t>(k)] += gv[u];
    }
    double dn = static_cast<double>(n);
    for (int64_t k = 0; k < n; ++k) {
      size_t u = static_cast<size_t>(r * n + k);
      double xh = (xv[u] - mu) * rs, g = gv[u] * wv[static_cast<size_t>(k)];
      gi[u] = rs * (g - sg / dn - xh * sgx / dn);
    }
  }
  // A parameter gradient is undefined where its mask entry is false or the parameter is absent.
  const HostTensor* bias = a.opt_tensor("bias");
  HostTensor none = HostTensor::zeros(x.dtype(), {0});
  Out res{none, none, none};
  if (mask[0]) res[0] = from_double_vec(x.dtype(), x.sizes(), gi);
  if (mask[1] && w) res[1] = from_double_vec(w->dtype(), w->sizes(), gw);
  if (mask[2] && bias) res[2] = from_double_vec(bias->dtype(), bias->sizes(), gb);
  return res;
}

Out k_native_group_norm_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_out");
  const HostTensor& x = a.tensor("input");
  const HostTensor& mean = a.tensor("mean");
  const HostTensor& rstd = a.tensor("rstd");
  const HostTensor* w = a.opt_tensor("weight");
  int64_t N = a.to_int("N"), C = a.to_int("C"), HxW = a.to_int("HxW"), G = a.to_int("group");
  std::vector<int64_t> mask = mask_arg(op, a);
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"group_norm_backward\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  if (G <= 0 || C % G != 0)
    kernel_error(op, "Expected number of channels in input to be divisible by num_groups, but got input of shape " + shape_str(x.sizes()) +
                         " and num_groups=" + std::to_string(G));
  if (x.numel() != checked_mul(op, checked_mul(op, N, C), HxW) || go.sizes() != x.sizes())
    kernel_error(op, "Expected input and grad_out of " + std::to_string(N * C * HxW) + " elements (N * C * HxW), got " + shape_str(x.sizes()) +
                         " and " + shape_str(go.sizes()));
  if (mean.numel() != checked_mul(op, N, G) || rstd.numel() != N * G)
    kernel_error(op, "Expected mean and rstd of " + std::to_string(N * G) + " elements, got " + shape_str(mean.sizes()) + " and " + shape_str(rstd.sizes()));
  if (w && w->numel() != C) kernel_error(op, "Expected weight of " + std::to_string(C) + " elements, got " + shape_str(w->sizes()));
  std::vector<double> gv = to_double_vec(go), xv = to_double_vec(x), mv = to_double_vec(mean), rv = to_double_vec(rstd);
  std::vector<double> wv = w ? to_double_vec(*w) : std::vector<double>(static_cast<size_t>(C), 1.0);
  std::vector<double> gi(xv.size(), 0.0), gw(static_cast<size_t>(C), 0.0), gb(static_cast<size_t>(C), 0.0);
  int64_t cpg = C / G, len = cpg * HxW;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      double mu = mv[static_cast<size_t>(n * G + g)], rs = rv[static_cast<size_t>(n * G + g)];
      int64_t base = (n * C + g * cpg) * HxW;
      double sg = 0, sgx = 0;
      for (int64_t k = 0; k < len; ++k) {
        size_t u = static_cast<size_t>(base + k), c = static_cast<size_t>(g * cpg + k / HxW);
        double xh = (xv[u] - mu) * rs, gg = gv[u] * wv[c];
        sg += gg;
        sgx += gg * xh;
        gw[c] += gv[u] * xh;
        gb[c] += gv[u];
      }
      double dn = static_cast<double>(len);
      for (int64_t k = 0; k < len; ++k) {
        size_t u = static_cast<size_t>(base + k), c = static_cast<size_t>(g * cpg + k / HxW);
        double xh = (xv[u] - mu) * rs, gg = gv[u] * wv[c];
        gi[u] = rs * (gg - sg / dn - xh * sgx / dn);
      }
    }
  DType wd = w ? w->dtype() : x.dtype();
  Out res{HostTensor::zeros(x.dtype(), {0}), HostTensor::zeros(wd, {0}), HostTensor::zeros(wd, {0})};
  if (mask[0]) res[0] = in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), gi), x);
  if (mask[1]) res[1] = from_double_vec(wd, {C}, gw);
  if (mask[2]) res[2] = from_double_vec(wd, {C}, gb);
  return res;
}

}  // namespace

std::vector<KernelImpl> backward_kernel_impls() {
  return {
      {"aten.native_layer_norm_backward.default", k_native_layer_norm_backward},
      {"aten.native_group_norm_backward.default", k_native_group_norm_backward},
  };
}

}  // namespace toroid::ops
