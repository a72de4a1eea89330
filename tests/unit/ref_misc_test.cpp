// cdist, pdist, grid_sampler_2d, col2im, upsampling and the reflection/replication pads.
#include "ref_test_util.h"

using namespace reftest;

namespace {
RtValue FL(std::vector<double> v) {
  RtValue::List l;
  for (double x : v) l.push_back(D(x));
  return RtValue(std::move(l));
}
HostTensor img() { return F32({1, 1, 2, 2}, {1, 2, 3, 4}); }
double sample(int64_t mode, int64_t pad, bool align, double gx, double gy) {
  return call1("aten.grid_sampler_2d.default", {img(), F32({1, 1, 1, 2}, {gx, gy}), I(mode), I(pad), B(align)}).get_double(0);
}
}  // namespace

TEST(RefMisc, CdistPdist) {
  HostTensor x1 = F32({2, 2}, {0, 0, 1, 1}), x2 = F32({1, 2}, {3, 4});
  auto cd = [&](double p) { return vals(call1("aten._cdist_forward.default", {x1, x2, D(p), RtValue()})); };
  std::vector<double> d2 = cd(2);
  EXPECT_EQ(d2[0], 5);
  EXPECT_FLOAT_EQ(d2[1], static_cast<float>(std::sqrt(13.0)));
  EXPECT_EQ(cd(1), (std::vector<double>{7, 5}));
  EXPECT_EQ(cd(0), (std::vector<double>{2, 2}));
  EXPECT_EQ(cd(INFINITY), (std::vector<double>{4, 3}));
  HostTensor b = call1("aten._cdist_forward.default", {F32({2, 1, 1}, {0, 1}), F32({1, 2, 1}, {0, 3}), D(2), RtValue()});
  EXPECT_EQ(b.sizes(), (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(vals(b), (std::vector<double>{0, 3, 1, 2}));
  EXPECT_TRUE(has(error_of([&] { call1("aten._cdist_forward.default", {x1, F32({1, 3}, {1, 2, 3}), D(2), RtValue()}); }),
                  "same number of columns"));
  EXPECT_EQ(vals(call1("aten._pdist_forward.default", {F32({3, 2}, {0, 0, 3, 4, 6, 8})})), (std::vector<double>{5, 10, 5}));
  EXPECT_EQ(vals(call1("aten._pdist_forward.default", {F32({3, 2}, {0, 0, 3, 4, 6, 8}), D(1)})), (std::vector<double>{7, 14, 7}));
}

TEST(RefMisc, GridSamplerModesAndPadding) {
  EXPECT_EQ(sample(0, 0, false, 0, 0), 2.5);    // the centre
  EXPECT_EQ(sample(0, 0, true, -1, -1), 1);     // a corner with align_corners
  EXPECT_EQ(sample(0, 0, false, -1, -1), 0.25); // half a pixel outside: zeros padding
  EXPECT_EQ(sample(0, 1, false, -1, -1), 1);    // border
  EXPECT_EQ(sample(0, 2, false, -1, -1), 1);    // reflection
  EXPECT_EQ(sample(0, 0, true, 0.5, 1), 3.75);  // x = 0.75 on the last row: 0.25 * 3 + 0.75 * 4
  EXPECT_EQ(sample(1, 0, false, 0, 0), 1);      // nearest: 0.5 rounds half to even
  EXPECT_EQ(sample(1, 0, true, 1, -1), 2);
  EXPECT_EQ(sample(2, 0, true, 1, 1), 4);       // bicubic at a pixel centre is exact
  EXPECT_EQ(sample(2, 1, true, -1, 1), 3);
  EXPECT_TRUE(has(error_of([&] { call1("aten.grid_sampler_2d.default", {img(), F32({2, 1, 1, 2}, {0, 0, 0, 0}), I(0), I(0), B(false)}); }),
                  "same batch size"));
}

// Bilinear grid sampling on the regular grid equals bilinear upsampling (align_corners=True).
TEST(RefMisc, GridSamplerMatchesUpsample) {
  HostTensor x = HostTensor::zeros(DType::Float64, {1, 2, 3, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::cos(static_cast<double>(i) * 0.9));
  const int64_t OH = 5, OW = 7;
  HostTensor grid = HostTensor::zeros(DType::Float64, {1, OH, OW, 2});
  for (int64_t h = 0; h < OH; ++h)
    for (int64_t w = 0; w < OW; ++w) {
      grid.set_double((h * OW + w) * 2, -1 + 2.0 * static_cast<double>(w) / (OW - 1));
      grid.set_double((h * OW + w) * 2 + 1, -1 + 2.0 * static_cast<double>(h) / (OH - 1));
    }
  HostTensor g = call1("aten.grid_sampler_2d.default", {x, grid, I(0), I(1), B(true)});
  HostTensor u = call1("aten.upsample_bilinear2d.vec", {x, L({OH, OW}), B(true), RtValue()});
  ASSERT_EQ(g.sizes(), u.sizes());
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_NEAR(g.get_double(i), u.get_double(i), 1e-12);
}

TEST(RefMisc, Col2im) {
  HostTensor cols = F32({1, 4, 4}, std::vector<double>(16, 1));
  HostTensor r = call1("aten.col2im.default", {cols, L({3, 3}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
  // Unbatched, stride 2, padding 1: each 2x2 block lands on its own pixels.
  HostTensor c2 = F32({4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  r = call1("aten.col2im.default", {c2, L({2, 2}), L({2, 2}), L({1, 1}), L({1, 1}), L({2, 2})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{13, 10, 7, 4}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.col2im.default", {cols, L({4, 4}), L({2, 2}), L({1, 1}), L({0, 0}), L({1, 1})}); }),
                  "calculated number of sliding blocks"));
}

TEST(RefMisc, Upsample) {
  HostTensor r = call1("aten.upsample_nearest2d.vec", {img(), L({4, 4}), RtValue()});
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  r = call1("aten.upsample_nearest2d.vec", {img(), L({3, 3}), RtValue()});
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1, 2, 1, 1, 2, 3, 3, 4}));
  r = call1("aten.upsample_nearest2d.vec", {img(), RtValue(), FL({1.5, 1.5})});
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1, 2, 1, 1, 2, 3, 3, 4}));
  r = call1("aten.upsample_bilinear2d.vec", {img(), L({3, 3}), B(true), RtValue()});
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
  r = call1("aten.upsample_bilinear2d.vec", {img(), RtValue(), B(false), FL({2, 2})});
  std::vector<double> v = vals(r);
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 4), (std::vector<double>{1, 1.25, 1.75, 2}));
  EXPECT_EQ(std::vector<double>(v.end() - 4, v.end()), (std::vector<double>{3, 3.25, 3.75, 4}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.upsample_nearest2d.vec", {img(), L({2, 2}), FL({2, 2})}); }), "exactly one of"));
}

TEST(RefMisc, ReflectionReplicationPads) {
  HostTensor x = F32({1, 3}, {1, 2, 3});
  EXPECT_EQ(vals(call1("aten.reflection_pad1d.default", {x, L({2, 1})})), (std::vector<double>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(vals(call1("aten.reflection_pad1d.default", {x, L({-1, 2})})), (std::vector<double>{2, 3, 2, 1}));
  HostTensor sq = F32({1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor r = call1("aten.reflection_pad2d.default", {sq, L({1, 1, 1, 1})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 5, 5}));
  std::vector<double> v = vals(r);
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 5), (std::vector<double>{5, 4, 5, 6, 5}));
  r = call1("aten.replication_pad2d.default", {F32({1, 2, 2}, {1, 2, 3, 4}), L({1, 0, 0, 1})});
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1, 2, 3, 3, 4, 3, 3, 4}));
  HostTensor cube = F32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  r = call1("aten.replication_pad3d.default", {cube, L({0, 0, 0, 0, 1, 1})});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{1, 1, 4, 2, 2}));
  EXPECT_EQ(vals(r), (std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8}));
  r = call1("aten.reflection_pad3d.default", {cube, L({1, 0, 0, 0, 0, 0})});
  EXPECT_EQ(vals(r), (std::vector<double>{2, 1, 2, 4, 3, 4, 6, 5, 6, 8, 7, 8}));
  EXPECT_TRUE(has(error_of([&] { call1("aten.reflection_pad1d.default", {x, L({3, 0})}); }), "Padding size should be less than"));
  EXPECT_TRUE(has(error_of([&] { call1("aten.reflection_pad2d.default", {x, L({1, 1, 1, 1})}); }), "3D or 4D"));
}
