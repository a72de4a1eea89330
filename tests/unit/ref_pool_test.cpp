// Pooling kernels: windows with padding and ceil_mode, NaN in max pooling, adaptive windows,
// and the backward ops against finite differences.
#include <functional>

#include "ref_test_util.h"

using namespace reftest;

namespace {
HostTensor arange1(DType d, std::vector<int64_t> sizes) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, static_cast<double>(i + 1));
  return t;
}
HostTensor filled(std::vector<int64_t> sizes, double scale) {
  HostTensor t = HostTensor::zeros(DType::Float64, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::sin(scale * static_cast<double>(i) + 0.3) * 3);
  return t;
}
}  // namespace

TEST(RefPool, MaxPool2dWindowsAndIndices) {
  HostTensor x = arange1(DType::Float32, {1, 1, 4, 4});
  auto r = call("aten.max_pool2d_with_indices.default", {x, L({2, 2})});
  EXPECT_EQ(r[0].tensor().sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{6, 8, 14, 16}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{5, 7, 13, 15}));
  // Padding 1, stride 2, kernel 3 on a 3-d (unbatched) input.
  r = call("aten.max_pool2d_with_indices.default", {arange1(DType::Float32, {1, 3, 3}), L({3, 3}), L({2, 2}), L({1, 1})});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{5, 6, 8, 9}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{4, 5, 7, 8}));
  // ceil_mode adds a partial last window.
  HostTensor row = arange1(DType::Float32, {1, 1, 1, 5});
  r = call("aten.max_pool2d_with_indices.default", {row, L({1, 2}), L({1, 2})});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{2, 4}));
  r = call("aten.max_pool2d_with_indices.default", {row, L({1, 2}), L({1, 2}), L({0, 0}), L({1, 1}), B(true)});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{2, 4, 5}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1, 3, 4}));
  // Dilation 2.
  r = call("aten.max_pool2d_with_indices.default", {row, L({1, 2}), L({1, 1}), L({0, 0}), L({1, 2})});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{3, 4, 5}));
  EXPECT_TRUE(has(error_of([&] { call("aten.max_pool2d_with_indices.default", {x, L({2, 2}), L({2, 2}), L({2, 2})}); }),
                  "pad should be at most half"));
}

TEST(RefPool, MaxPoolNanAndIntegers) {
  auto r = call("aten.max_pool2d_with_indices.default", {F32({1, 1, 2, 2}, {1, NAN, 3, NAN}), L({2, 2})});
  EXPECT_TRUE(std::isnan(r[0].tensor().get_double(0)));
  EXPECT_EQ(r[1].tensor().get_int(0), 3);  // the last NaN
  r = call("aten.max_pool2d_with_indices.default", {F32({1, 1, 1, 2}, {-INFINITY, -INFINITY}), L({1, 2})});
  EXPECT_EQ(r[0].tensor().get_double(0), -INFINITY);
  EXPECT_EQ(r[1].tensor().get_int(0), 0);
  r = call("aten.max_pool2d_with_indices.default", {T(DType::Int32, {1, 1, 2, 2}, {-5, 7, 7, 2}), L({2, 2})});
  EXPECT_EQ(r[0].tensor().dtype(), DType::Int32);
  EXPECT_EQ(ivals(r[0].tensor()), (std::vector<int64_t>{7}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1}));
  // 3-d pooling indexes the flattened D*H*W plane.
  r = call("aten.max_pool3d_with_indices.default", {arange1(DType::Float64, {1, 1, 2, 2, 2}), L({2, 2, 2})});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{8}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{7}));
}

TEST(RefPool, AvgPoolPaddingCeilDivisor) {
  HostTensor x = arange1(DType::Float32, {1, 1, 3, 3});
  auto avg = [&](bool cip, RtValue div) {
    return vals(call1("aten.avg_pool2d.default", {x, L({2, 2}), L({2, 2}), L({1, 1}), B(false), B(cip), div}));
  };
  EXPECT_EQ(avg(true, RtValue()), (std::vector<double>{0.25, 1.25, 2.75, 7}));
  EXPECT_EQ(avg(false, RtValue()), (std::vector<double>{1, 2.5, 5.5, 7}));
  EXPECT_EQ(avg(true, I(2)), (std::vector<double>{0.5, 2.5, 5.5, 14}));
  // ceil_mode: the last window hangs over the end and counts only what it covers.
  HostTensor row = arange1(DType::Float32, {1, 5});
  EXPECT_EQ(vals(call1("aten.avg_pool1d.default", {row, L({2}), L({2}), L({0}), B(true)})), (std::vector<double>{1.5, 3.5, 5}));
  EXPECT_EQ(vals(call1("aten.avg_pool1d.default", {row, L({2})})), (std::vector<double>{1.5, 3.5}));
  // ceil_mode with padding: count_include_pad counts the pad but not past the end.
  EXPECT_EQ(vals(call1("aten.avg_pool1d.default", {row, L({2}), L({2}), L({1}), B(true), B(true)})), (std::vector<double>{0.5, 2.5, 4.5}));
  EXPECT_EQ(vals(call1("aten.avg_pool3d.default", {arange1(DType::Float64, {1, 2, 2, 2}), L({2, 2, 2})})), (std::vector<double>{4.5}));
  // int64 averages truncate.
  EXPECT_EQ(ivals(call1("aten.avg_pool1d.default", {I64({1, 2}, {1, 2}), L({2})})), (std::vector<int64_t>{1}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.avg_pool2d.default", {x, L({4, 4})}); }), "Output size is too small"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.avg_pool2d.default", {F32({3}, {1, 2, 3}), L({1, 1})}); }), "3D or 4D"));
}

TEST(RefPool, AdaptiveAvgPool) {
  HostTensor row = arange1(DType::Float32, {1, 5});
  EXPECT_EQ(vals(call1("aten.adaptive_avg_pool1d.default", {row, L({3})})), (std::vector<double>{1.5, 3, 4.5}));
  HostTensor x = arange1(DType::Float32, {1, 1, 3, 3});
  HostTensor r = call1("aten._adaptive_avg_pool2d.default", {x, L({2, 2})});
  EXPECT_EQ(vals(r), (std::vector<double>{3, 4, 6, 7}));
  EXPECT_EQ(vals(call1("aten._adaptive_avg_pool2d.default", {x, L({1, 1})})), (std::vector<double>{5}));
  EXPECT_EQ(vals(call1("aten._adaptive_avg_pool3d.default", {arange1(DType::Float64, {1, 2, 2, 2}), L({1, 1, 2})})),
            (std::vector<double>{4, 5}));
}

// Backward ops against central differences of sum(go * forward(x)).
TEST(RefPool, BackwardMatchesFiniteDifferences) {
  HostTensor x = filled({1, 2, 5, 4}, 0.77);
  const double h = 1e-6;
  auto check = [&](const std::function<HostTensor(const HostTensor&)>& f, const std::function<HostTensor(const HostTensor&)>& back) {
    HostTensor y = f(x);
    HostTensor go = filled(y.sizes(), 0.41);
    HostTensor gi = back(go);
    for (int64_t i = 0; i < x.numel(); ++i) {
      HostTensor xp = x.clone(), xm = x.clone();
      xp.set_double(i, x.get_double(i) + h);
      xm.set_double(i, x.get_double(i) - h);
      HostTensor yp = f(xp), ym = f(xm);
      double fd = 0;
      for (int64_t k = 0; k < y.numel(); ++k) fd += go.get_double(k) * (yp.get_double(k) - ym.get_double(k)) / (2 * h);
      EXPECT_NEAR(gi.get_double(i), fd, 1e-6) << i;
    }
  };
  for (bool cip : {true, false})
    for (bool ceil : {false, true}) {
      auto fwd = [&](const HostTensor& t) {
        return call1("aten.avg_pool2d.default", {t, L({3, 2}), L({2, 2}), L({1, 1}), B(ceil), B(cip), RtValue()});
      };
      check(fwd, [&](const HostTensor& go) {
        return call1("aten.avg_pool2d_backward.default", {go, x, L({3, 2}), L({2, 2}), L({1, 1}), B(ceil), B(cip), RtValue()});
      });
    }
  check([&](const HostTensor& t) { return call1("aten._adaptive_avg_pool2d.default", {t, L({3, 3})}); },
        [&](const HostTensor& go) { return call1("aten._adaptive_avg_pool2d_backward.default", {go, x}); });
  check([&](const HostTensor& t) { return call("aten.max_pool2d_with_indices.default", {t, L({2, 3}), L({2, 1}), L({1, 1})})[0].tensor(); },
        [&](const HostTensor& go) {
          HostTensor ind = call("aten.max_pool2d_with_indices.default", {x, L({2, 3}), L({2, 1}), L({1, 1})})[1].tensor();
          return call1("aten.max_pool2d_with_indices_backward.default",
                       {go, x, L({2, 3}), L({2, 1}), L({1, 1}), L({1, 1}), B(false), ind});
        });
}

// Huge window parameters are user errors, never overflowing arithmetic.
TEST(RefPool, HugeParametersAreUserErrors) {
  HostTensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const int64_t big = int64_t{1} << 40;
  EXPECT_TRUE(has(error_of([&] { call("aten.max_pool2d_with_indices.default", {x, L({1, 1}), L({big, 1})}); }), "out of range"));
  EXPECT_TRUE(has(error_of([&] { call1("aten._adaptive_avg_pool2d.default", {x, L({big, big})}); }), "out of range"));
  EXPECT_TRUE(has(error_of([&] {
                    call1("aten.convolution.default", {x, F32({1, 1, 1, 1}, {1}), RtValue(), L({big}), L({0}), L({1}), B(false), L({0}), I(1)});
                  }),
                  "out of range"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.constant_pad_nd.default", {x, L({big, 0})}); }), "out of range"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.repeat.default", {x, L({1, 1, int64_t{1} << 62, 1})}); }), "overflows"));
}
