// Matrix products: exact values, every matmul rank case, broadcasting against per-batch mm.
#include <limits>

#include "ref_test_util.h"

using namespace reftest;

TEST(RefLinalg, MmAddmm) {
  HostTensor a = F32({2, 2}, {1, 2, 3, 4}), b = F32({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(vals(call1("aten.mm.default", {a, b})), (std::vector<double>{19, 22, 43, 50}));
  HostTensor r = call1("aten.addmm.default", {F32({2}, {1, 1}), a, b}, {{"beta", I(2)}, {"alpha", I(3)}});
  EXPECT_EQ(vals(r), (std::vector<double>{59, 68, 131, 152}));
  // beta = 0 ignores NaN in self.
  r = call1("aten.addmm.default", {F32({1}, {NAN}), a, b}, {{"beta", I(0)}});
  EXPECT_EQ(vals(r), (std::vector<double>{19, 22, 43, 50}));
  // Non-contiguous operand (a transposed view).
  HostTensor at = a.as_strided({2, 2}, {1, 2}, 0);
  EXPECT_EQ(vals(call1("aten.mm.default", {at, b})), (std::vector<double>{26, 30, 38, 44}));
  EXPECT_NE(error_of([&] { call1("aten.mm.default", {a, T(DType::Float64, {2, 2}, {1, 2, 3, 4})}); }).find("same dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.mm.default", {a, F32({3, 1}, {1, 2, 3})}); }).find("cannot be multiplied"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.addmm.default", {I64({1}, {1}), I64({1, 1}, {1}), I64({1, 1}, {1})}, {{"beta", D(0.5)}}); })
                .find("must not be a floating point number"),
            std::string::npos);
}

TEST(RefLinalg, BmmBaddbmmIntegerWrap) {
  HostTensor x = I64({2, 1, 2}, {1, 2, 3, 4}), y = I64({2, 2, 1}, {5, 6, 7, 8});
  EXPECT_EQ(ivals(call1("aten.bmm.default", {x, y})), (std::vector<int64_t>{17, 53}));
  EXPECT_EQ(ivals(call1("aten.baddbmm.default", {I64({1}, {1}), x, y}, {{"beta", I(-1)}, {"alpha", I(2)}})),
            (std::vector<int64_t>{33, 105}));
  const int64_t big = std::numeric_limits<int64_t>::max();
  HostTensor w = HostTensor::zeros(DType::Int64, {1, 1});
  w.set_int(0, big);
  EXPECT_EQ(ivals(call1("aten.mm.default", {w, I64({1, 1}, {2})})), (std::vector<int64_t>{-2}));
  EXPECT_NE(error_of([&] { call1("aten.bmm.default", {x, I64({1, 2, 1}, {1, 2})}); }).find("same number of batches"), std::string::npos);
}

TEST(RefLinalg, MatmulRankCases) {
  HostTensor v = F32({3}, {1, 2, 3}), w = F32({3}, {4, 5, 6});
  HostTensor d = call1("aten.matmul.default", {v, w});
  EXPECT_EQ(d.dim(), 0);
  EXPECT_EQ(d.get_double(0), 32);
  HostTensor m = F32({2, 2}, {1, 2, 3, 4}), u = F32({2}, {1, 1});
  HostTensor mv = call1("aten.matmul.default", {m, u});
  EXPECT_EQ(mv.sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ(vals(mv), (std::vector<double>{3, 7}));
  HostTensor vm = call1("aten.matmul.default", {u, m});
  EXPECT_EQ(vm.sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ(vals(vm), (std::vector<double>{4, 6}));
  // [2, 2, 2] @ [2] -> [2, 2]; [2] @ [2, 2, 2] -> [2, 2].
  HostTensor b3 = F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(vals(call1("aten.matmul.default", {b3, u})), (std::vector<double>{3, 7, 11, 15}));
  EXPECT_EQ(vals(call1("aten.matmul.default", {u, b3})), (std::vector<double>{4, 6, 12, 14}));
  EXPECT_NE(error_of([&] { call1("aten.matmul.default", {F32({}, {1}), u}); }).find("at least 1D"), std::string::npos);
}

// Broadcast batch dims: [3, 1, 2, 4] @ [2, 4, 3] -> [3, 2, 2, 3], each block an mm.
TEST(RefLinalg, MatmulBroadcastCrossCheck) {
  HostTensor x = HostTensor::zeros(DType::Float64, {3, 1, 2, 4}), y = HostTensor::zeros(DType::Float64, {2, 4, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(static_cast<double>(i)));
  for (int64_t i = 0; i < y.numel(); ++i) y.set_double(i, std::cos(static_cast<double>(i)));
  HostTensor r = call1("aten.matmul.default", {x, y});
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{3, 2, 2, 3}));
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t q = 0; q < 2; ++q) {
      HostTensor xb = x.as_strided({2, 4}, {4, 1}, p * 8), yb = y.as_strided({4, 3}, {3, 1}, q * 12);
      HostTensor mm = call1("aten.mm.default", {xb, yb});
      for (int64_t k = 0; k < 6; ++k) EXPECT_DOUBLE_EQ(r.get_double((p * 2 + q) * 6 + k), mm.get_double(k));
    }
}

TEST(RefLinalg, Linear) {
  HostTensor x = F32({1, 2}, {1, 2});
  HostTensor w = F32({3, 2}, {1, 0, 0, 1, 1, 1});
  EXPECT_EQ(vals(call1("aten.linear.default", {x, w, F32({3}, {10, 20, 30})})), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(vals(call1("aten.linear.default", {x, w})), (std::vector<double>{1, 2, 3}));
  HostTensor v = call1("aten.linear.default", {F32({2}, {1, 2}), F32({2}, {3, 4}), F32({}, {1})});
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.get_double(0), 12);
}
