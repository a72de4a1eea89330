#include "blas.h"

#include <cblas.h>

#include <cmath>
#include <cstring>

#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"

namespace toroid::runtime {

using ops::HostTensor;

namespace {

// A 2-d view as BLAS sees it: a pointer, a transpose flag and a leading dimension; or a
// contiguous copy when the strides fit neither layout.
struct Matrix {
  const std::byte* data;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
  HostTensor keep;  // a contiguous copy, when one was needed
};

Matrix as_matrix(const HostTensor& t, int64_t offset_elems) {
  int64_t rows = t.sizes()[t.dim() - 2], cols = t.sizes()[t.dim() - 1];
  int64_t rs = t.strides()[t.dim() - 2], cs = t.strides()[t.dim() - 1];
  const std::byte* p = t.data() + offset_elems * t.element_size();
  if ((cs == 1 || cols <= 1) && rs >= std::max<int64_t>(cols, 1)) return {p, CblasNoTrans, rs, {}};
  if ((rs == 1 || rows <= 1) && cs >= std::max<int64_t>(rows, 1)) return {p, CblasTrans, cs, {}};
  HostTensor sub = t.as_strided({rows, cols}, {rs, cs}, t.offset() + offset_elems);
  HostTensor c = sub.clone();
  return {c.data(), CblasNoTrans, std::max<int64_t>(cols, 1), c};
}

void check(const HostTensor& out) {
  int64_t cols = out.sizes()[out.dim() - 1];
  if (!(out.strides()[out.dim() - 1] == 1 || cols <= 1))
    TOROID_INTERNAL_ERROR("matrix product result is not row-major: " + out.describe());
  if (out.dtype() != DType::Float32 && out.dtype() != DType::Float64)
    TOROID_INTERNAL_ERROR("BLAS on " + out.describe());
}

// c = alpha * a @ b + beta * c for one matrix of each.
void gemm(const HostTensor& a, int64_t ao, const HostTensor& b, int64_t bo, const HostTensor& c, int64_t co,
          double alpha, double beta) {
  int64_t m = c.sizes()[c.dim() - 2], n = c.sizes()[c.dim() - 1], k = a.sizes()[a.dim() - 1];
  if (m == 0 || n == 0) return;
  Matrix A = as_matrix(a, ao), B = as_matrix(b, bo);
  int64_t ldc = std::max<int64_t>(c.strides()[c.dim() - 2], std::max<int64_t>(n, 1));
  std::byte* C = c.data() + co * c.element_size();
  if (c.dtype() == DType::Float32)
    cblas_sgemm(CblasRowMajor, A.trans, B.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                static_cast<float>(alpha), reinterpret_cast<const float*>(A.data), static_cast<int>(A.ld),
                reinterpret_cast<const float*>(B.data), static_cast<int>(B.ld), static_cast<float>(beta),
                reinterpret_cast<float*>(C), static_cast<int>(ldc));
  else
    cblas_dgemm(CblasRowMajor, A.trans, B.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha,
                reinterpret_cast<const double*>(A.data), static_cast<int>(A.ld), reinterpret_cast<const double*>(B.data),
                static_cast<int>(B.ld), beta, reinterpret_cast<double*>(C), static_cast<int>(ldc));
}

bool half(DType d) { return d == DType::BFloat16 || d == DType::Float16; }

// A bf16 or f16 result computed by `f32` into an fp32 tensor of its sizes, then rounded once into
// it (PyTorch's CPU matmuls of these types accumulate in fp32 too). The operands are converted
// copies: O(n^2) work beside the product's O(n^3).
template <class F>
void through_f32(const char* op, const HostTensor& out, F f32) {
  HostTensor wide = HostTensor::zeros(DType::Float32, out.sizes());
  f32(wide);
  ops::copy_into(op, out, wide);
}

HostTensor widened(const HostTensor& t) { return half(t.dtype()) ? t.to(DType::Float32) : t; }

}  // namespace

void blas_mm(const HostTensor& a, const HostTensor& b, const HostTensor& out) {
  if (half(out.dtype()))
    return through_f32("mm", out, [&](const HostTensor& w) { blas_mm(widened(a), widened(b), w); });
  check(out);
  if (a.sizes()[1] == 0) {
    ops::copy_into("mm", out, HostTensor::zeros(out.dtype(), out.sizes()));
    return;
  }
  gemm(a, 0, b, 0, out, 0, 1.0, 0.0);
}

void blas_bmm(const HostTensor& a, const HostTensor& b, const HostTensor& out) {
  if (half(out.dtype()))
    return through_f32("bmm", out, [&](const HostTensor& w) { blas_bmm(widened(a), widened(b), w); });
  check(out);
  if (a.sizes()[2] == 0) {
    ops::copy_into("bmm", out, HostTensor::zeros(out.dtype(), out.sizes()));
    return;
  }
  for (int64_t i = 0; i < out.sizes()[0]; ++i)
    gemm(a, i * a.strides()[0], b, i * b.strides()[0], out, i * out.strides()[0], 1.0, 0.0);
}

void blas_addmm(const HostTensor& bias, const HostTensor& a, const HostTensor& b, double beta, double alpha,
                const HostTensor& out) {
  if (half(out.dtype())) {
    return through_f32("addmm", out, [&](const HostTensor& w) {
      blas_addmm(widened(bias), widened(a), widened(b), beta, alpha, w);
    });
  }
  check(out);
  if (beta == 0.0) {
    ops::copy_into("addmm", out, HostTensor::zeros(out.dtype(), out.sizes()));
  } else {
    ops::copy_into("addmm", out, ops::broadcast_to("addmm", bias, out.sizes()));
  }
  if (a.sizes()[1] == 0) {
    if (beta != 1.0 && beta != 0.0) {
      for (int64_t i = 0; i < out.numel(); ++i) out.set_double(i, out.get_double(i) * beta);
    }
    return;
  }
  gemm(a, 0, b, 0, out, 0, alpha, beta == 0.0 ? 0.0 : beta);
}

template <class T>
void activate_contiguous(T* p, int64_t n, bool gelu) {
  const T kBeta = static_cast<T>(std::sqrt(2.0 / M_PI)), kKappa = static_cast<T>(0.044715);
  for (int64_t i = 0; i < n; ++i) {
    T x = p[i];
    p[i] = gelu ? T(0.5) * x * (T(1) + std::tanh(kBeta * (x + kKappa * x * x * x))) : (x > 0 || std::isnan(x) ? x : T(0));
  }
}

void activate(const HostTensor& out, bool gelu) {
  TOROID_CHECK(out.is_contiguous(), "activate: the matmul output is contiguous");
  std::byte* base = out.storage()->data() + out.offset() * out.element_size();
  if (out.dtype() == DType::Float32) return activate_contiguous(reinterpret_cast<float*>(base), out.numel(), gelu);
  if (out.dtype() == DType::Float64) return activate_contiguous(reinterpret_cast<double*>(base), out.numel(), gelu);
  if (half(out.dtype())) {
    HostTensor wide = out.to(DType::Float32);
    activate(wide, gelu);
    return ops::copy_into("_addmm_activation", out, wide);
  }
  TOROID_INTERNAL_ERROR(std::string("activate: no BLAS matmul of ") + dtype_short_name(out.dtype()));
}

}  // namespace toroid::runtime
