// Reference kernels: the rest. _cdist_forward, _pdist_forward, grid_sampler_2d (bilinear,
// nearest, bicubic; zeros, border, reflection padding; align_corners), col2im,
// upsample_bilinear2d.vec and upsample_nearest2d.vec (output_size or scale_factors,
// align_corners), reflection_pad1d/2d/3d and replication_pad2d/3d (negative pads crop).
//
// Source coordinates of the resampling ops are computed in PyTorch's opmath type (float for
// f32/f16/bf16 inputs, double for f64) so that they pick the same pixels; the interpolation
// itself is done in double and rounded once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

void require_float(const std::string& op, DType d, const char* what) {
  if (!is_floating(d)) kernel_error(op, std::string(what) + " only supports floating-point dtypes, got " + dtype_aten_name(d));
}

// ---- distances ----------------------------------------------------------------------------------

double p_distance(const double* a, const double* b, int64_t m, double p) {
  if (p == 0) {
    double c = 0;
    for (int64_t k = 0; k < m; ++k) c += (a[k] != b[k]) ? 1 : 0;
    return c;
  }
  if (std::isinf(p)) {
    double mx = 0;
    for (int64_t k = 0; k < m; ++k) {
      double d = std::fabs(a[k] - b[k]);
      if (std::isnan(d) || d > mx) mx = d;
    }
    return mx;
  }
  double s = 0;
  for (int64_t k = 0; k < m; ++k) {
    double d = std::fabs(a[k] - b[k]);
    s += p == 1 ? d : p == 2 ? d * d : std::pow(d, p);
  }
  return p == 1 ? s : p == 2 ? std::sqrt(s) : std::pow(s, 1.0 / p);
}

Out k_cdist(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x1 = a.tensor("x1");
  const HostTensor& x2 = a.tensor("x2");
  double p = a.to_double("p");
  require_float(op, x1.dtype(), "cdist");
  if (x2.dtype() != x1.dtype())
    kernel_error(op, std::string("X1 and X2 must have the same dtype, got ") + dtype_aten_name(x1.dtype()) + " and " + dtype_aten_name(x2.dtype()));
  if (x1.dim() < 2 || x2.dim() < 2) kernel_error(op, "cdist only supports at least 2D tensors, X1 got: " + std::to_string(x1.dim()) + "D, X2 got: " + std::to_string(x2.dim()) + "D");
  if (x1.sizes().back() != x2.sizes().back())
    kernel_error(op, "X1 and X2 must have the same number of columns. X1: " + std::to_string(x1.sizes().back()) + " X2: " + std::to_string(x2.sizes().back()));
  if (!(p >= 0)) kernel_error(op, "cdist only supports non-negative p values");
  int64_t P = x1.sizes()[static_cast<size_t>(x1.dim() - 2)], R = x2.sizes()[static_cast<size_t>(x2.dim() - 2)], M = x1.sizes().back();
  std::vector<int64_t> b1(x1.sizes().begin(), x1.sizes().end() - 2), b2(x2.sizes().begin(), x2.sizes().end() - 2);
  std::vector<int64_t> batch = broadcast_shapes(op, b1, b2);
  std::vector<int64_t> s1 = batch, s2 = batch, so = batch;
  s1.insert(s1.end(), {P, M});
  s2.insert(s2.end(), {R, M});
  so.insert(so.end(), {P, R});
  std::vector<double> v1 = to_double_vec(broadcast_to(op, x1, s1)), v2 = to_double_vec(broadcast_to(op, x2, s2)), out(static_cast<size_t>(numel_of(so)));
  int64_t nb = numel_of(batch);
  for (int64_t q = 0; q < nb; ++q)
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j)
        out[static_cast<size_t>((q * P + i) * R + j)] = p_distance(&v1[static_cast<size_t>((q * P + i) * M)], &v2[static_cast<size_t>((q * R + j) * M)], M, p);
  return {from_double_vec(x1.dtype(), so, out)};
}

Out k_pdist(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  double p = a.to_double("p");
  require_float(op, x.dtype(), "pdist");
  if (x.dim() != 2) kernel_error(op, "pdist only supports 2D tensors, got: " + std::to_string(x.dim()) + "D");
  if (!(p >= 0)) kernel_error(op, "pdist only supports non-negative p values");
  int64_t N = x.sizes()[0], M = x.sizes()[1];
  std::vector<double> v = to_double_vec(x), out;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = i + 1; j < N; ++j) out.push_back(p_distance(&v[static_cast<size_t>(i * M)], &v[static_cast<size_t>(j * M)], M, p));
  return {from_double_vec(x.dtype(), {static_cast<int64_t>(out.size())}, out)};
}

// ---- grid_sampler_2d ----------------------------------------------------------------------------

template <class T>
T unnormalize(T c, int64_t size, bool align) {
  return align ? ((c + 1) / 2) * static_cast<T>(size - 1) : ((c + 1) * static_cast<T>(size) - 1) / 2;
}
template <class T>
T clip(T c, int64_t size) {
  return std::min(static_cast<T>(size - 1), std::max(c, static_cast<T>(0)));
}
template <class T>
T reflect(T c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  T mn = static_cast<T>(twice_low) / 2, span = static_cast<T>(twice_high - twice_low) / 2;
  c = std::fabs(c - mn);
  T extra = std::fmod(c, span);
  int64_t flips = static_cast<int64_t>(std::floor(c / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}
// Padding applied to an unnormalized coordinate (0 zeros, 1 border, 2 reflection).
template <class T>
T pad_coord(T c, int64_t size, int64_t padding, bool align) {
  if (padding == 1) {
    c = clip(c, size);
  } else if (padding == 2) {
    c = align ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    c = clip(c, size);
  }
  // Far out of range or non-finite coordinates read as outside (PyTorch's safe downgrade).
  if (!std::isfinite(c) || c > static_cast<T>(std::numeric_limits<int32_t>::max() - 1) || c < static_cast<T>(std::numeric_limits<int32_t>::min() + 1))
    return static_cast<T>(-100);
  return c;
}

template <class T>
void grid_sample(const std::vector<double>& in, const std::vector<double>& grid, std::vector<double>& out, int64_t N, int64_t C, int64_t H,
                 int64_t W, int64_t Ho, int64_t Wo, int64_t mode, int64_t padding, bool align) {
  auto at = [&](int64_t n, int64_t c, int64_t y, int64_t x) -> double {
    if (y < 0 || y >= H || x < 0 || x >= W) return 0.0;
    return in[static_cast<size_t>(((n * C + c) * H + y) * W + x)];
  };
  const T A = static_cast<T>(-0.75);
  auto cc1 = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto cc2 = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < Ho; ++h)
      for (int64_t w = 0; w < Wo; ++w) {
        size_t g = static_cast<size_t>(((n * Ho + h) * Wo + w) * 2);
        T gx = static_cast<T>(grid[g]), gy = static_cast<T>(grid[g + 1]);
        for (int64_t c = 0; c < C; ++c) {
          double v = 0;
          if (mode == 2) {
            T ix = unnormalize(gx, W, align), iy = unnormalize(gy, H, align);
            T fx = std::floor(ix), fy = std::floor(iy);
            T tx = ix - fx, ty = iy - fy;
            T cx[4] = {cc2(tx + 1), cc1(tx), cc1(1 - tx), cc2(2 - tx)}, cy[4] = {cc2(ty + 1), cc1(ty), cc1(1 - ty), cc2(2 - ty)};
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              for (int j = 0; j < 4; ++j) {
                T px = pad_coord(fx - 1 + static_cast<T>(j), W, padding, align), py = pad_coord(fy - 1 + static_cast<T>(i), H, padding, align);
                row += static_cast<double>(cx[j]) * at(n, c, static_cast<int64_t>(py), static_cast<int64_t>(px));
              }
              v += static_cast<double>(cy[i]) * row;
            }
          } else {
            T ix = pad_coord(unnormalize(gx, W, align), W, padding, align), iy = pad_coord(unnormalize(gy, H, align), H, padding, align);
            if (mode == 1) {
              v = at(n, c, static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)));
            } else {
              T x0 = std::floor(ix), y0 = std::floor(iy), x1 = x0 + 1, y1 = y0 + 1;
              int64_t ix0 = static_cast<int64_t>(x0), iy0 = static_cast<int64_t>(y0);
              double nw = static_cast<double>((x1 - ix) * (y1 - iy)), ne = static_cast<double>((ix - x0) * (y1 - iy));
              double sw = static_cast<double>((x1 - ix) * (iy - y0)), se = static_cast<double>((ix - x0) * (iy - y0));
              v = at(n, c, iy0, ix0) * nw + at(n, c, iy0, ix0 + 1) * ne + at(n, c, iy0 + 1, ix0) * sw + at(n, c, iy0 + 1, ix0 + 1) * se;
            }
          }
          out[static_cast<size_t>(((n * C + c) * Ho + h) * Wo + w)] = v;
        }
      }
}

Out k_grid_sampler_2d(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  const HostTensor& grid = a.tensor("grid");
  int64_t mode = a.to_int("interpolation_mode"), padding = a.to_int("padding_mode");
  bool align = a.to_bool("align_corners");
  require_float(op, x.dtype(), "grid_sampler");
  if (grid.dtype() != x.dtype())
    kernel_error(op, std::string("grid_sampler(): expected input and grid to have the same dtype, but input has ") + dtype_aten_name(x.dtype()) +
                         " and grid has " + dtype_aten_name(grid.dtype()));
  if (x.dim() != 4 || grid.dim() != 4)
    kernel_error(op, "grid_sampler(): expected 4D input and grid with same number of dimensions, but got input with sizes " + shape_str(x.sizes()) +
                         " and grid with sizes " + shape_str(grid.sizes()));
  if (grid.sizes()[0] != x.sizes()[0])
    kernel_error(op, "grid_sampler(): expected grid and input to have same batch size, but got input with sizes " + shape_str(x.sizes()) +
                         " and grid with sizes " + shape_str(grid.sizes()));
  if (grid.sizes()[3] != 2)
    kernel_error(op, "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes " + shape_str(grid.sizes()));
  if (mode < 0 || mode > 2) kernel_error(op, "grid_sampler(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got " + std::to_string(mode));
  if (padding < 0 || padding > 2) kernel_error(op, "grid_sampler(): padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got " + std::to_string(padding));
  for (int64_t d = 2; d < 4; ++d)
    if (x.sizes()[static_cast<size_t>(d)] <= 0) kernel_error(op, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes " + shape_str(x.sizes()));
  int64_t N = x.sizes()[0], C = x.sizes()[1], H = x.sizes()[2], W = x.sizes()[3], Ho = grid.sizes()[1], Wo = grid.sizes()[2];
  std::vector<double> in = to_double_vec(x), gv = to_double_vec(grid), out(static_cast<size_t>(N * C * Ho * Wo));
  if (x.dtype() == DType::Float64) grid_sample<double>(in, gv, out, N, C, H, W, Ho, Wo, mode, padding, align);
  else grid_sample<float>(in, gv, out, N, C, H, W, Ho, Wo, mode, padding, align);
  return {from_double_vec(x.dtype(), {N, C, Ho, Wo}, out)};
}

// ---- col2im ---------------------------------------------------------------------------------------

Out k_col2im(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> os = a.int_list("output_size"), k = a.int_list("kernel_size"), dil = a.int_list("dilation"),
                       pad = a.int_list("padding"), st = a.int_list("stride");
  for (auto* v : {&os, &k, &dil, &pad, &st})
    if (v->size() != 2) kernel_error(op, "It is expected output_size, kernel_size, dilation, padding and stride to have 2 elements each");
  require_int32_params(op, os, "output_size");
  require_int32_params(op, k, "kernel_size");
  require_int32_params(op, dil, "dilation");
  require_int32_params(op, pad, "padding");
  require_int32_params(op, st, "stride");
  for (size_t d = 0; d < 2; ++d) {
    if (k[d] <= 0) kernel_error(op, "kernel size should be greater than zero, but got kernel_height: " + std::to_string(k[0]) + " kernel_width: " + std::to_string(k[1]));
    if (dil[d] <= 0) kernel_error(op, "dilation should be greater than zero, but got dilation_height: " + std::to_string(dil[0]) + " dilation_width: " + std::to_string(dil[1]));
    if (pad[d] < 0) kernel_error(op, "padding should be non-negative, but got pad_height: " + std::to_string(pad[0]) + " pad_width: " + std::to_string(pad[1]));
    if (st[d] <= 0) kernel_error(op, "stride should be greater than zero, but got stride_height: " + std::to_string(st[0]) + " stride_width: " + std::to_string(st[1]));
  }
  require_float(op, x.dtype(), "col2im");
  bool batched = x.dim() == 3;
  if (x.dim() != 2 && x.dim() != 3)
    kernel_error(op, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: " + shape_str(x.sizes()));
  int64_t N = batched ? x.sizes()[0] : 1, CK = x.sizes()[batched ? 1 : 0], L = x.sizes()[batched ? 2 : 1];
  int64_t kk = k[0] * k[1];
  if (CK % kk != 0)
    kernel_error(op, "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=" + std::to_string(CK) +
                         " and kernel_size=(" + std::to_string(k[0]) + ", " + std::to_string(k[1]) + ")");
  int64_t nbh = (os[0] + 2 * pad[0] - (dil[0] * (k[0] - 1) + 1)) / st[0] + 1;
  int64_t nbw = (os[1] + 2 * pad[1] - (dil[1] * (k[1] - 1) + 1)) / st[1] + 1;
  if (nbh < 1 || nbw < 1 || L != nbh * nbw)
    kernel_error(op, "Given output_size=(" + std::to_string(os[0]) + ", " + std::to_string(os[1]) + "), kernel_size=(" + std::to_string(k[0]) + ", " +
                         std::to_string(k[1]) + "), dilation=(" + std::to_string(dil[0]) + ", " + std::to_string(dil[1]) + "), padding=(" +
                         std::to_string(pad[0]) + ", " + std::to_string(pad[1]) + "), stride=(" + std::to_string(st[0]) + ", " + std::to_string(st[1]) +
                         "), expected size of input's dimension 2 to match the calculated number of sliding blocks " + std::to_string(nbh) + " * " +
                         std::to_string(nbw) + " = " + std::to_string(nbh * nbw) + ", but got input.size(2)=" + std::to_string(L) + ".");
  int64_t C = CK / kk, OH = os[0], OW = os[1];
  std::vector<double> in = to_double_vec(x), out(static_cast<size_t>(N * C * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < k[0]; ++i)
        for (int64_t j = 0; j < k[1]; ++j)
          for (int64_t bh = 0; bh < nbh; ++bh)
            for (int64_t bw = 0; bw < nbw; ++bw) {
              int64_t h = bh * st[0] - pad[0] + i * dil[0], w = bw * st[1] - pad[1] + j * dil[1];
              if (h < 0 || h >= OH || w < 0 || w >= OW) continue;
              out[static_cast<size_t>(((n * C + c) * OH + h) * OW + w)] += in[static_cast<size_t>((n * CK + (c * k[0] + i) * k[1] + j) * L + bh * nbw + bw)];
            }
  std::vector<int64_t> sizes{C, OH, OW};
  if (batched) sizes.insert(sizes.begin(), N);
  return {from_double_vec(x.dtype(), sizes, out)};
}

// ---- upsampling ------------------------------------------------------------------------------------

struct Upsample {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  std::optional<double> sh, sw;  // the scale factors, when given
};

Upsample upsample_setup(const std::string& op, const HostTensor& x, const RtArgs& a) {
  Upsample u;
  if (x.dim() != 4) kernel_error(op, "Expected a 4D input (N, C, H, W), got " + shape_str(x.sizes()));
  u.N = x.sizes()[0];
  u.C = x.sizes()[1];
  u.H = x.sizes()[2];
  u.W = x.sizes()[3];
  std::optional<std::vector<int64_t>> os = a.opt_int_list("output_size");
  const RtValue& sf = a.get("scale_factors");
  if (os.has_value() == !sf.is_none()) kernel_error(op, "Must specify exactly one of output_size and scale_factors");
  if (os) {
    if (os->size() != 2) kernel_error(op, "It is expected output_size equals to 2, but got size " + std::to_string(os->size()));
    u.OH = (*os)[0];
    u.OW = (*os)[1];
  } else {
    if (sf.kind() != RtValue::Kind::List || sf.list().size() != 2)
      kernel_error(op, "It is expected scale_factors to be a list of 2 floats");
    u.sh = sf.list()[0].to_double();
    u.sw = sf.list()[1].to_double();
    double oh = std::floor(static_cast<double>(u.H) * *u.sh), ow = std::floor(static_cast<double>(u.W) * *u.sw);
    if (!(oh >= 0 && oh < 9.2e18 && ow >= 0 && ow < 9.2e18)) kernel_error(op, "scale_factors give an output size out of range");
    u.OH = static_cast<int64_t>(oh);
    u.OW = static_cast<int64_t>(ow);
  }
  if (u.H <= 0 || u.W <= 0 || u.OH <= 0 || u.OW <= 0)
    kernel_error(op, "Input and output sizes should be greater than 0, but got input (H: " + std::to_string(u.H) + ", W: " + std::to_string(u.W) +
                         ") output (H: " + std::to_string(u.OH) + ", W: " + std::to_string(u.OW) + ")");
  return u;
}

// PyTorch's area_pixel_compute_scale in the opmath type T.
template <class T>
T pixel_scale(int64_t in, int64_t out, bool align, std::optional<double> scale) {
  if (align) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : static_cast<T>(0);
  if (scale && *scale > 0) return static_cast<T>(1.0 / *scale);
  return static_cast<T>(in) / static_cast<T>(out);
}

template <class T>
void bilinear_axis(int64_t in, int64_t out, bool align, std::optional<double> scale, std::vector<int64_t>& i0, std::vector<int64_t>& i1,
                   std::vector<double>& l1) {
  T s = pixel_scale<T>(in, out, align, scale);
  for (int64_t o = 0; o < out; ++o) {
    T src = align ? s * static_cast<T>(o) : std::max(s * (static_cast<T>(o) + static_cast<T>(0.5)) - static_cast<T>(0.5), static_cast<T>(0));
    int64_t lo = std::min(static_cast<int64_t>(src), in - 1);
    i0.push_back(lo);
    i1.push_back(lo + (lo < in - 1 ? 1 : 0));
    l1.push_back(static_cast<double>(src - static_cast<T>(lo)));
  }
}

Out k_upsample_bilinear2d(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  require_float(op, x.dtype(), "upsample_bilinear2d");
  bool align = a.to_bool("align_corners");
  Upsample u = upsample_setup(op, x, a);
  std::vector<int64_t> h0, h1, w0, w1;
  std::vector<double> lh, lw;
  if (x.dtype() == DType::Float64) {
    bilinear_axis<double>(u.H, u.OH, align, u.sh, h0, h1, lh);
    bilinear_axis<double>(u.W, u.OW, align, u.sw, w0, w1, lw);
  } else {
    bilinear_axis<float>(u.H, u.OH, align, u.sh, h0, h1, lh);
    bilinear_axis<float>(u.W, u.OW, align, u.sw, w0, w1, lw);
  }
  std::vector<double> in = to_double_vec(x), out(static_cast<size_t>(u.N * u.C * u.OH * u.OW));
  for (int64_t p = 0; p < u.N * u.C; ++p)
    for (int64_t oh = 0; oh < u.OH; ++oh)
      for (int64_t ow = 0; ow < u.OW; ++ow) {
        auto at = [&](int64_t h, int64_t w) { return in[static_cast<size_t>((p * u.H + h) * u.W + w)]; };
        size_t uh = static_cast<size_t>(oh), uw = static_cast<size_t>(ow);
        double a1 = lh[uh], b1 = lw[uw];
        out[static_cast<size_t>((p * u.OH + oh) * u.OW + ow)] =
            (1 - a1) * ((1 - b1) * at(h0[uh], w0[uw]) + b1 * at(h0[uh], w1[uw])) + a1 * ((1 - b1) * at(h1[uh], w0[uw]) + b1 * at(h1[uh], w1[uw]));
      }
  return {in_memory_format_of(from_double_vec(x.dtype(), {u.N, u.C, u.OH, u.OW}, out), x)};
}

// PyTorch's nearest_idx: same size is identity, exact 2x is a shift, else floor(o * scale) in float.
int64_t nearest_idx(int64_t o, int64_t in, int64_t out, std::optional<double> scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  float s = (scale && *scale > 0) ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
}

Out k_upsample_nearest2d(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  if (x.dtype() == DType::Bool) kernel_error(op, "\"upsample_nearest2d\" not implemented for 'Bool'");
  Upsample u = upsample_setup(op, x, a);
  HostTensor out = HostTensor::zeros(x.dtype(), {u.N, u.C, u.OH, u.OW});
  size_t es = static_cast<size_t>(x.element_size());
  for (int64_t n = 0; n < u.N; ++n)
    for (int64_t c = 0; c < u.C; ++c)
      for (int64_t oh = 0; oh < u.OH; ++oh)
        for (int64_t ow = 0; ow < u.OW; ++ow)
          std::memcpy(out.element_ptr({n, c, oh, ow}),
                      x.element_ptr({n, c, nearest_idx(oh, u.H, u.OH, u.sh), nearest_idx(ow, u.W, u.OW, u.sw)}), es);
  return {in_memory_format_of(out, x)};
}

// ---- reflection and replication padding -------------------------------------------------------------

HostTensor pad_impl(const RtArgs& a, size_t S, bool reflection) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> pad = a.int_list("padding");
  if (pad.size() != 2 * S) kernel_error(op, "padding size is expected to be " + std::to_string(2 * S) + ", but got: " + std::to_string(pad.size()));
  require_int32_params(op, pad, "padding");
  if (x.dim() != static_cast<int64_t>(S) + 1 && x.dim() != static_cast<int64_t>(S) + 2)
    kernel_error(op, std::to_string(S + 1) + "D or " + std::to_string(S + 2) + "D (batch mode) tensor expected for input, but got: " + shape_str(x.sizes()));
  if (x.dtype() == DType::Bool) kernel_error(op, std::string("\"") + (reflection ? "reflection_pad" : "replication_pad") + "\" not implemented for 'Bool'");
  size_t lead = static_cast<size_t>(x.dim()) - S;
  for (size_t d = 1; d < lead; ++d)
    if (x.sizes()[d] == 0) kernel_error(op, "Expected input with non-zero sizes in non-batch dims, but got " + shape_str(x.sizes()));
  std::vector<int64_t> out_sizes = x.sizes(), lo(S), in(S);
  for (size_t s = 0; s < S; ++s) {
    size_t d = static_cast<size_t>(x.dim()) - 1 - s;  // pad pairs go from the last dim backwards
    int64_t l = pad[2 * s], r = pad[2 * s + 1], n = x.sizes()[d];
    if (reflection && (l >= n || r >= n))
      kernel_error(op, "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (" + std::to_string(l) + ", " +
                           std::to_string(r) + ") at dimension " + std::to_string(d) + " of input " + shape_str(x.sizes()));
    if (n + l + r < 1)
      kernel_error(op, "input (size " + std::to_string(n) + ") is too small. Calculated output size at dimension " + std::to_string(d) + ": " +
                           std::to_string(n + l + r));
    if (n == 0) kernel_error(op, "Expected input with non-zero spatial sizes, but got " + shape_str(x.sizes()));
    out_sizes[d] = n + l + r;
    lo[S - 1 - s] = l;
    in[S - 1 - s] = n;
  }
  HostTensor out = HostTensor::zeros(x.dtype(), out_sizes);
  size_t es = static_cast<size_t>(x.element_size());
  ref_for_each_index(out_sizes, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> src = o;
    for (size_t s = 0; s < S; ++s) {
      int64_t j = o[lead + s], l = lo[s], n = in[s];
      int64_t i_start = std::max<int64_t>(0, -l), o_start = std::max<int64_t>(0, l), i;
      if (reflection) i = j < l ? 2 * l - j : j < n + l ? j : 2 * (n + l - 1) - j;
      else i = j < l ? l : j < n + l ? j : n + l - 1;
      src[lead + s] = i - o_start + i_start;
    }
    std::memcpy(out.element_ptr(o), x.element_ptr(src), es);
  });
  return out;
}

Out k_reflection_pad1d(const RtArgs& a, KernelContext&) { return {pad_impl(a, 1, true)}; }
Out k_reflection_pad2d(const RtArgs& a, KernelContext&) { return {pad_impl(a, 2, true)}; }
Out k_reflection_pad3d(const RtArgs& a, KernelContext&) { return {pad_impl(a, 3, true)}; }
Out k_replication_pad2d(const RtArgs& a, KernelContext&) { return {pad_impl(a, 2, false)}; }
Out k_replication_pad3d(const RtArgs& a, KernelContext&) { return {pad_impl(a, 3, false)}; }

}  // namespace

std::vector<KernelImpl> misc_kernel_impls() {
  return {
      {"aten._cdist_forward.default", k_cdist},
      {"aten._pdist_forward.default", k_pdist},
      {"aten.grid_sampler_2d.default", k_grid_sampler_2d},
      {"aten.col2im.default", k_col2im},
      {"aten.upsample_bilinear2d.vec", k_upsample_bilinear2d},
      {"aten.upsample_nearest2d.vec", k_upsample_nearest2d},
      {"aten.reflection_pad1d.default", k_reflection_pad1d},
      {"aten.reflection_pad2d.default", k_reflection_pad2d},
      {"aten.reflection_pad3d.default", k_reflection_pad3d},
      {"aten.replication_pad2d.default", k_replication_pad2d},
      {"aten.replication_pad3d.default", k_replication_pad3d},
  };
}

}  // namespace toroid::ops
