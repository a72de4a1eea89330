// sort and topk: NaN ordering, stability, ties, dims; a brute-force check on random data.
#include <algorithm>

#include "ref_test_util.h"

using namespace reftest;

TEST(RefSort, NanOrderAndStability) {
  HostTensor x = F32({5}, {3, NAN, 1, 3, -INFINITY});
  auto r = call("aten.sort.default", {x});
  std::vector<double> v = vals(r[0].tensor());
  EXPECT_EQ(std::vector<double>(v.begin(), v.end() - 1), (std::vector<double>{-INFINITY, 1, 3, 3}));
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{4, 2, 0, 3, 1}));
  r = call("aten.sort.default", {x, I(0), B(true)});
  v = vals(r[0].tensor());
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(std::vector<double>(v.begin() + 1, v.end()), (std::vector<double>{3, 3, 1, -INFINITY}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1, 0, 3, 2, 4}));  // equal 3s keep their order
}

TEST(RefSort, DimsIntsAndBool) {
  HostTensor x = I64({2, 3}, {3, 1, 2, 0, 5, 4});
  auto r = call("aten.sort.default", {x, I(0)});
  EXPECT_EQ(ivals(r[0].tensor()), (std::vector<int64_t>{0, 1, 2, 3, 5, 4}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1, 0, 0, 0, 1, 1}));
  r = call("aten.sort.default", {x, I(-1), B(true)});
  EXPECT_EQ(ivals(r[0].tensor()), (std::vector<int64_t>{3, 2, 1, 5, 4, 0}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{0, 2, 1, 1, 2, 0}));
  r = call("aten.sort.default", {T(DType::Bool, {3}, {1, 0, 1})});
  EXPECT_EQ(ivals(r[0].tensor()), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1, 0, 2}));
  r = call("aten.sort.default", {F32({}, {7})});
  EXPECT_EQ(r[0].tensor().dim(), 0);
  EXPECT_EQ(r[1].tensor().get_int(0), 0);
}

TEST(RefSort, TopkTiesAndErrors) {
  HostTensor x = F32({4}, {5, 1, 5, 2});
  auto r = call("aten.topk.default", {x, I(2)});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{5, 5}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{0, 2}));
  r = call("aten.topk.default", {x, I(2), I(0), B(false)});
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{1, 2}));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1, 3}));
  r = call("aten.topk.default", {F32({3}, {1, NAN, 2}), I(1)});
  EXPECT_TRUE(std::isnan(r[0].tensor().get_double(0)));
  EXPECT_EQ(r[1].tensor().get_int(0), 1);
  r = call("aten.topk.default", {F32({2, 2}, {1, 4, 3, 2}), I(1), I(0)});
  EXPECT_EQ(r[0].tensor().sizes(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(vals(r[0].tensor()), (std::vector<double>{3, 4}));
  EXPECT_EQ(call("aten.topk.default", {x, I(0)})[0].tensor().numel(), 0);
  EXPECT_NE(error_of([&] { call("aten.topk.default", {x, I(5)}); }).find("selected index k out of range"), std::string::npos);
}

TEST(RefSort, BruteForceAgainstStdSort) {
  HostTensor x = HostTensor::zeros(DType::Float64, {3, 40});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::floor(std::sin(static_cast<double>(i) * 12.9898) * 7));
  auto r = call("aten.sort.default", {x, I(1), B(true)});
  for (int64_t row = 0; row < 3; ++row) {
    std::vector<std::pair<double, int64_t>> ref;
    for (int64_t j = 0; j < 40; ++j) ref.emplace_back(-x.get_double(row * 40 + j), j);
    std::sort(ref.begin(), ref.end());  // by value, then by index: a stable descending order
    for (int64_t j = 0; j < 40; ++j) {
      EXPECT_EQ(r[0].tensor().get_double(row * 40 + j), -ref[static_cast<size_t>(j)].first);
      EXPECT_EQ(r[1].tensor().get_int(row * 40 + j), ref[static_cast<size_t>(j)].second);
    }
  }
}
