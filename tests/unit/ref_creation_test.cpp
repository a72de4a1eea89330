// Creation kernels (exact values) and the random kernels (statistical tests: moments,
// Kolmogorov-Smirnov, chi-square, permutation and dropout properties).
#include <algorithm>
#include <limits>
#include <numeric>

#include "ref_test_util.h"

using namespace reftest;

TEST(RefCreation, FullInfersDtypeFromFillValue) {
  EXPECT_EQ(call1("aten.full.default", {L({2}), I(3)}).dtype(), DType::Int64);
  EXPECT_EQ(call1("aten.full.default", {L({2}), D(3)}).dtype(), DType::Float32);
  EXPECT_EQ(call1("aten.full.default", {L({2}), B(true)}).dtype(), DType::Bool);
  HostTensor f = call1("aten.full.default", {L({2, 2}), D(0.1)}, {{"dtype", RtValue(DType::Float16)}});
  EXPECT_EQ(vals(f)[3], 0.0999755859375);
  EXPECT_NE(error_of([] { call1("aten.full.default", {L({-1}), I(0)}); }).find("negative dimension"), std::string::npos);
  HostTensor fl = call1("aten.full_like.default", {T(DType::Int32, {3}, {0, 0, 0}), D(2.7)});
  EXPECT_EQ(fl.dtype(), DType::Int32);
  EXPECT_EQ(ivals(fl), (std::vector<int64_t>{2, 2, 2}));
}

TEST(RefCreation, ZerosOnesEmpty) {
  EXPECT_EQ(vals(call1("aten.ones.default", {L({2})})), (std::vector<double>{1, 1}));
  EXPECT_EQ(call1("aten.zeros.default", {L({2, 0})}).numel(), 0);
  EXPECT_EQ(call1("aten.ones_like.default", {I64({3}, {5, 6, 7})}).dtype(), DType::Int64);
  EXPECT_EQ(vals(call1("aten.zeros_like.default", {F32({2}, {5, 6})}, {{"dtype", RtValue(DType::Float64)}})),
            (std::vector<double>{0, 0}));
  HostTensor e = call1("aten.empty.memory_format", {L({2, 3, 4, 5})}, {{"memory_format", RtValue(MemoryFormat::ChannelsLast)}});
  EXPECT_EQ(e.strides(), (std::vector<int64_t>{60, 1, 15, 3}));
  HostTensor es = call1("aten.empty_strided.default", {L({2, 3}), L({1, 2})});
  EXPECT_EQ(es.strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(es.dtype(), DType::Float32);
  HostTensor st = call1("aten.scalar_tensor.default", {I(4)});
  EXPECT_EQ(st.dim(), 0);
  EXPECT_EQ(st.dtype(), DType::Float32);
  EXPECT_EQ(vals(st)[0], 4);
}

TEST(RefCreation, Arange) {
  HostTensor a = call1("aten.arange.start_step", {I(1), I(10), I(3)});
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(ivals(a), (std::vector<int64_t>{1, 4, 7}));
  HostTensor f = call1("aten.arange.start_step", {D(0), D(1), D(0.25)});
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_EQ(vals(f), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(ivals(call1("aten.arange.start_step", {I(5), I(0), I(-2)})), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(call1("aten.arange.start_step", {I(3), I(3)}).numel(), 0);
  EXPECT_NE(error_of([] { call1("aten.arange.start_step", {I(0), I(3), I(0)}); }).find("step must be nonzero"), std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.arange.start_step", {I(0), I(3), I(-1)}); }).find("inconsistent"), std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.arange.start_step", {I(std::numeric_limits<int64_t>::min()), I(std::numeric_limits<int64_t>::max())}); })
                .find("too large"),
            std::string::npos);
}

namespace {
double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }
double var_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}
// Kolmogorov-Smirnov statistic of a sample against a CDF.
template <class Cdf>
double ks(std::vector<double> v, Cdf cdf) {
  std::sort(v.begin(), v.end());
  double n = static_cast<double>(v.size()), d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double f = cdf(v[i]);
    d = std::max({d, static_cast<double>(i + 1) / n - f, f - static_cast<double>(i) / n});
  }
  return d;
}
constexpr int64_t kN = 100000;
const double kKsCritical = 1.95 / std::sqrt(static_cast<double>(kN));  // alpha = 0.001
}  // namespace

TEST(RefRandom, RandIsUniform) {
  Ctx c;
  HostTensor r = call1("aten.rand.default", {L({kN})}, {}, &c.ctx);
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(c.offset, static_cast<uint64_t>(kN));  // one counter per element
  std::vector<double> v = vals(r);
  for (double x : v) ASSERT_TRUE(x >= 0 && x < 1);
  EXPECT_NEAR(mean_of(v), 0.5, 0.005);
  EXPECT_NEAR(var_of(v), 1.0 / 12, 0.002);
  EXPECT_LT(ks(v, [](double x) { return x; }), kKsCritical);
  // Chi-square over 100 equal bins: 99 degrees of freedom, critical value 148.2 at alpha 0.001.
  std::vector<double> bins(100, 0);
  for (double x : v) bins[static_cast<size_t>(x * 100)] += 1;
  double chi2 = 0, e = static_cast<double>(kN) / 100;
  for (double b : bins) chi2 += (b - e) * (b - e) / e;
  EXPECT_LT(chi2, 148.2);
}

TEST(RefRandom, RandnIsStandardNormal) {
  Ctx c;
  HostTensor r = call1("aten.randn.default", {L({kN})}, {{"dtype", RtValue(DType::Float64)}}, &c.ctx);
  std::vector<double> v = vals(r);
  EXPECT_NEAR(mean_of(v), 0.0, 0.016);
  EXPECT_NEAR(var_of(v), 1.0, 0.025);
  EXPECT_LT(ks(v, [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }), kKsCritical);
  // Tails: P(|x| > 3) = 0.0027.
  double tail = static_cast<double>(std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) > 3; })) / kN;
  EXPECT_NEAR(tail, 0.0027, 0.001);
}

TEST(RefRandom, DeterministicAndOffsetsAdvance) {
  Ctx a, b;
  HostTensor x1 = call1("aten.rand.default", {L({8})}, {}, &a.ctx);
  HostTensor x2 = call1("aten.rand.default", {L({8})}, {}, &a.ctx);
  HostTensor y1 = call1("aten.rand.default", {L({8})}, {}, &b.ctx);
  EXPECT_EQ(vals(x1), vals(y1));
  EXPECT_NE(vals(x1), vals(x2));
  EXPECT_EQ(a.offset, 16u);
  Ctx s;
  s.ctx.seed = 99;
  EXPECT_NE(vals(call1("aten.rand.default", {L({8})}, {}, &s.ctx)), vals(x1));
  // A value depends on its index only: the first 4 of 8 equal a call of 4.
  Ctx d;
  HostTensor four = call1("aten.rand.default", {L({4})}, {}, &d.ctx);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(four.get_double(i), x1.get_double(i));
}

TEST(RefRandom, RandHalfNeverReachesOne) {
  Ctx c;
  for (DType d : {DType::Float16, DType::BFloat16}) {
    HostTensor r = call1("aten.rand.default", {L({20000})}, {{"dtype", RtValue(d)}}, &c.ctx);
    double mx = 0;
    for (double x : vals(r)) mx = std::max(mx, x);
    EXPECT_LT(mx, 1.0);
    EXPECT_GT(mx, 0.99);
  }
  EXPECT_NE(error_of([] { call1("aten.rand.default", {L({2})}, {{"dtype", RtValue(DType::Int64)}}); }).find("'Long'"),
            std::string::npos);
}

TEST(RefRandom, RandpermIsAUniformPermutation) {
  Ctx c;
  HostTensor p = call1("aten.randperm.default", {I(1000)}, {}, &c.ctx);
  EXPECT_EQ(p.dtype(), DType::Int64);
  std::vector<int64_t> v = ivals(p);
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_NE(v, sorted);
  EXPECT_EQ(c.offset, 1000u);
  // Where element 0 lands over 4000 permutations of 10: chi-square with 9 dof, critical 27.88.
  std::vector<double> pos(10, 0);
  for (int k = 0; k < 4000; ++k) {
    std::vector<int64_t> q = ivals(call1("aten.randperm.default", {I(10)}, {}, &c.ctx));
    pos[static_cast<size_t>(std::find(q.begin(), q.end(), 0) - q.begin())] += 1;
  }
  double chi2 = 0;
  for (double x : pos) chi2 += (x - 400) * (x - 400) / 400;
  EXPECT_LT(chi2, 27.88);
  EXPECT_EQ(call1("aten.randperm.default", {I(0)}).numel(), 0);
  EXPECT_NE(error_of([] { call1("aten.randperm.default", {I(-1)}); }).find("non-negative"), std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.randperm.default", {I(300)}, {{"dtype", RtValue(DType::Int8)}}); }).find("too large"),
            std::string::npos);
}

TEST(RefRandom, NativeDropoutKeepRateAndScale) {
  Ctx c;
  HostTensor x = HostTensor::zeros(DType::Float32, {kN});
  for (int64_t i = 0; i < kN; ++i) x.set_double(i, 1.0);
  auto r = call("aten.native_dropout.default", {x, D(0.3), B(true)}, {}, &c.ctx);
  HostTensor out = r[0].tensor(), mask = r[1].tensor();
  EXPECT_EQ(mask.dtype(), DType::Bool);
  int64_t kept = 0;
  double scale = static_cast<float>(1.0 / 0.7);
  for (int64_t i = 0; i < kN; ++i) {
    bool k = mask.get_int(i) != 0;
    kept += k;
    ASSERT_EQ(out.get_double(i), k ? scale : 0.0);
  }
  EXPECT_NEAR(static_cast<double>(kept) / kN, 0.7, 0.0075);
  EXPECT_EQ(c.offset, static_cast<uint64_t>(kN));
  auto ev = call("aten.native_dropout.default", {x, D(0.3), B(false)}, {}, &c.ctx);
  EXPECT_EQ(vals(ev[0].tensor()), vals(x));
  EXPECT_EQ(ivals(ev[1].tensor()), std::vector<int64_t>(kN, 1));
  auto none = call("aten.native_dropout.default", {F32({2}, {1, 2}), D(0.0), RtValue()}, {}, &c.ctx);
  EXPECT_EQ(vals(none[0].tensor()), (std::vector<double>{1, 2}));
  auto all = call("aten.native_dropout.default", {F32({2}, {1, 2}), D(1.0), B(true)}, {}, &c.ctx);
  EXPECT_EQ(vals(all[0].tensor()), (std::vector<double>{0, 0}));
  EXPECT_NE(error_of([] { call("aten.native_dropout.default", {F32({1}, {1}), D(1.5), B(true)}); }).find("between 0 and 1"),
            std::string::npos);
}

TEST(RefRandom, Bernoulli) {
  Ctx c;
  HostTensor r = call1("aten.bernoulli.p", {HostTensor::zeros(DType::Float64, {kN}), D(0.25)}, {}, &c.ctx);
  double m = mean_of(vals(r));
  EXPECT_NEAR(m, 0.25, 0.007);
}
