// Reference kernels of the fft ops: a plain DFT in double, O(n^2) per line, along each
// transformed dim in turn (exact rather than fast). Results take the layout of ATen's CPU
// kernels, as the metas in meta_fft.cpp do.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "ref_families.h"
#include "toroid/ops/impl.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {
namespace {

using Out = std::vector<RtValue>;
using cplx = std::complex<double>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

// A row-major buffer of complex values with its sizes.
struct Buffer {
  std::vector<int64_t> sizes;
  std::vector<cplx> v;
};

Buffer load(const HostTensor& t) {
  Buffer b{t.sizes(), {}};
  b.v.reserve(static_cast<size_t>(t.numel()));
  for_each_element<1>(t.sizes(), {&t}, [&](const std::array<std::byte*, 1>& p) { b.v.push_back(load_complex(t.dtype(), p[0])); });
  return b;
}

// e^{sign * 2 pi i k / n} for k in [0, n); exact at the quarter points.
std::vector<cplx> twiddles(int64_t n, int sign) {
  std::vector<cplx> w(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double c, s;
    if (4 * k % n == 0) {
      static constexpr double kc[] = {1, 0, -1, 0}, ks[] = {0, 1, 0, -1};
      c = kc[4 * k / n], s = ks[4 * k / n];
    } else {
      double t = 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
      c = std::cos(t), s = std::sin(t);
    }
    w[static_cast<size_t>(k)] = {c, sign * s};
  }
  return w;
}

// Applies `line(in, out)` to every line of b along dim, replacing its length by out_len.
template <class F>
Buffer map_lines(const Buffer& b, int64_t dim, int64_t out_len, F&& line) {
  Buffer r{b.sizes, {}};
  r.sizes[static_cast<size_t>(dim)] = out_len;
  int64_t in_len = b.sizes[static_cast<size_t>(dim)], outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= b.sizes[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < b.sizes.size(); ++d) inner *= b.sizes[d];
  r.v.assign(static_cast<size_t>(outer * out_len * inner), cplx{});
  std::vector<cplx> in(static_cast<size_t>(in_len)), out(static_cast<size_t>(out_len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < in_len; ++k) in[static_cast<size_t>(k)] = b.v[static_cast<size_t>((o * in_len + k) * inner + i)];
      line(in, out);
      for (int64_t k = 0; k < out_len; ++k) r.v[static_cast<size_t>((o * out_len + k) * inner + i)] = out[static_cast<size_t>(k)];
    }
  }
  return r;
}

// A complex DFT along dim: out[j] = sum_k in[k] e^{sign 2 pi i jk/n}.
Buffer dft(const Buffer& b, int64_t dim, int sign) {
  int64_t n = b.sizes[static_cast<size_t>(dim)];
  std::vector<cplx> w = twiddles(n, sign);
  return map_lines(b, dim, n, [&](const std::vector<cplx>& in, std::vector<cplx>& out) {
    for (int64_t j = 0; j < n; ++j) {
      cplx acc{};
      for (int64_t k = 0; k < n; ++k) acc += in[static_cast<size_t>(k)] * w[static_cast<size_t>(j * k % n)];
      out[static_cast<size_t>(j)] = acc;
    }
  });
}

// The Hermitian inverse along dim to n real points from the first n/2+1 bins: the imaginary
// parts of the bins without a mirror (0, and n/2 for even n) are ignored, as in pocketfft/MKL.
Buffer hermitian_idft(const Buffer& b, int64_t dim, int64_t n) {
  std::vector<cplx> w = twiddles(n, +1);
  int64_t half = n / 2 + 1;
  return map_lines(b, dim, n, [&](const std::vector<cplx>& in, std::vector<cplx>& out) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < half; ++k) {
        double f = k == 0 || 2 * k == n ? 1.0 : 2.0;
        acc += f * (in[static_cast<size_t>(k)] * w[static_cast<size_t>(j * k % n)]).real();
      }
      out[static_cast<size_t>(j)] = acc;
    }
  });
}

// 1, 1/sqrt(n) or 1/n (ATen's fft_norm_mode: none, by_root_n, by_n).
double norm_scale(const std::string& op, int64_t mode, double n) {
  switch (mode) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(n);
    case 2: return 1.0 / n;
    default: kernel_error(op, "normalization must be 0 (none), 1 (by 1/sqrt(n)) or 2 (by 1/n), got " + std::to_string(mode));
  }
}

std::vector<int64_t> fft_dims(const std::string& op, const RtArgs& a, int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d : a.int_list("dim")) {
    d = wrap_dim(op, d, rank);
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) kernel_error(op, "dim " + std::to_string(d) + " appears twice");
    dims.push_back(d);
  }
  if (dims.empty()) kernel_error(op, "dim must name at least one dimension");
  return dims;
}

std::vector<int64_t> by_stride_desc(std::vector<int64_t> dims, const std::vector<int64_t>& strides) {
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t x, int64_t y) {
    return strides[static_cast<size_t>(x)] > strides[static_cast<size_t>(y)];
  });
  return dims;
}

// ATen's _exec_fft output strides (see fft_layout in meta_fft.cpp).
std::vector<int64_t> fft_layout(const std::vector<int64_t>& in_strides, const std::vector<int64_t>& sizes,
                                const std::vector<int64_t>& dims) {
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) batch.push_back(d);
  batch = by_stride_desc(batch, in_strides);
  std::vector<int64_t> st(sizes.size());
  int64_t inner = 1, batch_numel = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    st[static_cast<size_t>(dims[i])] = inner;
    inner *= std::max<int64_t>(sizes[static_cast<size_t>(dims[i])], 1);
  }
  for (size_t i = batch.size(); i-- > 0;) {
    st[static_cast<size_t>(batch[i])] = batch_numel * inner;
    batch_numel *= sizes[static_cast<size_t>(batch[i])];
  }
  return st;
}

// A tensor of dtype with these strides holding b's values times scale.
HostTensor store(const Buffer& b, DType dtype, const std::vector<int64_t>& strides, double scale) {
  HostTensor t = HostTensor::empty_strided(dtype, b.sizes, strides);
  size_t i = 0;
  for_each_element<1>(t.sizes(), {&t}, [&](const std::array<std::byte*, 1>& p) { store_complex(dtype, p[0], b.v[i++] * scale); });
  return t;
}

void check_points(const std::string& op, int64_t n) {
  if (n < 1) kernel_error(op, "Invalid number of data points (" + std::to_string(n) + ") specified");
}

Out k_fft_r2c(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  if (!is_floating(x.dtype())) kernel_error(op, std::string("expected a floating-point input, got ") + dtype_short_name(x.dtype()));
  std::optional<DType> out_dtype = complex_of(x.dtype());
  if (!out_dtype) kernel_error(op, std::string("Unsupported dtype ") + dtype_aten_name(x.dtype()));
  std::vector<int64_t> dims = fft_dims(op, a, x.dim());
  Buffer b = load(x);
  double points = 1;
  for (int64_t d : dims) {
    check_points(op, x.size(d));
    points *= static_cast<double>(x.size(d));
    b = dft(b, d, -1);
  }
  int64_t last = dims.back();
  if (a.to_bool("onesided")) {
    int64_t half = x.size(last) / 2 + 1;
    b = map_lines(b, last, half, [&](const std::vector<cplx>& in, std::vector<cplx>& out) {
      std::copy(in.begin(), in.begin() + half, out.begin());
    });
  }
  std::vector<int64_t> order = by_stride_desc({dims.begin(), dims.end() - 1}, x.strides());
  order.push_back(last);
  std::vector<int64_t> strides = fft_layout(x.strides(), b.sizes, order);
  return {store(b, *out_dtype, strides, norm_scale(op, a.to_int("normalization"), points))};
}

Out k_fft_c2r(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  if (!is_complex(x.dtype())) kernel_error(op, std::string("expected a complex input, got ") + dtype_short_name(x.dtype()));
  std::vector<int64_t> dims = fft_dims(op, a, x.dim());
  int64_t n = a.to_int("last_dim_size"), last = dims.back();
  check_points(op, n);
  if (x.size(last) != n / 2 + 1)
    kernel_error(op, "the last transformed dim has " + std::to_string(x.size(last)) + " bins but last_dim_size " +
                         std::to_string(n) + " needs " + std::to_string(n / 2 + 1));
  Buffer b = load(x);
  double points = static_cast<double>(n);
  std::vector<int64_t> in_strides = x.strides();
  if (dims.size() > 1) {
    std::vector<int64_t> c2c(dims.begin(), dims.end() - 1);
    for (int64_t d : c2c) {
      check_points(op, x.size(d));
      points *= static_cast<double>(x.size(d));
      b = dft(b, d, +1);
    }
    in_strides = fft_layout(x.strides(), x.sizes(), by_stride_desc(c2c, x.strides()));
  }
  b = hermitian_idft(b, last, n);
  std::vector<int64_t> strides = fft_layout(in_strides, b.sizes, {last});
  return {store(b, complex_value_type(x.dtype()), strides, norm_scale(op, a.to_int("normalization"), points))};
}

}  // namespace

std::vector<KernelImpl> fft_kernel_impls() {
  return {{"aten._fft_r2c.default", k_fft_r2c}, {"aten._fft_c2r.default", k_fft_c2r}};
}

}  // namespace toroid::ops
