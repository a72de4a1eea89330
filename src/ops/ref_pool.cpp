// Reference kernels: pooling. avg_pool1d/2d/3d (ceil_mode, count_include_pad,
// divisor_override), adaptive_avg_pool1d, _adaptive_avg_pool2d/3d, max_pool2d/3d_with_indices
// (dilation; indices into the flattened spatial dims of each plane), and the backward ops
// avg_pool2d_backward, max_pool2d_with_indices_backward, _adaptive_avg_pool2d_backward.
//
// An input is [batch dims..., spatial dims] with one or two leading dims; every leading plane
// is pooled on its own. Averages are computed in double and rounded once (int64 averages
// truncate, as PyTorch's integer division). Max pooling takes the first maximum; a NaN wins
// over any number, and a later NaN over an earlier one (PyTorch's `v > max || isnan(v)`).
#include <cmath>
#include <optional>
#include <limits>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

std::vector<int64_t> expand(const std::string& op, std::vector<int64_t> v, size_t S, const char* name, bool allow_empty,
                            const std::vector<int64_t>& fallback) {
  if (v.empty() && allow_empty) return fallback;
  if (v.size() == 1) return std::vector<int64_t>(S, v[0]);
  if (v.size() != S)
    kernel_error(op, std::string(name) + " must either be a single int, or a tuple of " + std::to_string(S) + " ints");
  return v;
}

struct PoolGeom {
  size_t S = 0;
  int64_t planes = 1;           // product of the leading dims
  std::vector<int64_t> lead;    // the leading dims
  std::vector<int64_t> in, out, k, stride, pad, dil;
  int64_t in_plane = 1, out_plane = 1;
};

void split_input(const std::string& op, const HostTensor& x, size_t S, PoolGeom& g) {
  int64_t nd = x.dim();
  if (nd != static_cast<int64_t>(S) + 1 && nd != static_cast<int64_t>(S) + 2)
    kernel_error(op, "non-empty " + std::to_string(S + 1) + "D or " + std::to_string(S + 2) + "D (batch mode) tensor expected for input, got " +
                         shape_str(x.sizes()));
  g.S = S;
  size_t nlead = static_cast<size_t>(nd) - S;
  g.lead.assign(x.sizes().begin(), x.sizes().begin() + static_cast<std::ptrdiff_t>(nlead));
  g.in.assign(x.sizes().begin() + static_cast<std::ptrdiff_t>(nlead), x.sizes().end());
  for (size_t d = 1; d < nlead; ++d)
    if (g.lead[d] == 0) kernel_error(op, "Expected input to have non-zero size for non-batch dimensions, but got " + shape_str(x.sizes()));
  for (int64_t s : g.in)
    if (s == 0) kernel_error(op, "Expected input to have non-zero size for non-batch dimensions, but got " + shape_str(x.sizes()));
  g.planes = numel_of(g.lead);
  g.in_plane = numel_of(g.in);
}

int64_t pooling_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t q = num / stride;
  if ((num % stride != 0) && (num < 0)) --q;  // floor division
  int64_t out = q + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Kernel/stride/padding/dilation of a windowed pool and the output sizes.
PoolGeom window_geom(const std::string& op, const HostTensor& x, size_t S, const RtArgs& a, bool ceil, bool has_dilation) {
  PoolGeom g;
  split_input(op, x, S, g);
  g.k = expand(op, a.int_list("kernel_size"), S, "kernel_size", false, {});
  g.stride = expand(op, a.int_list("stride"), S, "stride", true, g.k);
  g.pad = expand(op, a.int_list("padding"), S, "padding", false, {});
  g.dil = has_dilation ? expand(op, a.int_list("dilation"), S, "dilation", false, {}) : std::vector<int64_t>(S, 1);
  require_int32_params(op, g.k, "kernel_size");
  require_int32_params(op, g.stride, "stride");
  require_int32_params(op, g.pad, "padding");
  require_int32_params(op, g.dil, "dilation");
  for (size_t d = 0; d < S; ++d) {
    if (g.k[d] <= 0) kernel_error(op, "kernel size should be greater than zero, but got " + shape_str(g.k));
    if (g.stride[d] <= 0) kernel_error(op, "stride should be greater than zero, but got " + shape_str(g.stride));
    if (g.dil[d] <= 0) kernel_error(op, "dilation should be greater than zero, but got " + shape_str(g.dil));
    if (g.pad[d] < 0 || g.pad[d] > g.k[d] / 2)
      kernel_error(op, "pad should be at most half of effective kernel size, but got pad=" + std::to_string(g.pad[d]) +
                           ", kernel_size=" + std::to_string(g.k[d]) + " and dilation=" + std::to_string(g.dil[d]));
  }
  bool small = false;
  for (size_t d = 0; d < S; ++d) {
    g.out.push_back(pooling_out(g.in[d], g.k[d], g.pad[d], g.stride[d], g.dil[d], ceil));
    if (g.out.back() < 1) small = true;
  }
  if (small)
    kernel_error(op, "Given input size: " + shape_str(x.sizes()) + ". Calculated output size: " + shape_str(g.out) + ". Output size is too small");
  g.out_plane = numel_of(g.out);
  checked_mul(op, g.planes, g.out_plane);
  return g;
}

std::vector<int64_t> out_sizes(const PoolGeom& g) {
  std::vector<int64_t> s = g.lead;
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

int64_t flat(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  int64_t l = 0;
  for (size_t d = 0; d < idx.size(); ++d) l = l * sizes[d] + idx[d];
  return l;
}

// ---- average pooling ---------------------------------------------------------------------------

// fn(out position, in positions of the clamped window, divisor).
template <class F>
void for_each_avg_window(const PoolGeom& g, bool count_include_pad, std::optional<int64_t> divisor, F&& fn) {
  std::vector<int64_t> lo(g.S), hi(g.S);
  ref_for_each_index(g.out, [&](const std::vector<int64_t>& o) {
    int64_t pool = 1, valid = 1;
    for (size_t d = 0; d < g.S; ++d) {
      int64_t s = o[d] * g.stride[d] - g.pad[d];
      int64_t e = std::min(s + g.k[d], g.in[d] + g.pad[d]);
      pool *= e - s;
      lo[d] = std::max<int64_t>(s, 0);
      hi[d] = std::min(e, g.in[d]);
      valid *= std::max<int64_t>(hi[d] - lo[d], 0);
    }
    int64_t div = divisor ? *divisor : count_include_pad ? pool : valid;
    std::vector<int64_t> win(g.S);
    for (size_t d = 0; d < g.S; ++d) win[d] = std::max<int64_t>(hi[d] - lo[d], 0);
    std::vector<int64_t> positions;
    ref_for_each_index(win, [&](const std::vector<int64_t>& w) {
      std::vector<int64_t> p(g.S);
      for (size_t d = 0; d < g.S; ++d) p[d] = lo[d] + w[d];
      positions.push_back(flat(p, g.in));
    });
    fn(flat(o, g.out), positions, div);
  });
}

void check_avg_dtype(const std::string& op, DType d) {
  if (!is_floating(d) && d != DType::Int64)
    kernel_error(op, std::string("\"avg_pool\" not implemented for '") + dtype_aten_name(d) + "'");
}

std::optional<int64_t> divisor_arg(const std::string& op, const RtArgs& a) {
  if (!a.schema().argument_index("divisor_override")) return std::nullopt;
  std::optional<int64_t> d = a.opt_int("divisor_override");
  if (d && *d == 0) kernel_error(op, "divisor must be not zero");
  return d;
}

HostTensor avg_pool(const RtArgs& a, size_t S) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  check_avg_dtype(op, x.dtype());
  bool ceil = a.to_bool("ceil_mode"), cip = a.to_bool("count_include_pad");
  std::optional<int64_t> div = divisor_arg(op, a);
  PoolGeom g = window_geom(op, x, S, a, ceil, false);
  bool fl = is_floating(x.dtype());
  std::vector<double> xd = fl ? to_double_vec(x) : std::vector<double>(), od(static_cast<size_t>(g.planes * g.out_plane));
  std::vector<int64_t> xi = fl ? std::vector<int64_t>() : to_int64_vec(x), oi(fl ? 0 : od.size());
  for (int64_t p = 0; p < g.planes; ++p)
    for_each_avg_window(g, cip, div, [&](int64_t o, const std::vector<int64_t>& pos, int64_t d) {
      size_t u = static_cast<size_t>(p * g.out_plane + o);
      if (fl) {
        double s = 0;
        for (int64_t q : pos) s += xd[static_cast<size_t>(p * g.in_plane + q)];
        od[u] = s / static_cast<double>(d);
      } else {
        int64_t s = 0;
        for (int64_t q : pos) s = wrap_add(s, xi[static_cast<size_t>(p * g.in_plane + q)]);
        oi[u] = (d == -1 && s == std::numeric_limits<int64_t>::min()) ? s : s / d;
      }
    });
  HostTensor r = fl ? from_double_vec(x.dtype(), out_sizes(g), od) : from_int64_vec(x.dtype(), out_sizes(g), oi);
  return in_memory_format_of(r, x);
}

Out k_avg_pool1d(const RtArgs& a, KernelContext&) { return {avg_pool(a, 1)}; }
Out k_avg_pool2d(const RtArgs& a, KernelContext&) { return {avg_pool(a, 2)}; }
Out k_avg_pool3d(const RtArgs& a, KernelContext&) { return {avg_pool(a, 3)}; }

Out k_avg_pool2d_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& x = a.tensor("self");
  check_avg_dtype(op, x.dtype());
  PoolGeom g = window_geom(op, x, 2, a, a.to_bool("ceil_mode"), false);
  if (go.sizes() != out_sizes(g))
    kernel_error(op, "Expected grad_output of size " + shape_str(out_sizes(g)) + ", but got " + shape_str(go.sizes()));
  std::vector<double> gv = to_double_vec(go), gi(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t p = 0; p < g.planes; ++p)
    for_each_avg_window(g, a.to_bool("count_include_pad"), divisor_arg(op, a), [&](int64_t o, const std::vector<int64_t>& pos, int64_t d) {
      double v = gv[static_cast<size_t>(p * g.out_plane + o)] / static_cast<double>(d);
      for (int64_t q : pos) gi[static_cast<size_t>(p * g.in_plane + q)] += v;
    });
  return {in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), gi), x)};
}

// ---- adaptive average pooling ---------------------------------------------------------------

PoolGeom adaptive_geom(const std::string& op, const HostTensor& x, size_t S, const std::vector<int64_t>& output_size) {
  PoolGeom g;
  split_input(op, x, S, g);
  if (output_size.size() != S) kernel_error(op, "output_size must be " + std::to_string(S) + ", got " + shape_str(output_size));
  for (int64_t s : output_size)
    if (s < 0) kernel_error(op, "output_size must be non-negative, got " + shape_str(output_size));
  require_int32_params(op, output_size, "output_size");
  g.out = output_size;
  g.out_plane = numel_of(g.out);
  checked_mul(op, g.planes, g.out_plane);
  return g;
}

// fn(out position, in positions) with window [floor(o * in / out), ceil((o + 1) * in / out)).
template <class F>
void for_each_adaptive_window(const PoolGeom& g, F&& fn) {
  std::vector<int64_t> lo(g.S), len(g.S);
  ref_for_each_index(g.out, [&](const std::vector<int64_t>& o) {
    for (size_t d = 0; d < g.S; ++d) {
      lo[d] = (o[d] * g.in[d]) / g.out[d];
      int64_t hi = ((o[d] + 1) * g.in[d] + g.out[d] - 1) / g.out[d];
      len[d] = hi - lo[d];
    }
    std::vector<int64_t> positions;
    ref_for_each_index(len, [&](const std::vector<int64_t>& w) {
      std::vector<int64_t> p(g.S);
      for (size_t d = 0; d < g.S; ++d) p[d] = lo[d] + w[d];
      positions.push_back(flat(p, g.in));
    });
    fn(flat(o, g.out), positions);
  });
}

HostTensor adaptive_avg_pool(const RtArgs& a, size_t S) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"adaptive_avg_pool\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  PoolGeom g = adaptive_geom(op, x, S, a.int_list("output_size"));
  std::vector<double> xv = to_double_vec(x), ov(static_cast<size_t>(g.planes * g.out_plane));
  for (int64_t p = 0; p < g.planes; ++p)
    for_each_adaptive_window(g, [&](int64_t o, const std::vector<int64_t>& pos) {
      double s = 0;
      for (int64_t q : pos) s += xv[static_cast<size_t>(p * g.in_plane + q)];
      ov[static_cast<size_t>(p * g.out_plane + o)] = s / static_cast<double>(pos.size());
    });
  return in_memory_format_of(from_double_vec(x.dtype(), out_sizes(g), ov), x);
}

Out k_adaptive_avg_pool1d(const RtArgs& a, KernelContext&) { return {adaptive_avg_pool(a, 1)}; }
Out k_adaptive_avg_pool2d(const RtArgs& a, KernelContext&) { return {adaptive_avg_pool(a, 2)}; }
Out k_adaptive_avg_pool3d(const RtArgs& a, KernelContext&) { return {adaptive_avg_pool(a, 3)}; }

Out k_adaptive_avg_pool2d_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& x = a.tensor("self");
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"adaptive_avg_pool2d_backward\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  if (go.dim() != x.dim() || go.dim() < 3) kernel_error(op, "Expected grad_output and self of the same rank (3 or 4), got " + shape_str(go.sizes()) + " and " + shape_str(x.sizes()));
  std::vector<int64_t> os(go.sizes().end() - 2, go.sizes().end());
  PoolGeom g = adaptive_geom(op, x, 2, os);
  if (go.sizes() != out_sizes(g)) kernel_error(op, "Expected grad_output of size " + shape_str(out_sizes(g)) + ", got " + shape_str(go.sizes()));
  std::vector<double> gv = to_double_vec(go), gi(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t p = 0; p < g.planes; ++p)
    for_each_adaptive_window(g, [&](int64_t o, const std::vector<int64_t>& pos) {
      double v = gv[static_cast<size_t>(p * g.out_plane + o)] / static_cast<double>(pos.size());
      for (int64_t q : pos) gi[static_cast<size_t>(p * g.in_plane + q)] += v;
    });
  return {in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), gi), x)};
}

// ---- max pooling ---------------------------------------------------------------------------

Out max_pool(const RtArgs& a, size_t S) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  if (x.dtype() == DType::Bool) kernel_error(op, "\"max_pool\" not implemented for 'Bool'");
  PoolGeom g = window_geom(op, x, S, a, a.to_bool("ceil_mode"), true);
  bool fl = is_floating(x.dtype());
  std::vector<double> xd = fl ? to_double_vec(x) : std::vector<double>(), od(static_cast<size_t>(g.planes * g.out_plane));
  std::vector<int64_t> xi = fl ? std::vector<int64_t>() : to_int64_vec(x), oi(od.size()), idx(od.size());
  std::vector<int64_t> lo(S), cnt(S);
  for (int64_t p = 0; p < g.planes; ++p)
    ref_for_each_index(g.out, [&](const std::vector<int64_t>& o) {
      for (size_t d = 0; d < S; ++d) {
        int64_t s = o[d] * g.stride[d] - g.pad[d];
        int64_t e = std::min(s + (g.k[d] - 1) * g.dil[d] + 1, g.in[d]);
        while (s < 0) s += g.dil[d];
        lo[d] = s;
        cnt[d] = e > s ? (e - s + g.dil[d] - 1) / g.dil[d] : 0;
      }
      std::vector<int64_t> first(S);
      for (size_t d = 0; d < S; ++d) first[d] = lo[d];
      int64_t best_at = flat(first, g.in);
      double bd = -std::numeric_limits<double>::infinity();
      int64_t bi = std::numeric_limits<int64_t>::min();
      ref_for_each_index(cnt, [&](const std::vector<int64_t>& w) {
        std::vector<int64_t> pos(S);
        for (size_t d = 0; d < S; ++d) pos[d] = lo[d] + w[d] * g.dil[d];
        int64_t q = flat(pos, g.in);
        if (fl) {
          double v = xd[static_cast<size_t>(p * g.in_plane + q)];
          if (v > bd || std::isnan(v)) {
            bd = v;
            best_at = q;
          }
        } else {
          int64_t v = xi[static_cast<size_t>(p * g.in_plane + q)];
          if (v > bi) {
            bi = v;
            best_at = q;
          }
        }
      });
      size_t u = static_cast<size_t>(p * g.out_plane + flat(o, g.out));
      od[u] = bd;
      oi[u] = bi;
      idx[u] = best_at;
    });
  HostTensor vals = fl ? from_double_vec(x.dtype(), out_sizes(g), od) : from_int64_vec(x.dtype(), out_sizes(g), oi);
  return {in_memory_format_of(vals, x), in_memory_format_of(from_int64_vec(DType::Int64, out_sizes(g), idx), x)};
}

Out k_max_pool2d(const RtArgs& a, KernelContext&) { return max_pool(a, 2); }
Out k_max_pool3d(const RtArgs& a, KernelContext&) { return max_pool(a, 3); }

Out k_max_pool2d_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& x = a.tensor("self");
  const HostTensor& ind = a.tensor("indices");
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"max_pool2d_with_indices_backward\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  if (ind.dtype() != DType::Int64) kernel_error(op, std::string("Expected indices of dtype Long, got ") + dtype_aten_name(ind.dtype()));
  PoolGeom g = window_geom(op, x, 2, a, a.to_bool("ceil_mode"), true);
  if (go.sizes() != out_sizes(g) || ind.sizes() != out_sizes(g))
    kernel_error(op, "Expected grad_output and indices of size " + shape_str(out_sizes(g)) + ", but got " + shape_str(go.sizes()) + " and " +
                         shape_str(ind.sizes()));
  std::vector<double> gv = to_double_vec(go), gi(static_cast<size_t>(x.numel()), 0.0);
  std::vector<int64_t> iv = to_int64_vec(ind);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t o = 0; o < g.out_plane; ++o) {
      size_t u = static_cast<size_t>(p * g.out_plane + o);
      if (iv[u] < 0 || iv[u] >= g.in_plane)
        kernel_error(op, "index " + std::to_string(iv[u]) + " is out of bounds for a plane of " + std::to_string(g.in_plane) + " elements");
      gi[static_cast<size_t>(p * g.in_plane + iv[u])] += gv[u];
    }
  return {in_memory_format_of(from_double_vec(x.dtype(), x.sizes(), gi), x)};
}

}  // namespace

std::vector<KernelImpl> pool_kernel_impls() {
  return {
      {"aten.avg_pool1d.default", k_avg_pool1d},
      {"aten.avg_pool2d.default", k_avg_pool2d},
      {"aten.avg_pool3d.default", k_avg_pool3d},
      {"aten.avg_pool2d_backward.default", k_avg_pool2d_backward},
      {"aten.adaptive_avg_pool1d.default", k_adaptive_avg_pool1d},
      {"aten._adaptive_avg_pool2d.default", k_adaptive_avg_pool2d},
      {"aten._adaptive_avg_pool3d.default", k_adaptive_avg_pool3d},
      {"aten._adaptive_avg_pool2d_backward.default", k_adaptive_avg_pool2d_backward},
      {"aten.max_pool2d_with_indices.default", k_max_pool2d},
      {"aten.max_pool3d_with_indices.default", k_max_pool3d},
      {"aten.max_pool2d_with_indices_backward.default", k_max_pool2d_backward},
  };
}

}  // namespace toroid::ops
