// Exact-value tests of the pointwise reference kernels.
#include <limits>

#include "ref_test_util.h"

using namespace reftest;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST(RefPointwise, UnaryMathPromotesIntsToFloat) {
  HostTensor r = call1("aten.exp.default", {I64({2}, {0, 1})});
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(vals(r)[0], 1.0);
  EXPECT_EQ(vals(r)[1], static_cast<double>(static_cast<float>(std::exp(1.0))));
  HostTensor s = call1("aten.sqrt.default", {T(DType::Float64, {3}, {4, -1, kInf})});
  EXPECT_EQ(s.dtype(), DType::Float64);
  EXPECT_EQ(vals(s)[0], 2.0);
  EXPECT_TRUE(std::isnan(vals(s)[1]));
  EXPECT_EQ(vals(s)[2], kInf);
  EXPECT_EQ(vals(call1("aten.rsqrt.default", {F32({2}, {0.0, -0.0})})), (std::vector<double>{kInf, -kInf}));
  EXPECT_EQ(vals(call1("aten.log.default", {F32({2}, {0, -1})}))[0], -kInf);
  EXPECT_EQ(call1("aten.sigmoid.default", {T(DType::Bool, {1}, {1})}).dtype(), DType::Float32);
  EXPECT_EQ(vals(call1("aten.reciprocal.default", {F32({1}, {-0.0})}))[0], -kInf);
}

TEST(RefPointwise, HalfComputesInFloatAndRoundsOnce) {
  HostTensor h = T(DType::Float16, {1}, {2.0});
  HostTensor r = call1("aten.exp.default", {h});
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(vals(r)[0], 7.390625);  // e^2 = 7.389... rounds to the nearest f16
  HostTensor b = call1("aten.sin.default", {T(DType::BFloat16, {1}, {1.0})});
  EXPECT_EQ(vals(b)[0], 0.83984375);  // sin(1) = 0.84147 -> nearest bf16
}

TEST(RefPointwise, RoundingOps) {
  HostTensor x = F32({8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.7, -2.7, kNaN});
  EXPECT_EQ(vals(call1("aten.round.default", {x})).at(0), 0.0);
  auto r = vals(call1("aten.round.default", {x}));
  EXPECT_EQ(r[1], 2.0);
  EXPECT_EQ(r[2], 2.0);
  EXPECT_TRUE(std::signbit(r[3]));
  EXPECT_EQ(r[4], -2.0);
  EXPECT_TRUE(std::isnan(r[7]));
  auto f = vals(call1("aten.floor.default", {x}));
  EXPECT_EQ(f[6], -3.0);
  auto c = vals(call1("aten.ceil.default", {x}));
  EXPECT_EQ(c[6], -2.0);
  auto t = vals(call1("aten.trunc.default", {x}));
  EXPECT_EQ(t[5], 2.0);
  EXPECT_EQ(t[6], -2.0);
  HostTensor i = call1("aten.floor.default", {I64({1}, {7})});
  EXPECT_EQ(i.dtype(), DType::Int64);
  EXPECT_EQ(ivals(i)[0], 7);
}

TEST(RefPointwise, AbsNegSignOnEdgeValues) {
  auto a = vals(call1("aten.abs.default", {F32({3}, {-0.0, -kInf, kNaN})}));
  EXPECT_FALSE(std::signbit(a[0]));
  EXPECT_EQ(a[1], kInf);
  EXPECT_TRUE(std::isnan(a[2]));
  HostTensor m = I64({1}, {0});
  m.set_int(0, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ivals(call1("aten.abs.default", {m}))[0], std::numeric_limits<int64_t>::min());  // wraps
  EXPECT_EQ(ivals(call1("aten.neg.default", {m}))[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ivals(call1("aten.neg.default", {T(DType::Int8, {1}, {-128})}))[0], -128);
  EXPECT_NE(error_of([] { call1("aten.neg.default", {T(DType::Bool, {1}, {1})}); }).find("bool tensor is not supported"),
            std::string::npos);
  EXPECT_EQ(vals(call1("aten.sign.default", {F32({4}, {-3, 0, 2, kNaN})})), (std::vector<double>{-1, 0, 1, 0}));
  EXPECT_EQ(ivals(call1("aten.sign.default", {I64({3}, {-5, 0, 9})})), (std::vector<int64_t>{-1, 0, 1}));
}

TEST(RefPointwise, Activations) {
  auto r = vals(call1("aten.relu.default", {F32({4}, {-1, 0, 3, kNaN})}));
  EXPECT_EQ(r[0], 0);
  EXPECT_EQ(r[2], 3);
  EXPECT_TRUE(std::isnan(r[3]));
  auto g = vals(call1("aten.gelu.default", {T(DType::Float64, {2}, {1.0, -1.0})}));
  EXPECT_DOUBLE_EQ(g[0], 0.5 * (1 + std::erf(1 / std::sqrt(2.0))));
  auto gt = vals(call1("aten.gelu.default", {T(DType::Float64, {1}, {1.0})}, {{"approximate", S("tanh")}}));
  EXPECT_NEAR(gt[0], 0.8411919906082768, 1e-15);
  EXPECT_NE(error_of([] { call1("aten.gelu.default", {F32({1}, {1})}, {{"approximate", S("fast")}}); }).find("approximate"),
            std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.gelu.default", {I64({1}, {1})}); }).find("'Long'"), std::string::npos);
  auto e = vals(call1("aten.elu.default", {T(DType::Float64, {2}, {2, -1})}, {{"alpha", D(2)}}));
  EXPECT_EQ(e[0], 2);
  EXPECT_DOUBLE_EQ(e[1], 2 * std::expm1(-1.0));
  auto l = vals(call1("aten.leaky_relu.default", {T(DType::Float64, {2}, {2, -1})}));
  EXPECT_EQ(l[1], -0.01);
  auto h = vals(call1("aten.hardtanh.default", {F32({4}, {-3, 0.5, 3, kNaN})}));
  EXPECT_EQ(h[0], -1);
  EXPECT_EQ(h[1], 0.5);
  EXPECT_EQ(h[2], 1);
  EXPECT_TRUE(std::isnan(h[3]));
  auto s = vals(call1("aten.silu.default", {T(DType::Float64, {1}, {1})}));
  EXPECT_DOUBLE_EQ(s[0], 1 / (1 + std::exp(-1.0)));
}

TEST(RefPointwise, ReluInPlaceWritesThroughView) {
  HostTensor base = F32({2, 2}, {-1, 2, -3, 4});
  HostTensor col = base.as_strided({2}, {2}, 0);  // column 0
  HostTensor r = call1("aten.relu_.default", {col});
  EXPECT_TRUE(r.shares_storage(base));
  EXPECT_EQ(vals(base), (std::vector<double>{0, 2, 0, 4}));
}

TEST(RefPointwise, WhereClampMaskedFill) {
  HostTensor c = T(DType::Bool, {3}, {1, 0, 1});
  HostTensor w = call1("aten.where.self", {c, I64({3}, {1, 2, 3}), F32({1}, {0.5})});
  EXPECT_EQ(w.dtype(), DType::Float32);
  EXPECT_EQ(vals(w), (std::vector<double>{1, 0.5, 3}));
  HostTensor cl = call1("aten.clamp.default", {F32({4}, {-5, 0, 5, kNaN}), I(-1), D(2.5)});
  auto v = vals(cl);
  EXPECT_EQ(v[0], -1);
  EXPECT_EQ(v[2], 2.5);
  EXPECT_TRUE(std::isnan(v[3]));
  HostTensor ci = call1("aten.clamp.default", {I64({2}, {-5, 5}), D(0.5), RtValue()});
  EXPECT_EQ(ci.dtype(), DType::Float32);  // a float bound promotes an int tensor
  EXPECT_EQ(vals(ci), (std::vector<double>{0.5, 5}));
  HostTensor ct = call1("aten.clamp.Tensor", {F32({3}, {1, 5, 9}), RtValue(F32({3}, {2, 2, 2})), RtValue(F32({1}, {6}))});
  EXPECT_EQ(vals(ct), (std::vector<double>{2, 5, 6}));
  EXPECT_EQ(vals(call1("aten.clamp.default", {F32({1}, {3}), I(5), I(1)})), (std::vector<double>{1}));  // min > max -> max
  EXPECT_NE(error_of([] { call1("aten.clamp.default", {F32({1}, {3})}); }).find("At least one"), std::string::npos);
  HostTensor mf = call1("aten.masked_fill.Scalar", {I64({2, 2}, {1, 2, 3, 4}), T(DType::Bool, {2}, {1, 0}), I(-7)});
  EXPECT_EQ(ivals(mf), (std::vector<int64_t>{-7, 2, -7, 4}));
  EXPECT_NE(error_of([] { call1("aten.masked_fill.Scalar", {F32({1}, {1}), F32({1}, {1}), I(0)}); }).find("boolean masks"),
            std::string::npos);
}

TEST(RefPointwise, IsInfIsNan) {
  HostTensor x = F32({4}, {1, kInf, -kInf, kNaN});
  EXPECT_EQ(ivals(call1("aten.isinf.default", {x})), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(ivals(call1("aten.isnan.default", {x})), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(call1("aten.isnan.default", {I64({2}, {1, 2})}).dtype(), DType::Bool);
}

TEST(RefPointwise, CopiesAndCasts) {
  HostTensor x = F32({2, 2}, {1.5, -2.5, 3, 4}).as_strided({2, 2}, {1, 2}, 0);
  HostTensor c = call1("aten._to_copy.default", {x}, {{"dtype", RtValue(DType::Int32)}});
  EXPECT_EQ(c.dtype(), DType::Int32);
  EXPECT_EQ(ivals(c), (std::vector<int64_t>{1, 3, -2, 4}));
  HostTensor cl = call1("aten.clone.default", {x});
  EXPECT_FALSE(cl.shares_storage(x));
  EXPECT_EQ(vals(cl), (std::vector<double>{1.5, 3, -2.5, 4}));
  HostTensor dst = I64({2, 3}, {0, 0, 0, 0, 0, 0});
  HostTensor r = call1("aten.copy_.default", {dst, F32({3}, {1.9, 2, 3})});
  EXPECT_TRUE(r.shares_storage(dst));
  EXPECT_EQ(ivals(dst), (std::vector<int64_t>{1, 2, 3, 1, 2, 3}));
  HostTensor cp = call1("aten.copy.default", {dst, F32({1}, {7})});
  EXPECT_FALSE(cp.shares_storage(dst));
  EXPECT_EQ(ivals(cp), (std::vector<int64_t>(6, 7)));
  EXPECT_EQ(vals(call1("aten.fill.Scalar", {F32({2}, {1, 2}), D(0.25)})), (std::vector<double>{0.25, 0.25}));
  // copy_ from an overlapping source reads the old values.
  HostTensor seq = I64({4}, {1, 2, 3, 4});
  call1("aten.copy_.default", {seq.as_strided({3}, {1}, 1), seq.as_strided({3}, {1}, 0)});
  EXPECT_EQ(ivals(seq), (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(RefPointwise, ExpOutChecksDtypeAndShape) {
  HostTensor out = T(DType::Float64, {2}, {0, 0});
  call1("aten.exp.out", {F32({2}, {0, 1})}, {{"out", RtValue(out)}});
  EXPECT_EQ(vals(out)[0], 1.0);
  EXPECT_NE(error_of([] { call1("aten.exp.out", {F32({2}, {0, 1})}, {{"out", RtValue(I64({2}, {0, 0}))}}); })
                .find("can't be cast"),
            std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.exp.out", {F32({2}, {0, 1})}, {{"out", RtValue(F32({3}, {0, 0, 0}))}}); })
                .find("doesn't match"),
            std::string::npos);
}

TEST(RefPointwise, BackwardHelpers) {
  HostTensor g = T(DType::Float64, {2}, {1, 2});
  EXPECT_EQ(vals(call1("aten.tanh_backward.default", {g, T(DType::Float64, {2}, {0.5, 0})})), (std::vector<double>{0.75, 2}));
  EXPECT_EQ(vals(call1("aten.threshold_backward.default", {g, T(DType::Float64, {2}, {0, 1}), I(0)})),
            (std::vector<double>{0, 2}));
  auto gb = vals(call1("aten.gelu_backward.default", {T(DType::Float64, {1}, {1}), T(DType::Float64, {1}, {0})}));
  EXPECT_DOUBLE_EQ(gb[0], 0.5);
}
