// Exact-value tests of the reduction reference kernels.
#include <limits>

#include "ref_test_util.h"

using namespace reftest;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
RtValue NoneV() { return RtValue(); }
}  // namespace

TEST(RefReduction, SumDimsKeepdimAndDtype) {
  HostTensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(vals(call1("aten.sum.dim_IntList", {x, L({1})})), (std::vector<double>{6, 15}));
  HostTensor k = call1("aten.sum.dim_IntList", {x, L({0}), B(true)});
  EXPECT_EQ(k.sizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(vals(k), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(vals(call1("aten.sum.dim_IntList", {x, NoneV()})), (std::vector<double>{21}));
  EXPECT_EQ(vals(call1("aten.sum.dim_IntList", {x, L({-1, 0})})), (std::vector<double>{21}));
  HostTensor i = call1("aten.sum.default", {T(DType::Int8, {3}, {100, 100, 100})});
  EXPECT_EQ(i.dtype(), DType::Int64);  // integer sums accumulate and return int64
  EXPECT_EQ(ivals(i)[0], 300);
  EXPECT_EQ(call1("aten.sum.default", {T(DType::Bool, {3}, {1, 1, 0})}).get_int(0), 2);
  EXPECT_EQ(call1("aten.sum.default", {x}, {{"dtype", RtValue(DType::Float64)}}).dtype(), DType::Float64);
  EXPECT_NE(error_of([&] { call1("aten.sum.dim_IntList", {x, L({0, -2})}); }).find("multiple times"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.sum.dim_IntList", {x, L({2})}); }).find("Dimension out of range"), std::string::npos);
}

TEST(RefReduction, SumAccumulatesInDoubleAndEmptyIsZero) {
  // 2^24 + 1 + 1 in f32 step by step would lose the ones; a double accumulator keeps them.
  HostTensor x = F32({3}, {16777216, 1, 1});
  EXPECT_EQ(vals(call1("aten.sum.default", {x}))[0], 16777218);
  HostTensor h = T(DType::Float16, {4}, {2048, 1, 1, 1});
  EXPECT_EQ(vals(call1("aten.sum.default", {h}))[0], 2052);  // rounded once at the end
  HostTensor e = call1("aten.sum.dim_IntList", {F32({0, 3}, {}), L({0})});
  EXPECT_EQ(vals(e), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(vals(call1("aten.prod.default", {F32({0}, {})})), (std::vector<double>{1}));
  EXPECT_TRUE(std::isnan(vals(call1("aten.sum.default", {F32({2}, {kInf, -kInf})}))[0]));
}

TEST(RefReduction, ProdAndIntWrap) {
  EXPECT_EQ(vals(call1("aten.prod.dim_int", {F32({2, 2}, {1, 2, 3, 4}), I(1)})), (std::vector<double>{2, 12}));
  HostTensor big = I64({2}, {4294967296.0, 4294967296.0});
  EXPECT_EQ(ivals(call1("aten.prod.default", {big}))[0], 0);  // 2^64 wraps to 0
  EXPECT_EQ(call1("aten.prod.default", {T(DType::Int32, {2}, {3, 4})}).dtype(), DType::Int64);
}

TEST(RefReduction, Mean) {
  EXPECT_EQ(vals(call1("aten.mean.dim", {F32({2, 2}, {1, 2, 3, 5}), L({1}), B(true)})), (std::vector<double>{1.5, 4}));
  EXPECT_TRUE(std::isnan(vals(call1("aten.mean.default", {F32({0}, {})}))[0]));
  EXPECT_NE(error_of([] { call1("aten.mean.default", {I64({2}, {1, 2})}); }).find("could not infer output dtype"), std::string::npos);
  EXPECT_EQ(vals(call1("aten.mean.default", {I64({2}, {1, 2})}, {{"dtype", RtValue(DType::Float64)}}))[0], 1.5);
}

TEST(RefReduction, AmaxAminNaNAndEmpty) {
  HostTensor x = F32({2, 3}, {1, kNaN, 3, -1, -5, -0.5});
  auto mx = vals(call1("aten.amax.default", {x, L({1})}));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], -0.5);
  EXPECT_EQ(vals(call1("aten.amin.default", {x, L({0})})).at(2), -0.5);
  EXPECT_TRUE(std::isnan(vals(call1("aten.amin.default", {x}))[0]));  // dim=[] reduces everything
  EXPECT_NE(error_of([] { call1("aten.amax.default", {F32({0, 3}, {}), L({0})}); }).find("non-zero size"), std::string::npos);
  EXPECT_EQ(call1("aten.amax.default", {F32({0, 3}, {}), L({1})}).sizes(), (std::vector<int64_t>{0}));
  EXPECT_EQ(ivals(call1("aten.amax.default", {T(DType::Int8, {3}, {-128, 5, 127}), L({0})})), (std::vector<int64_t>{127}));
}

TEST(RefReduction, MaxMinDimValuesAndIndices) {
  HostTensor x = F32({2, 4}, {3, 7, 7, 1, 2, kNaN, 9, kNaN});
  auto r = call("aten.max.dim", {x, I(1)});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(vals(r[0].tensor())[0], 7);
  EXPECT_TRUE(std::isnan(vals(r[0].tensor())[1]));
  EXPECT_EQ(ivals(r[1].tensor()), (std::vector<int64_t>{1, 1}));  // first max; first NaN
  auto m = call("aten.min.dim", {x, I(-1), B(true)});
  EXPECT_EQ(m[0].tensor().sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ivals(m[1].tensor()), (std::vector<int64_t>{3, 1}));  // NaN counts for min too
  EXPECT_EQ(vals(call1("aten.max.default", {I64({3}, {4, -2, 9})})), (std::vector<double>{9}));
  EXPECT_NE(error_of([] { call1("aten.min.default", {F32({0}, {})}); }).find("numel() == 0"), std::string::npos);
  EXPECT_NE(error_of([] { call("aten.max.dim", {F32({2, 0}, {}), I(1)}); }).find("non-zero size"), std::string::npos);
}

TEST(RefReduction, ArgmaxArgmin) {
  HostTensor x = F32({2, 3}, {1, 5, 5, 0, -1, -1});
  EXPECT_EQ(ivals(call1("aten.argmax.default", {x})), (std::vector<int64_t>{1}));
  EXPECT_EQ(ivals(call1("aten.argmin.default", {x})), (std::vector<int64_t>{4}));
  EXPECT_EQ(ivals(call1("aten.argmax.default", {x, I(0)})), (std::vector<int64_t>{0, 0, 0}));
  HostTensor k = call1("aten.argmax.default", {x, NoneV(), B(true)});
  EXPECT_EQ(k.sizes(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ivals(call1("aten.argmax.default", {F32({3}, {1, kNaN, kNaN})})), (std::vector<int64_t>{1}));
  EXPECT_NE(error_of([] { call1("aten.argmax.default", {F32({0}, {})}); }).find("numel() == 0"), std::string::npos);
  // Non-contiguous: a transposed view.
  HostTensor t = x.as_strided({3, 2}, {1, 3}, 0);
  EXPECT_EQ(ivals(call1("aten.argmax.default", {t, I(1)})), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(ivals(call1("aten.argmin.default", {t, I(0)})), (std::vector<int64_t>{0, 1}));
}

TEST(RefReduction, Any) {
  HostTensor x = F32({2, 2}, {0, 0, kNaN, 0});
  EXPECT_EQ(ivals(call1("aten.any.default", {x})), (std::vector<int64_t>{1}));
  EXPECT_EQ(ivals(call1("aten.any.dim", {x, I(1)})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ivals(call1("aten.any.dims", {x, L({0, 1}), B(true)})), (std::vector<int64_t>{1}));
  EXPECT_EQ(call1("aten.any.default", {T(DType::UInt8, {2}, {0, 3})}).dtype(), DType::UInt8);
  EXPECT_EQ(call1("aten.any.default", {I64({2}, {0, 3})}).dtype(), DType::Bool);
  EXPECT_EQ(ivals(call1("aten.any.default", {F32({0}, {})})), (std::vector<int64_t>{0}));
}

TEST(RefReduction, VarAndVarMean) {
  HostTensor x = T(DType::Float64, {2, 3}, {1, 2, 3, 2, 4, 6});
  EXPECT_EQ(vals(call1("aten.var.correction", {x, L({1})})), (std::vector<double>{1, 4}));
  EXPECT_EQ(vals(call1("aten.var.correction", {x, L({1})}, {{"correction", I(0)}})), (std::vector<double>{2.0 / 3, 8.0 / 3}));
  EXPECT_EQ(vals(call1("aten.var.dim", {x, L({1}), B(false)})), (std::vector<double>{2.0 / 3, 8.0 / 3}));
  auto vm = call("aten.var_mean.correction", {x, L({0})}, {{"keepdim", B(true)}});
  EXPECT_EQ(vals(vm[0].tensor()), (std::vector<double>{0.5, 2, 4.5}));
  EXPECT_EQ(vals(vm[1].tensor()), (std::vector<double>{1.5, 3, 4.5}));
  EXPECT_TRUE(std::isnan(vals(call1("aten.var.correction", {T(DType::Float64, {1}, {3})}))[0]));  // 0/0
  EXPECT_NE(error_of([] { call1("aten.var.correction", {I64({2}, {1, 2})}); }).find("floating point"), std::string::npos);
}

TEST(RefReduction, Cumsum) {
  HostTensor x = I64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ivals(call1("aten.cumsum.default", {x, I(1)})), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(ivals(call1("aten.cumsum.default", {x, I(0)})), (std::vector<int64_t>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(call1("aten.cumsum.default", {T(DType::Bool, {2}, {1, 1}), I(0)}).dtype(), DType::Int64);
  auto f = vals(call1("aten.cumsum.default", {F32({3}, {1, kNaN, 1}), I(0)}));
  EXPECT_EQ(f[0], 1);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(call1("aten.cumsum.default", {T(DType::Float16, {2}, {1, 2}), I(0)}, {{"dtype", RtValue(DType::Float32)}}).dtype(),
            DType::Float32);
}
