// Exact-value tests of the binary pointwise reference kernels: promotion, broadcasting, wrap
// around, division modes, NaN handling.
#include <limits>

#include "ref_test_util.h"

using namespace reftest;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST(RefBinary, AddBroadcastsAndPromotes) {
  HostTensor a = I64({2, 1}, {1, 2});
  HostTensor b = F32({3}, {0.5, 1.5, 2.5});
  HostTensor r = call1("aten.add.Tensor", {a, b}, {{"alpha", I(2)}});
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(vals(r), (std::vector<double>{2, 4, 6, 3, 5, 7}));
  EXPECT_NE(error_of([&] { call1("aten.add.Tensor", {F32({2}, {1, 2}), F32({3}, {1, 2, 3})}); }).find("must match the size"),
            std::string::npos);
}

TEST(RefBinary, IntAddWrapsAround) {
  HostTensor a = T(DType::Int8, {2}, {127, -128});
  EXPECT_EQ(ivals(call1("aten.add.Tensor", {a, T(DType::Int8, {2}, {1, -1})})), (std::vector<int64_t>{-128, 127}));
  HostTensor big = I64({1}, {0});
  big.set_int(0, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ivals(call1("aten.add.Scalar", {big, I(1)}))[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ivals(call1("aten.mul.Scalar", {big, I(2)}))[0], -2);
  HostTensor u = T(DType::UInt8, {1}, {250});
  EXPECT_EQ(ivals(call1("aten.add.Scalar", {u, I(10)}))[0], 4);  // stays uint8 with an int scalar
}

TEST(RefBinary, ScalarAndZeroDimPromotion) {
  HostTensor i32 = T(DType::Int32, {2}, {1, 2});
  EXPECT_EQ(call1("aten.mul.Scalar", {i32, D(0.5)}).dtype(), DType::Float32);
  EXPECT_EQ(call1("aten.mul.Scalar", {i32, I(3)}).dtype(), DType::Int32);
  EXPECT_EQ(call1("aten.mul.Tensor", {i32, T(DType::Int64, {}, {3})}).dtype(), DType::Int32);
  EXPECT_EQ(call1("aten.mul.Tensor", {i32, T(DType::Float64, {}, {3})}).dtype(), DType::Float64);
  EXPECT_EQ(call1("aten.mul.Tensor", {T(DType::Float16, {1}, {1}), T(DType::Float64, {}, {3})}).dtype(), DType::Float16);
  EXPECT_EQ(call1("aten.add.Tensor", {T(DType::UInt8, {1}, {1}), T(DType::Int8, {1}, {1})}).dtype(), DType::Int16);
  EXPECT_EQ(call1("aten.add.Tensor", {T(DType::Float16, {1}, {1}), T(DType::BFloat16, {1}, {1})}).dtype(), DType::Float32);
  EXPECT_EQ(call1("aten.add.Scalar", {T(DType::Bool, {1}, {1}), I(1)}).dtype(), DType::Int64);
  HostTensor bb = call1("aten.add.Tensor", {T(DType::Bool, {2}, {1, 0}), T(DType::Bool, {2}, {1, 0})});
  EXPECT_EQ(bb.dtype(), DType::Bool);
  EXPECT_EQ(ivals(bb), (std::vector<int64_t>{1, 0}));
}

TEST(RefBinary, SubAlphaAndErrors) {
  EXPECT_EQ(ivals(call1("aten.sub.Tensor", {I64({2}, {10, 20}), I64({2}, {1, 2})}, {{"alpha", I(3)}})),
            (std::vector<int64_t>{7, 14}));
  EXPECT_NE(error_of([] { call1("aten.sub.Tensor", {T(DType::Bool, {1}, {1}), T(DType::Bool, {1}, {1})}); })
                .find("two bool tensors"),
            std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.add.Tensor", {I64({1}, {1}), I64({1}, {1})}, {{"alpha", D(0.5)}}); })
                .find("alpha must not be a floating"),
            std::string::npos);
  EXPECT_EQ(vals(call1("aten.rsub.Scalar", {F32({2}, {1, 2}), I(10)})), (std::vector<double>{9, 8}));
}

TEST(RefBinary, TrueDivisionAndModes) {
  HostTensor r = call1("aten.div.Tensor", {I64({4}, {1, -1, 0, 7}), I64({4}, {0, 0, 0, 2})});
  EXPECT_EQ(r.dtype(), DType::Float32);
  auto v = vals(r);
  EXPECT_EQ(v[0], kInf);
  EXPECT_EQ(v[1], -kInf);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], 3.5);
  HostTensor a = I64({4}, {7, -7, 7, -7});
  HostTensor b = I64({4}, {2, 2, -2, -2});
  EXPECT_EQ(ivals(call1("aten.div.Tensor_mode", {a, b}, {{"rounding_mode", S("trunc")}})), (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(ivals(call1("aten.div.Tensor_mode", {a, b}, {{"rounding_mode", S("floor")}})), (std::vector<int64_t>{3, -4, -4, 3}));
  auto ff = vals(call1("aten.div.Tensor_mode", {F32({3}, {7, -7, 1}), F32({3}, {2, 2, 0})}, {{"rounding_mode", S("floor")}}));
  EXPECT_EQ(ff[0], 3);
  EXPECT_EQ(ff[1], -4);
  EXPECT_EQ(ff[2], kInf);
  EXPECT_NE(error_of([] { call1("aten.div.Tensor_mode", {I64({1}, {1}), I64({1}, {0})}, {{"rounding_mode", S("trunc")}}); })
                .find("ZeroDivisionError"),
            std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.div.Scalar_mode", {I64({1}, {1}), I(2)}, {{"rounding_mode", S("ceil")}}); })
                .find("rounding_mode"),
            std::string::npos);
  HostTensor m = I64({1}, {0});
  m.set_int(0, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ivals(call1("aten.div.Scalar_mode", {m, I(-1)}, {{"rounding_mode", S("floor")}}))[0],
            std::numeric_limits<int64_t>::min());  // wraps, no UB
}

TEST(RefBinary, RemainderAndFmod) {
  HostTensor a = I64({4}, {7, -7, 7, -7});
  HostTensor b = I64({4}, {3, 3, -3, -3});
  EXPECT_EQ(ivals(call1("aten.remainder.Tensor", {a, b})), (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(ivals(call1("aten.fmod.Tensor", {a, b})), (std::vector<int64_t>{1, -1, 1, -1}));
  auto rf = vals(call1("aten.remainder.Scalar", {F32({3}, {-1, 5.5, 1}), D(2)}));
  EXPECT_EQ(rf, (std::vector<double>{1, 1.5, 1}));
  EXPECT_TRUE(std::isnan(vals(call1("aten.fmod.Scalar", {F32({1}, {1}), I(0)}))[0]));
  EXPECT_NE(error_of([] { call1("aten.remainder.Scalar", {I64({1}, {1}), I(0)}); }).find("ZeroDivisionError"), std::string::npos);
  EXPECT_NE(error_of([] { call1("aten.fmod.Tensor", {T(DType::Int8, {1}, {1}), T(DType::Int8, {1}, {0})}); }).find("ZeroDivisionError"),
            std::string::npos);
}

TEST(RefBinary, Pow) {
  EXPECT_EQ(ivals(call1("aten.pow.Tensor_Tensor", {I64({4}, {2, -1, 2, 3}), I64({4}, {10, 3, -1, 0})})),
            (std::vector<int64_t>{1024, -1, 0, 1}));
  EXPECT_EQ(ivals(call1("aten.pow.Tensor_Scalar", {T(DType::Int8, {1}, {2}), I(7)}))[0], -128);  // wraps
  EXPECT_NE(error_of([] { call1("aten.pow.Tensor_Scalar", {I64({1}, {2}), I(-1)}); }).find("negative integer powers"),
            std::string::npos);
  HostTensor f = call1("aten.pow.Tensor_Scalar", {I64({1}, {2}), D(0.5)});
  EXPECT_EQ(f.dtype(), DType::Float32);
  HostTensor s = call1("aten.pow.Scalar", {I(2), I64({3}, {0, 1, 3})});
  EXPECT_EQ(s.dtype(), DType::Int64);
  EXPECT_EQ(ivals(s), (std::vector<int64_t>{1, 2, 8}));
  EXPECT_EQ(call1("aten.pow.Scalar", {D(2.0), I64({1}, {1})}).dtype(), DType::Float32);
  EXPECT_EQ(vals(call1("aten.pow.Tensor_Tensor", {F32({2}, {kNaN, 1}), F32({2}, {0, kNaN})})), (std::vector<double>{1, 1}));
}

TEST(RefBinary, MaximumMinimumPropagateNaN) {
  auto mx = vals(call1("aten.maximum.default", {F32({3}, {1, kNaN, -0.0}), F32({3}, {kNaN, 2, 0.0})}));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(ivals(call1("aten.minimum.default", {I64({2}, {1, 5}), T(DType::Int32, {2}, {3, 2})})), (std::vector<int64_t>{1, 2}));
}

TEST(RefBinary, Atan2) {
  auto r = vals(call1("aten.atan2.default", {T(DType::Float64, {2}, {1, 0.0}), T(DType::Float64, {2}, {1, -1})}));
  EXPECT_DOUBLE_EQ(r[0], std::atan(1.0));
  EXPECT_DOUBLE_EQ(r[1], std::acos(-1.0));
  EXPECT_EQ(call1("aten.atan2.default", {I64({1}, {1}), I64({1}, {1})}).dtype(), DType::Float32);
  HostTensor out = F32({1}, {0});
  call1("aten.atan2.out", {F32({1}, {0}), F32({1}, {1})}, {{"out", RtValue(out)}});
  EXPECT_EQ(vals(out)[0], 0);
}

TEST(RefBinary, BitwiseAndLogical) {
  EXPECT_EQ(ivals(call1("aten.bitwise_and.Tensor", {I64({2}, {12, -1}), I64({2}, {10, 5})})), (std::vector<int64_t>{8, 5}));
  EXPECT_EQ(ivals(call1("aten.bitwise_or.Scalar", {T(DType::UInt8, {1}, {1}), I(6)})), (std::vector<int64_t>{7}));
  EXPECT_EQ(ivals(call1("aten.bitwise_xor.Tensor", {T(DType::Bool, {2}, {1, 1}), T(DType::Bool, {2}, {0, 1})})),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ivals(call1("aten.bitwise_not.default", {T(DType::Int8, {2}, {0, 5})})), (std::vector<int64_t>{-1, -6}));
  EXPECT_EQ(ivals(call1("aten.bitwise_not.default", {T(DType::Bool, {2}, {0, 1})})), (std::vector<int64_t>{1, 0}));
  EXPECT_NE(error_of([] { call1("aten.bitwise_and.Tensor", {F32({1}, {1}), F32({1}, {1})}); }).find("'Float'"), std::string::npos);
  HostTensor l = call1("aten.logical_and.default", {F32({3}, {kNaN, 0, 2}), I64({3}, {1, 1, 0})});
  EXPECT_EQ(l.dtype(), DType::Bool);
  EXPECT_EQ(ivals(l), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(ivals(call1("aten.logical_xor.default", {I64({2}, {3, 0}), I64({2}, {4, 0})})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ivals(call1("aten.logical_not.default", {F32({2}, {0, -0.5})})), (std::vector<int64_t>{1, 0}));
}

TEST(RefBinary, ComparisonsInPromotedDtype) {
  HostTensor x = F32({4}, {1, kNaN, -0.0, 3});
  EXPECT_EQ(ivals(call1("aten.eq.Scalar", {x, I(0)})), (std::vector<int64_t>{0, 0, 1, 0}));
  EXPECT_EQ(ivals(call1("aten.ne.Tensor", {x, x})), (std::vector<int64_t>{0, 1, 0, 0}));
  EXPECT_EQ(ivals(call1("aten.lt.Scalar", {I64({3}, {1, 2, 3}), D(2.5)})), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(ivals(call1("aten.ge.Tensor", {I64({2, 1}, {1, 2}), I64({2}, {1, 2})})), (std::vector<int64_t>{1, 0, 1, 1}));
  // 2^24 + 1 compared with a float scalar: both sides become f32, so they are equal.
  EXPECT_EQ(ivals(call1("aten.eq.Scalar", {I64({1}, {16777217}), D(16777216.0)})), (std::vector<int64_t>{1}));
  // The scalar converts to the tensor's uint8 (-1 becomes 255), as in PyTorch.
  EXPECT_EQ(ivals(call1("aten.gt.Scalar", {T(DType::UInt8, {1}, {200}), I(-1)})), (std::vector<int64_t>{0}));
  EXPECT_EQ(ivals(call1("aten.le.Tensor", {F32({1}, {kInf}), F32({1}, {kInf})})), (std::vector<int64_t>{1}));
}

TEST(RefBinary, NonContiguousAndEmpty) {
  HostTensor base = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor t = base.as_strided({3, 2}, {1, 3}, 0);  // transposed
  EXPECT_EQ(vals(call1("aten.mul.Tensor", {t, F32({2}, {10, 100})})), (std::vector<double>{10, 400, 20, 500, 30, 600}));
  HostTensor e = call1("aten.add.Tensor", {F32({0, 3}, {}), F32({3}, {1, 2, 3})});
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(call1("aten.add.Tensor", {F32({1, 0}, {}), F32({2, 1}, {1, 2})}).sizes(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(call1("aten.add.Tensor", {T(DType::Float64, {}, {1}), T(DType::Float64, {}, {2})}).dim(), 0);
}

TEST(RefBinary, InPlaceChecks) {
  HostTensor x = I64({2}, {1, 2});
  call1("aten.add_.Tensor", {x, I64({1}, {5})});
  EXPECT_EQ(ivals(x), (std::vector<int64_t>{6, 7}));
  EXPECT_NE(error_of([&] { call1("aten.add_.Tensor", {x, F32({1}, {0.5})}); }).find("can't be cast"), std::string::npos);
  EXPECT_NE(error_of([&] { call1("aten.mul_.Tensor", {x, I64({2, 2}, {1, 2, 3, 4})}); }).find("doesn't match the broadcast shape"),
            std::string::npos);
  HostTensor f = F32({2}, {1, 2});
  call1("aten.mul_.Tensor", {f, I64({2}, {3, 4})});
  EXPECT_EQ(vals(f), (std::vector<double>{3, 8}));
  HostTensor expanded = F32({1}, {1}).as_strided({3}, {0}, 0);
  EXPECT_NE(error_of([&] { call1("aten.mul_.Tensor", {expanded, F32({3}, {1, 2, 3})}); }).find("more than one element"),
            std::string::npos);
}
