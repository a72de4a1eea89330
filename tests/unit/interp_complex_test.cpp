// Complex values in the interpreter: random complex inputs, an r2c/c2r round trip with a view
// and a cast in between, and a clean error for an op without complex support.
#include <complex>

#include "interp_test_util.h"
#include "toroid/bind/inputs.h"
#include "toroid/graph/verify.h"
#include "toroid/ops/ref_util.h"
#include "toroid/ops/registry.h"

namespace {

using namespace toroid;
using namespace interptest;

TEST(InterpComplex, RandomInputsFillBothParts) {
  auto g = parse(R"(graph @g functional {
  %x = input : c128[64]
  output %x
})");
  std::vector<RtValue> in = bind::random_inputs(*g, 7, bind::RandomDist::Normal);
  const HostTensor& t = in.at(0).tensor();
  ASSERT_EQ(t.dtype(), DType::Complex128);
  double re = 0, im = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    std::complex<double> c = ops::load_complex(t.dtype(), t.data() + i * t.element_size());
    re += std::abs(c.real()), im += std::abs(c.imag());
    EXPECT_NE(c.real(), c.imag());
  }
  EXPECT_GT(re, 10);
  EXPECT_GT(im, 10);
}

TEST(InterpComplex, RoundTripThroughFft) {
  auto g = parse(R"(graph @g functional {
  %x = input : f32[3, 6]
  %f = aten._fft_r2c.default(%x, [0, 1], 0, true) : c64[3, 4]
  %c = aten._to_copy.default(%f, dtype=torch.complex128) : c128[3, 4]
  %t = aten.t.default(%c) : c128[4, 3]{strides=[1, 4], storage=%c}
  %b = aten._fft_c2r.default(%t, [1, 0], 2, 6) : f64[6, 3]{strides=[1, 6]}
  output %b
})");
  ops::install_schema_op_info();
  Diagnostics d = verify(*g);
  ASSERT_TRUE(d.empty()) << d.str();
  HostTensor x = iota({3, 6});
  std::vector<RtValue> out = interp::interpret(*g, {x});
  // The inverse over the transposed spectrum gives x transposed.
  std::vector<double> got = values(out.at(0).tensor()), want = values(x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 6; ++j) EXPECT_NEAR(got[j * 3 + i], want[i * 6 + j], 1e-5);
}

TEST(InterpComplex, OpsWithoutComplexSupportFailCleanly) {
  auto g = parse(R"(graph @g functional {
  %x = input : c64[4]
  %y = aten.neg.default(%x) : c64[4]
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, bind::random_inputs(*g, 1)); }),
                       "t.tir:3:3: error: aten.neg.default: c64 is not supported"));
  ops::install_schema_op_info();
  EXPECT_TRUE(contains(verify(*g).str(), "aten.neg.default: c64 is not supported"));
}

}  // namespace
