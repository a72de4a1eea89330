// Convolution kernels: exact small cases, an im2col cross-check, the transposed form as the
// adjoint of the direct one, and convolution_backward against finite differences.
#include "ref_test_util.h"

using namespace reftest;

namespace {
HostTensor filled(DType d, std::vector<int64_t> sizes, double scale, double shift) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::sin(scale * static_cast<double>(i) + shift));
  return t;
}
std::vector<RtValue> conv_args(HostTensor x, HostTensor w, RtValue b, std::vector<int64_t> s, std::vector<int64_t> p,
                               std::vector<int64_t> d, bool tr, std::vector<int64_t> op, int64_t g) {
  return {x, w, b, L(s), L(p), L(d), B(tr), L(op), I(g)};
}
HostTensor conv(HostTensor x, HostTensor w, RtValue b, std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> d,
                bool tr = false, std::vector<int64_t> op = {0}, int64_t g = 1) {
  return call1("aten.convolution.default", conv_args(x, w, b, s, p, d, tr, op, g));
}
}  // namespace

TEST(RefConv, Conv2dKnownKernels) {
  HostTensor x = F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor ones2 = F32({1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor r = conv(x, ones2, F32({1}, {1}), {1}, {0}, {1});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{13, 17, 25, 29}));
  // 3x3 ones, padding 1, stride 2.
  HostTensor ones3 = F32({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(vals(conv(x, ones3, RtValue(), {2, 2}, {1, 1}, {1, 1})), (std::vector<double>{12, 16, 24, 28}));
  // Dilation 2: the four corners.
  EXPECT_EQ(vals(conv(x, ones2, RtValue(), {1}, {0}, {2})), (std::vector<double>{20}));
  // A Laplacian-like kernel at the centre.
  HostTensor lap = F32({1, 1, 3, 3}, {0, 1, 0, 1, -4, 1, 0, 1, 0});
  EXPECT_EQ(vals(conv(x, lap, RtValue(), {1}, {0}, {1})), (std::vector<double>{0}));
  EXPECT_TRUE(has(error_of([&] { conv(x, F32({1, 1, 4, 4}, std::vector<double>(16, 1)), RtValue(), {1}, {0}, {1}); }),
                  "Kernel size can't be greater than actual input size"));
  EXPECT_TRUE(has(error_of([&] { conv(F32({1, 2, 3, 3}, std::vector<double>(18, 1)), ones2, RtValue(), {1}, {0}, {1}); }),
                  "expected input[1, 2, 3, 3] to have 1 channels, but got 2 channels instead"));
  EXPECT_TRUE(has(error_of([&] { conv(F32({1, 3, 3}, std::vector<double>(9, 1)), ones2, RtValue(), {1}, {0}, {1}); }),
                  "Expected 4-dimensional input for 4-dimensional weight"));
  EXPECT_TRUE(has(error_of([&] { conv(x, T(DType::Float64, {1, 1, 2, 2}, {1, 1, 1, 1}), RtValue(), {1}, {0}, {1}); }),
                  "should be the same"));
}

TEST(RefConv, Conv1dGroupsAnd3d) {
  HostTensor x = F32({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor w = F32({2, 1, 1}, {2, 3});
  EXPECT_EQ(vals(conv(x, w, RtValue(), {1}, {0}, {1}, false, {0}, 2)), (std::vector<double>{2, 4, 6, 12, 15, 18}));
  HostTensor x3 = F32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor w3 = F32({1, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  HostTensor r = conv(x3, w3, F32({1}, {-36}), {1}, {0}, {1});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(vals(r), (std::vector<double>{0}));
}

TEST(RefConv, TransposedWithOutputPadding) {
  HostTensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  HostTensor ones = F32({1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor r = conv(x, ones, RtValue(), {1}, {0}, {1}, true);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  r = conv(x, ones, RtValue(), {2}, {0}, {1}, true);
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  r = conv(x, ones, F32({1}, {10}), {2}, {0}, {1}, true, {1});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1, 5, 5}));
  EXPECT_EQ(r.get_double(0), 11);
  EXPECT_EQ(r.get_double(24), 10);  // the output_padding row only gets the bias
  // Padding crops the full output.
  r = conv(x, ones, RtValue(), {1}, {1}, {1}, true);
  EXPECT_EQ(vals(r), (std::vector<double>{10}));
  EXPECT_TRUE(has(error_of([&] { conv(x, ones, RtValue(), {1}, {0}, {1}, true, {1}); }), "output padding must be smaller"));
}

// Direct convolution (groups, stride, padding, dilation) against im2col + matrix products.
TEST(RefConv, Im2colCrossCheck) {
  const int64_t N = 2, C = 4, H = 5, W = 6, O = 6, G = 2, KH = 3, KW = 2, SH = 2, SW = 1, PH = 1, PW = 0, DH = 1, DW = 2;
  HostTensor x = filled(DType::Float64, {N, C, H, W}, 0.37, 0.1), w = filled(DType::Float64, {O, C / G, KH, KW}, 0.71, 0.3);
  HostTensor b = filled(DType::Float64, {O}, 1.3, 0.0);
  HostTensor r = conv(x, w, b, {SH, SW}, {PH, PW}, {DH, DW}, false, {0}, G);
  const int64_t OH = (H + 2 * PH - DH * (KH - 1) - 1) / SH + 1, OW = (W + 2 * PW - DW * (KW - 1) - 1) / SW + 1;
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{N, O, OH, OW}));
  const int64_t cg = C / G, og = O / G, K = cg * KH * KW;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      // cols [K, OH*OW]
      HostTensor cols = HostTensor::zeros(DType::Float64, {K, OH * OW});
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                int64_t ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
                double v = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x.get_double(((n * C + g * cg + c) * H + ih) * W + iw) : 0.0;
                cols.set_double(((c * KH + kh) * KW + kw) * OH * OW + oh * OW + ow, v);
              }
      HostTensor wg = w.as_strided({og, K}, {K, 1}, g * og * K);
      HostTensor prod = call1("aten.mm.default", {wg, cols});
      for (int64_t o = 0; o < og; ++o)
        for (int64_t q = 0; q < OH * OW; ++q)
          EXPECT_NEAR(r.get_double((n * O + g * og + o) * OH * OW + q), prod.get_double(o * OH * OW + q) + b.get_double(g * og + o), 1e-12);
    }
}

// The transposed convolution is the adjoint of the direct one: <conv(x, w), y> == <x, convT(y, w)>.
TEST(RefConv, TransposedIsAdjoint) {
  HostTensor x = filled(DType::Float64, {1, 4, 7, 6}, 0.5, 0.2), w = filled(DType::Float64, {6, 2, 3, 2}, 0.9, 0.4);
  HostTensor y = conv(x, w, RtValue(), {2, 1}, {1, 1}, {1, 2}, false, {0}, 2);
  HostTensor z = filled(DType::Float64, y.sizes(), 0.33, 0.7);
  HostTensor xt = conv(z, w, RtValue(), {2, 1}, {1, 1}, {1, 2}, true, {0, 0}, 2);
  ASSERT_EQ(xt.sizes(), x.sizes());
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < y.numel(); ++i) lhs += y.get_double(i) * z.get_double(i);
  for (int64_t i = 0; i < x.numel(); ++i) rhs += x.get_double(i) * xt.get_double(i);
  EXPECT_NEAR(lhs, rhs, 1e-10);
}

// convolution_backward against central differences of sum(go * conv(x, w, b)).
TEST(RefConv, BackwardMatchesFiniteDifferences) {
  for (bool tr : {false, true}) {
    HostTensor x = filled(DType::Float64, {2, 2, 4, 3}, 0.61, 0.1);
    HostTensor w = filled(DType::Float64, tr ? std::vector<int64_t>{2, 2, 2, 2} : std::vector<int64_t>{4, 1, 2, 2}, 0.83, 0.5);
    HostTensor b = filled(DType::Float64, {4}, 0.3, 0.2);
    std::vector<int64_t> s{2, 1}, p{1, 0}, d{1, 1}, op{tr ? 1 : 0, 0};
    HostTensor y = conv(x, w, b, s, p, d, tr, op, 2);
    HostTensor go = filled(DType::Float64, y.sizes(), 0.47, 0.9);
    auto r = call("aten.convolution_backward.default",
                  {go, x, w, L({4}), L(s), L(p), L(d), B(tr), L(op), I(2), RtValue(RtValue::List{B(true), B(true), B(true)})});
    auto loss = [&](const HostTensor& xx, const HostTensor& ww, const HostTensor& bb) {
      HostTensor yy = conv(xx, ww, bb, s, p, d, tr, op, 2);
      double l = 0;
      for (int64_t i = 0; i < yy.numel(); ++i) l += yy.get_double(i) * go.get_double(i);
      return l;
    };
    const double h = 1e-6;
    HostTensor* ts[3] = {&x, &w, &b};
    for (int k = 0; k < 3; ++k)
      for (int64_t i = 0; i < ts[k]->numel(); ++i) {
        HostTensor* t = ts[k];
        double v = t->get_double(i);
        t->set_double(i, v + h);
        double lp = loss(x, w, b);
        t->set_double(i, v - h);
        double lm = loss(x, w, b);
        t->set_double(i, v);
        EXPECT_NEAR(r[static_cast<size_t>(k)].tensor().get_double(i), (lp - lm) / (2 * h), 1e-6) << "transposed=" << tr << " grad " << k << " at " << i;
      }
  }
  // A masked output is an empty 1-d tensor (the meta's undefined_result).
  HostTensor x = F32({1, 1, 3, 3}, std::vector<double>(9, 1)), w = F32({1, 1, 2, 2}, {1, 1, 1, 1});
  auto r = call("aten.convolution_backward.default", {F32({1, 1, 2, 2}, {1, 1, 1, 1}), x, w, RtValue(), L({1}), L({0}), L({1}), B(false),
                                                     L({0}), I(1), RtValue(RtValue::List{B(false), B(true), B(false)})});
  EXPECT_EQ(r[0].tensor().sizes(), (std::vector<int64_t>{0}));
  EXPECT_EQ(vals(r[1].tensor()), (std::vector<double>{4, 4, 4, 4}));
  EXPECT_EQ(r[2].tensor().sizes(), (std::vector<int64_t>{0}));
}
