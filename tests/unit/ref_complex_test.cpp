// Complex HostTensors: casts, .npy round trips, the fft kernels against hand-computed DFTs, and
// clean errors from kernels without complex support.
#include <complex>
#include <numbers>

#include "ref_test_util.h"
#include "toroid/ops/npy.h"
#include "toroid/ops/ref_util.h"

using namespace reftest;
using cplx = std::complex<double>;

namespace {

HostTensor C(DType d, std::vector<int64_t> sizes, std::vector<cplx> v) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  for (size_t i = 0; i < v.size(); ++i) store_complex(d, t.data() + static_cast<int64_t>(i) * t.element_size(), v[i]);
  return t;
}

// Row-major values of any tensor as complex numbers.
std::vector<cplx> cvals(const HostTensor& t) {
  HostTensor c = t.clone();
  std::vector<cplx> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(load_complex(c.dtype(), c.data() + i * c.element_size()));
  return out;
}

void expect_near(const std::vector<cplx>& got, const std::vector<cplx>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].real(), want[i].real(), tol) << i;
    EXPECT_NEAR(got[i].imag(), want[i].imag(), tol) << i;
  }
}

}  // namespace

TEST(RefComplex, CastsFollowPyTorch) {
  HostTensor f = F32({3}, {1.5, -2.0, 0.0});
  HostTensor c = f.to(DType::Complex128);
  expect_near(cvals(c), {{1.5, 0}, {-2, 0}, {0, 0}}, 0);
  HostTensor z = C(DType::Complex64, {3}, {{1.5, 2}, {-2.75, -1}, {0, 3}});
  EXPECT_EQ(vals(z.to(DType::Float64)), (std::vector<double>{1.5, -2.75, 0}));  // the real part
  EXPECT_EQ(ivals(z.to(DType::Int32)), (std::vector<int64_t>{1, -2, 0}));
  EXPECT_EQ(ivals(z.to(DType::Bool)), (std::vector<int64_t>{1, 1, 1}));  // imag != 0 counts
  expect_near(cvals(z.to(DType::Complex128)), {{1.5, 2}, {-2.75, -1}, {0, 3}}, 0);
  EXPECT_EQ(std::string(dtype_aten_name(DType::Complex64)), "ComplexFloat");
  EXPECT_FALSE(can_cast(DType::Complex64, DType::Float64));
  EXPECT_TRUE(can_cast(DType::Float64, DType::Complex64));
}

TEST(RefComplex, NpyRoundTripAndDescrs) {
  for (DType d : {DType::Complex64, DType::Complex128}) {
    HostTensor t = C(d, {2, 3}, {{1, 2}, {3, -4}, {0.5, 0}, {-1, 1}, {7, 8}, {0, -0.25}});
    std::string bytes = serialize_npy(t.as_strided({3, 2}, {1, 3}, 0));
    EXPECT_NE(bytes.find(d == DType::Complex64 ? "'<c8'" : "'<c16'"), std::string::npos);
    HostTensor back = parse_npy(bytes);
    ASSERT_EQ(back.dtype(), d);
    expect_near(cvals(back), cvals(t.as_strided({3, 2}, {1, 3}, 0)), 0);
  }
  // Big-endian c8: each float swapped on its own. 1.0f = 3f800000, -2.0f = c0000000.
  std::string data("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8);
  std::string h = "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }\n";
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + '\0' + h + data;
  expect_near(cvals(parse_npy(file)), {{1, -2}}, 0);
}

TEST(RefComplex, R2cMatchesHandDft) {
  // fft([1, 2, 3, 4]) = [10, -2+2j, -2, -2-2j].
  HostTensor x = F32({4}, {1, 2, 3, 4});
  HostTensor y = call1("aten._fft_r2c.default", {x, L({0}), I(0), B(true)});
  EXPECT_EQ(y.dtype(), DType::Complex64);
  expect_near(cvals(y), {{10, 0}, {-2, 2}, {-2, 0}}, 1e-6);
  y = call1("aten._fft_r2c.default", {x.to(DType::Float64), L({0}), I(2), B(false)});
  expect_near(cvals(y), {{2.5, 0}, {-0.5, 0.5}, {-0.5, 0}, {-0.5, -0.5}}, 1e-12);
  // 2-d: fft2([[1, 2], [3, 4]]) = [[10, -2], [-4, 0]], by 1/sqrt(4).
  y = call1("aten._fft_r2c.default", {T(DType::Float64, {2, 2}, {1, 2, 3, 4}), L({0, 1}), I(1), B(true)});
  expect_near(cvals(y), {{5, 0}, {-1, 0}, {-2, 0}, {0, 0}}, 1e-12);
}

TEST(RefComplex, C2rInvertsR2c) {
  for (int64_t n : {5, 6}) {
    std::vector<double> v;
    for (int64_t i = 0; i < 3 * n; ++i) v.push_back(std::sin(0.7 * static_cast<double>(i)) + 0.1 * static_cast<double>(i));
    HostTensor x = T(DType::Float64, {3, n}, v);
    HostTensor f = call1("aten._fft_r2c.default", {x, L({0, 1}), I(0), B(true)});
    HostTensor back = call1("aten._fft_c2r.default", {f, L({0, 1}), I(2), I(n)});
    EXPECT_EQ(back.dtype(), DType::Float64);
    std::vector<double> got = vals(back);
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(got[i], v[i], 1e-12) << n << " " << i;
  }
  // The imaginary parts of bins 0 and n/2 are ignored: irfft([1+5j, 0, 2+7j], n=4) = [3,-1,3,-1]/4.
  HostTensor y = call1("aten._fft_c2r.default", {C(DType::Complex128, {3}, {{1, 5}, {0, 0}, {2, 7}}), L({0}), I(2), I(4)});
  std::vector<double> got = vals(y);
  std::vector<double> want = {0.75, -0.25, 0.75, -0.25};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-15);
}

TEST(RefComplex, KernelErrorsAreUserErrors) {
  HostTensor c = C(DType::Complex64, {3}, {{1, 0}, {2, 0}, {3, 0}});
  EXPECT_NE(error_of([&] { call1("aten._fft_c2r.default", {c, L({0}), I(3), I(4)}); }).find("normalization must be"),
            std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten._fft_c2r.default", {c, L({0}), I(0), I(8)}); }).find("needs 5"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten._fft_r2c.default", {F32({0}, {}), L({0}), I(0), B(true)}); }).find("Invalid number"),
            std::string::npos);
  // Kernels without complex support are never reached with complex tensors (run_kernel).
  EXPECT_NE(error_of([&] { call1("aten.abs.default", {c}); }).find("aten.abs.default: c64 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.sum.default", {c}); }).find("c64 is not supported"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.full.default", {L({2}), D(1.0)}, {{"dtype", RtValue(DType::Complex64)}}); })
                .find("c64 is not supported"),
            std::string::npos);
  // Casts and views do take them.
  EXPECT_EQ(call1("aten.t.default", {C(DType::Complex64, {2, 1}, {{1, 2}, {3, 4}})}).strides(),
            (std::vector<int64_t>{1, 1}));
  expect_near(cvals(call1("aten._to_copy.default", {F32({2}, {1, 2})}, {{"dtype", RtValue(DType::Complex128)}})),
              {{1, 0}, {2, 0}}, 0);
  // The last guard: dispatching a complex dtype in a real-only kernel is a UserError.
  EXPECT_NE(error_of([] { dispatch_dtype(DType::Complex128, []<class T>() { return 0; }); }).find("do not support c128"),
            std::string::npos);
}
