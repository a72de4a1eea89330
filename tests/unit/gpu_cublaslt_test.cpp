// Matrix products through cuBLASLt against host loops: row-major and transposed operands,
// batches with a broadcast operand, the bias and activation epilogues, f32 (no TF32), bf16, f16
// and f64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "toroid/graph/half.h"
#include "toroid/runtime/cuda/cublaslt.h"
#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/support/error.h"

namespace {

using namespace toroid::runtime::cuda;
using toroid::DType;

// Deterministic values in [-1, 1) with full f32 mantissas, so TF32 rounding would show.
std::vector<double> values(size_t n, uint32_t seed) {
  std::vector<double> out(n);
  uint64_t s = seed * 2654435761u + 1;
  for (double& v : out) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<double>(s >> 40) / static_cast<double>(1ull << 23) - 1.0;
  }
  return out;
}

// Host values as the device dtype holds them (rounded), and their bytes.
std::vector<double> rounded(const std::vector<double>& v, DType d) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (d) {
      case DType::Float32: out[i] = static_cast<float>(v[i]); break;
      case DType::BFloat16: out[i] = toroid::bf16_to_float(toroid::float_to_bf16(static_cast<float>(v[i]))); break;
      case DType::Float16: out[i] = toroid::f16_to_float(toroid::float_to_f16(static_cast<float>(v[i]))); break;
      default: out[i] = v[i];
    }
  }
  return out;
}

size_t element_size(DType d) { return d == DType::Float64 ? 8 : d == DType::Float32 ? 4 : 2; }

DeviceMemory upload(const std::vector<double>& v, DType d) {
  size_t es = element_size(d);
  std::vector<unsigned char> bytes(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char* dst = bytes.data() + i * es;
    auto f = static_cast<float>(v[i]);
    if (d == DType::Float64) {
      std::memcpy(dst, &v[i], 8);
    } else if (d == DType::Float32) {
      std::memcpy(dst, &f, 4);
    } else {
      uint16_t h = d == DType::BFloat16 ? toroid::float_to_bf16(f) : toroid::float_to_f16(f);
      std::memcpy(dst, &h, 2);
    }
  }
  DeviceMemory mem = DeviceAllocator::global().allocate(bytes.size());
  copy_to_device(mem->ptr, bytes.data(), bytes.size());
  return mem;
}

std::vector<double> download(const DeviceMemory& mem, size_t n, DType d) {
  size_t es = element_size(d);
  std::vector<unsigned char> bytes(n * es);
  synchronize();
  copy_to_host(bytes.data(), mem->ptr, bytes.size());
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = bytes.data() + i * es;
    if (d == DType::Float64) {
      std::memcpy(&out[i], p, 8);
    } else if (d == DType::Float32) {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      out[i] = d == DType::BFloat16 ? toroid::bf16_to_float(h) : toroid::f16_to_float(h);
    }
  }
  return out;
}

// The strided view's element (b, i, j) of host data laid out as the device data is.
double at(const std::vector<double>& data, const MatrixRef& m, int64_t b, int64_t i, int64_t j) {
  return data[static_cast<size_t>(b * m.batch_stride + i * m.row_stride + j * m.col_stride)];
}

// c[b, i, j] = act(alpha * sum_k a[b, i, k] * b[b, k, j] + beta * c_in[b, i, j] + bias[j]), in double.
std::vector<double> reference(const MatmulArgs& args, const std::vector<double>& a, const std::vector<double>& b,
                              const std::vector<double>& c_in, const std::vector<double>& bias) {
  int64_t m = args.a.rows, k = args.a.cols, n = args.b.cols;
  std::vector<double> c(static_cast<size_t>(args.batch * m * n));
  for (int64_t t = 0; t < args.batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += at(a, args.a, t, i, p) * at(b, args.b, t, p, j);
        size_t o = static_cast<size_t>((t * m + i) * n + j);
        double v = args.alpha * acc + (args.beta != 0 ? args.beta * c_in[o] : 0.0) + (bias.empty() ? 0.0 : bias[j]);
        if (args.epilogue == Epilogue::Relu) v = std::max(v, 0.0);
        if (args.epilogue == Epilogue::Gelu)
          v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
        c[o] = v;
      }
  return c;
}

struct Case {
  DType dtype = DType::Float32;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool a_transposed = false, b_transposed = false;
  int64_t a_pad = 0, b_pad = 0;  // extra elements between rows (or columns when transposed)
  bool broadcast_b = false;      // one B for every batch entry
  bool bias = false;
  Epilogue epilogue = Epilogue::None;
  float alpha = 1, beta = 0;
  double tolerance = 0;          // relative to the largest |reference| value
  bool tf32 = false;
  double least_error = 0;        // the largest error must reach this (TF32 rounds visibly)
};

// A strided [rows, cols] view; its buffer holds `batch` of them (or one when broadcast).
MatrixRef view(int64_t rows, int64_t cols, bool transposed, int64_t pad, int64_t batch, bool broadcast,
               size_t* elements) {
  MatrixRef r;
  r.rows = rows;
  r.cols = cols;
  if (transposed) {
    r.row_stride = 1;
    r.col_stride = rows + pad;
  } else {
    r.row_stride = cols + pad;
    r.col_stride = 1;
  }
  int64_t one = rows * cols + (transposed ? cols : rows) * pad;
  r.batch_stride = broadcast ? 0 : one;
  *elements = static_cast<size_t>(broadcast ? one : one * batch);
  return r;
}

void run_case(const Case& cs) {
  MatmulArgs args;
  args.dtype = cs.dtype;
  args.batch = cs.batch;
  size_t a_n = 0, b_n = 0;
  args.a = view(cs.m, cs.k, cs.a_transposed, cs.a_pad, cs.batch, false, &a_n);
  args.b = view(cs.k, cs.n, cs.b_transposed, cs.b_pad, cs.batch, cs.broadcast_b, &b_n);
  args.c_batch_stride = cs.m * cs.n;
  args.alpha = cs.alpha;
  args.beta = cs.beta;
  args.epilogue = cs.epilogue;
  args.tf32 = cs.tf32;
  ASSERT_TRUE(matmul_layout_ok(args.a));
  ASSERT_TRUE(matmul_layout_ok(args.b));

  size_t c_n = static_cast<size_t>(cs.batch * cs.m * cs.n);
  std::vector<double> a = rounded(values(a_n, 1), cs.dtype), b = rounded(values(b_n, 2), cs.dtype);
  std::vector<double> c_in = rounded(values(c_n, 3), cs.dtype);
  std::vector<double> bias = cs.bias ? rounded(values(static_cast<size_t>(cs.n), 4), cs.dtype) : std::vector<double>{};
  DeviceMemory da = upload(a, cs.dtype), db = upload(b, cs.dtype), dc = upload(c_in, cs.dtype);
  DeviceMemory dbias = cs.bias ? upload(bias, cs.dtype) : nullptr;
  args.a.ptr = da->ptr;
  args.b.ptr = db->ptr;
  args.c = dc->ptr;
  args.bias = dbias ? dbias->ptr : nullptr;

  matmul(args);
  std::vector<double> got = download(dc, c_n, cs.dtype);
  std::vector<double> want = reference(args, a, b, c_in, bias);
  double scale = 1e-30;
  for (double w : want) scale = std::max(scale, std::abs(w));
  double largest = 0;
  for (size_t i = 0; i < c_n; ++i) {
    ASSERT_LE(std::abs(got[i] - want[i]), cs.tolerance * scale) << "element " << i << ": " << got[i] << " vs " << want[i];
    largest = std::max(largest, std::abs(got[i] - want[i]));
  }
  EXPECT_GE(largest, cs.least_error * scale);
}

// f32 accumulates in f32 without TF32: TF32 would be off by about 1e-3 of the scale here.
constexpr double kF32 = 1e-5;

// With TF32 allowed the products round the operands to 10 bits of mantissa: within 1e-2 of the
// scale, and visibly off the exact result (the flag reaches cuBLASLt).
TEST(GpuCublasLt, F32WithTf32UsesTensorCores) {
  if (!available()) GTEST_SKIP();
  run_case({.m = 128, .k = 512, .n = 96, .bias = true, .tolerance = 1e-2, .tf32 = true, .least_error = 1e-5});
}

TEST(GpuCublasLt, F32MatchesHostLoop) {
  if (!available()) GTEST_SKIP();
  run_case({.m = 37, .k = 53, .n = 29, .tolerance = kF32});
}

TEST(GpuCublasLt, F32PaddedRowsAlphaBeta) {
  if (!available()) GTEST_SKIP();
  run_case({.m = 16, .k = 24, .n = 40, .a_pad = 3, .b_pad = 5, .alpha = 0.5f, .beta = 2.0f, .tolerance = kF32});
}

TEST(GpuCublasLt, F32TransposedB) {
  if (!available()) GTEST_SKIP();
  run_case({.m = 21, .k = 34, .n = 19, .b_transposed = true, .tolerance = kF32});
}

TEST(GpuCublasLt, F32BothTransposedPadded) {
  if (!available()) GTEST_SKIP();
  run_case({.m = 12, .k = 20, .n = 28, .a_transposed = true, .b_transposed = true, .a_pad = 4, .b_pad = 2,
            .tolerance = kF32});
}

TEST(GpuCublasLt, F32BatchedWithBroadcastB) {
  if (!available()) GTEST_SKIP();
  run_case({.batch = 3, .m = 17, .k = 31, .n = 23, .broadcast_b = true, .tolerance = kF32});
}

TEST(GpuCublasLt, F32BatchedTransposedA) {
  if (!available()) GTEST_SKIP();
  run_case({.batch = 4, .m = 8, .k = 16, .n = 32, .a_transposed = true, .tolerance = kF32});
}

TEST(GpuCublasLt, RepeatedCallsReuseThePlan) {
  if (!available()) GTEST_SKIP();
  for (int i = 0; i < 3; ++i) run_case({.m = 32, .k = 64, .n = 16, .tolerance = kF32});
}

// bf16 in and out, f32 accumulation: the output's rounding dominates (2^-8 relative).
TEST(GpuCublasLt, Bf16BiasRelu) {
  if (!available()) GTEST_SKIP();
  run_case({.dtype = DType::BFloat16, .m = 64, .k = 96, .n = 48, .bias = true, .epilogue = Epilogue::Relu,
            .tolerance = 1e-2});
}

TEST(GpuCublasLt, Bf16BatchedBias) {
  if (!available()) GTEST_SKIP();
  run_case({.dtype = DType::BFloat16, .batch = 2, .m = 32, .k = 64, .n = 40, .bias = true, .tolerance = 1e-2});
}

TEST(GpuCublasLt, F16BiasGelu) {
  if (!available()) GTEST_SKIP();
  run_case({.dtype = DType::Float16, .m = 32, .k = 64, .n = 24, .bias = true, .epilogue = Epilogue::Gelu,
            .tolerance = 5e-3});
}

TEST(GpuCublasLt, F64) {
  if (!available()) GTEST_SKIP();
  run_case({.dtype = DType::Float64, .batch = 2, .m = 19, .k = 27, .n = 13, .b_transposed = true, .alpha = 1.5f,
            .beta = 0.5f, .tolerance = 1e-12});
}

TEST(GpuCublasLt, InnerDimensionMismatchIsAUserError) {
  if (!available()) GTEST_SKIP();
  MatmulArgs args;
  args.a = {nullptr, 4, 8, 8, 1, 0};
  args.b = {nullptr, 7, 4, 4, 1, 0};
  EXPECT_THROW(matmul(args), toroid::UserError);
}

TEST(GpuCublasLt, LayoutOk) {
  if (!available()) GTEST_SKIP();
  EXPECT_TRUE(matmul_layout_ok({nullptr, 4, 8, 8, 1, 0}));     // row-major
  EXPECT_TRUE(matmul_layout_ok({nullptr, 4, 8, 10, 1, 0}));    // padded rows
  EXPECT_TRUE(matmul_layout_ok({nullptr, 4, 8, 1, 4, 0}));     // transposed
  EXPECT_TRUE(matmul_layout_ok({nullptr, 1, 8, 0, 1, 0}));     // one row: its stride is moot
  EXPECT_TRUE(matmul_layout_ok({nullptr, 4, 1, 1, 0, 0}));     // one column
  EXPECT_FALSE(matmul_layout_ok({nullptr, 4, 8, 4, 1, 0}));    // rows overlap
  EXPECT_FALSE(matmul_layout_ok({nullptr, 4, 8, 16, 2, 0}));   // neither stride is 1
  EXPECT_FALSE(matmul_layout_ok({nullptr, 4, 8, 1, 3, 0}));    // columns overlap
}

}  // namespace
