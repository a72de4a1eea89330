// Softmax and normalization kernels: exact values and a finite-difference check.
#include "ref_test_util.h"

using namespace reftest;

TEST(RefNorm, SoftmaxOfOneTwoThree) {
  HostTensor x = T(DType::Float64, {3}, {1, 2, 3});
  double s = 1 + std::exp(-1.0) + std::exp(-2.0);
  std::vector<double> sm = vals(call1("aten._softmax.default", {x, I(0), B(false)}));
  EXPECT_DOUBLE_EQ(sm[0], std::exp(-2.0) / s);
  EXPECT_NEAR(sm[0], 0.09003057317038046, 1e-15);
  EXPECT_NEAR(sm[1], 0.24472847105479767, 1e-15);
  EXPECT_NEAR(sm[2], 0.6652409557748219, 1e-15);
  std::vector<double> ls = vals(call1("aten._log_softmax.default", {x, I(-1), B(false)}));
  EXPECT_NEAR(ls[0], -2.4076059644443806, 1e-15);
  EXPECT_NEAR(ls[2], -0.40760596444438030, 1e-15);
  // Along dim 0 of a [2, 2]; -inf gives 0; a NaN row is all NaN.
  std::vector<double> r = vals(call1("aten._softmax.default", {F32({2, 2}, {0, -INFINITY, 0, 5}), I(0), B(false)}));
  EXPECT_EQ(r, (std::vector<double>{0.5, 0, 0.5, 1}));
  r = vals(call1("aten._softmax.default", {F32({2}, {NAN, 1}), I(0), B(false)}));
  EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]));
  // half_to_float and softmax.int's dtype.
  HostTensor h = call1("aten._softmax.default", {T(DType::Float16, {2}, {0, 0}), I(0), B(true)});
  EXPECT_EQ(h.dtype(), DType::Float32);
  EXPECT_EQ(vals(h), (std::vector<double>{0.5, 0.5}));
  HostTensor d = call1("aten.softmax.int", {I64({2}, {0, 0}), I(0), RtValue(DType::Float64)});
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_NE(error_of([&] { call1("aten.softmax.int", {I64({2}, {0, 0}), I(0)}); }).find("not implemented for 'Long'"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten._softmax.default", {x, I(1), B(false)}); }).find("Dimension out of range"), std::string::npos);
}

TEST(RefNorm, SoftmaxBackwardMatchesFiniteDifferences) {
  std::vector<double> xv{0.3, -1.2, 2.0, 0.5, 0.1, -0.4};
  HostTensor x = T(DType::Float64, {2, 3}, xv);
  HostTensor g = T(DType::Float64, {2, 3}, {1.0, -2.0, 0.5, 0.25, 3.0, -1.0});
  for (bool log : {false, true}) {
    const char* fwd = log ? "aten._log_softmax.default" : "aten._softmax.default";
    const char* bwd = log ? "aten._log_softmax_backward_data.default" : "aten._softmax_backward_data.default";
    HostTensor y = call1(fwd, {x, I(1), B(false)});
    HostTensor gi = call1(bwd, {g, y, I(1), RtValue(DType::Float64)});
    for (int64_t i = 0; i < 6; ++i) {
      const double h = 1e-6;
      std::vector<double> p = xv, m = xv;
      p[static_cast<size_t>(i)] += h;
      m[static_cast<size_t>(i)] -= h;
      std::vector<double> yp = vals(call1(fwd, {T(DType::Float64, {2, 3}, p), I(1), B(false)}));
      std::vector<double> ym = vals(call1(fwd, {T(DType::Float64, {2, 3}, m), I(1), B(false)}));
      double fd = 0;
      for (int64_t k = 0; k < 6; ++k) fd += g.get_double(k) * (yp[static_cast<size_t>(k)] - ym[static_cast<size_t>(k)]) / (2 * h);
      EXPECT_NEAR(gi.get_double(i), fd, 1e-7) << (log ? "log_softmax " : "softmax ") << i;
    }
  }
}

TEST(RefNorm, LayerNorm) {
  HostTensor x = F32({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  auto r = call("aten.native_layer_norm.default", {x, L({4}), RtValue(), RtValue(), D(0.0)});
  std::vector<double> o = vals(r[0].tensor());
  const double k = 1 / std::sqrt(1.25);
  EXPECT_FLOAT_EQ(o[0], static_cast<float>(-1.5 * k));
  EXPECT_FLOAT_EQ(o[1], static_cast<float>(-0.5 * k));
  EXPECT_FLOAT_EQ(o[3], static_cast<float>(1.5 * k));
  EXPECT_EQ(r[1].tensor().sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(vals(r[1].tensor()), (std::vector<double>{2.5, 2}));
  EXPECT_FLOAT_EQ(r[2].tensor().get_double(0), static_cast<float>(k));
  EXPECT_TRUE(std::isinf(r[2].tensor().get_double(1)));  // zero variance, eps 0
  // Weight and bias; the composite layer_norm.
  HostTensor y = call1("aten.layer_norm.default", {F32({1, 2}, {1, 3}), L({2}), F32({2}, {2, 3}), F32({2}, {10, 20}), D(0.0)});
  EXPECT_EQ(vals(y), (std::vector<double>{8, 23}));
  EXPECT_NE(error_of([&] { call("aten.native_layer_norm.default", {x, L({3}), RtValue(), RtValue(), D(1e-5)}); })
                .find("Given normalized_shape=[3]"),
            std::string::npos);
}

TEST(RefNorm, GroupNorm) {
  HostTensor x = F32({1, 4, 1}, {1, 3, 5, 9});
  auto r = call("aten.native_group_norm.default", {x, F32({4}, {1, 1, 2, 2}), F32({4}, {0, 0, 0, 1}), I(1), I(4), I(1), I(2), D(0.0)});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{-1, 1, -2, 3}));
  EXPECT_EQ(r[1].tensor().sizes(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(vals(r[1].tensor()), (std::vector<double>{2, 7}));
  EXPECT_EQ(vals(r[2].tensor()), (std::vector<double>{1, 0.5}));
  EXPECT_NE(error_of([&] { call("aten.native_group_norm.default", {x, RtValue(), RtValue(), I(1), I(4), I(1), I(3), D(0.0)}); })
                .find("divisible by num_groups"),
            std::string::npos);
}

TEST(RefNorm, BatchNormTrainingAndEval) {
  HostTensor x = F32({2, 1, 1}, {1, 3});
  HostTensor rm = F32({1}, {0}), rv = F32({1}, {1});
  auto r = call("aten.native_batch_norm.default", {x, RtValue(), RtValue(), rm, rv, B(true), D(0.1), D(0.0)});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{-1, 1}));
  EXPECT_EQ(vals(r[1].tensor()), (std::vector<double>{2}));
  EXPECT_EQ(vals(r[2].tensor()), (std::vector<double>{1}));
  EXPECT_FLOAT_EQ(rm.get_double(0), 0.2f);  // 0.9 * 0 + 0.1 * 2
  EXPECT_FLOAT_EQ(rv.get_double(0), 1.1f);  // 0.9 * 1 + 0.1 * 2 (unbiased)
  // Eval: running statistics, empty saved stats.
  auto e = call("aten._native_batch_norm_legit_no_training.default",
                {F32({1, 2}, {3, 3}), F32({2}, {1, 2}), F32({2}, {0, 1}), F32({2}, {1, 3}), F32({2}, {4, 0.25}), D(0.1), D(0.0)});
  EXPECT_EQ(vals(e[0].tensor()), (std::vector<double>{1, 1}));
  EXPECT_EQ(e[1].tensor().numel(), 0);
  // No stats (training), and the legit form with stats.
  auto n = call("aten._native_batch_norm_legit.no_stats", {F32({2, 1}, {0, 4}), RtValue(), RtValue(), B(true), D(0.1), D(0.0)});
  EXPECT_EQ(vals(n[0].tensor()), (std::vector<double>{-1, 1}));
  HostTensor rm2 = F32({1}, {1}), rv2 = F32({1}, {1});
  call("aten._native_batch_norm_legit.default", {F32({2, 1}, {0, 4}), RtValue(), RtValue(), rm2, rv2, B(true), D(0.5), D(0.0)});
  EXPECT_EQ(rm2.get_double(0), 1.5);
  EXPECT_EQ(rv2.get_double(0), 4.5);
  EXPECT_NE(error_of([&] { call("aten.native_batch_norm.default", {x, RtValue(), RtValue(), RtValue(), RtValue(), B(false), D(0.1), D(0.0)}); })
                .find("evaluation mode"),
            std::string::npos);
}
