// Complex promotion, the complex gate of the meta functions, and the fft metas (sizes, dtype,
// and the strides of ATen's CPU kernels, as the golden cases show them).
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using meta::promote_types;
using D = DType;

TEST(MetaComplex, PromoteTypes) {
  struct Row { D a, b, r; };
  // As torch.promote_types gives them.
  const Row rows[] = {
      {D::Complex64, D::Float32, D::Complex64},   {D::Complex64, D::Float64, D::Complex128},
      {D::Complex64, D::Float16, D::Complex64},   {D::Complex64, D::BFloat16, D::Complex64},
      {D::Complex64, D::Int64, D::Complex64},     {D::Complex64, D::Bool, D::Complex64},
      {D::Complex64, D::Complex128, D::Complex128}, {D::Complex128, D::Float32, D::Complex128},
      {D::Complex128, D::UInt8, D::Complex128},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(promote_types(r.a, r.b), r.r) << dtype_short_name(r.a) << "+" << dtype_short_name(r.b);
    EXPECT_EQ(promote_types(r.b, r.a), r.r) << dtype_short_name(r.b) << "+" << dtype_short_name(r.a);
  }
}

TEST_F(MetaTest, ComplexResultTypeCategories) {
  auto op = [](Value* v) { return meta::Operand::of(v->meta()); };
  Value* f64 = input(D::Float64, {4});
  Value* f32 = input(D::Float32, {4});
  Value* i32 = input(D::Int32, {4});
  Value* h = input(D::Float16, {4});
  Value* zc64 = input(D::Complex64, {});
  Value* zc128 = input(D::Complex128, {});
  Value* c64 = input(D::Complex64, {4});
  std::vector<meta::Operand> v;
  v = {op(f64), op(zc64)};
  EXPECT_EQ(meta::result_type(v), D::Complex128);  // a 0-dim complex keeps the float's width
  v = {op(f32), op(zc128)};
  EXPECT_EQ(meta::result_type(v), D::Complex64);
  v = {op(i32), op(zc128)};
  EXPECT_EQ(meta::result_type(v), D::Complex128);
  v = {op(c64), op(input(D::Float64, {}))};
  EXPECT_EQ(meta::result_type(v), D::Complex64);
  v = {op(c64), op(f64)};
  EXPECT_EQ(meta::result_type(v), D::Complex128);
  v = {op(h), op(zc64)};
  EXPECT_THROW(meta::result_type(v), UserError);  // would be complex32
  EXPECT_EQ(meta::apply_promotion(D::Complex64, meta::Promotion::IntToFloat), D::Complex64);
}

TEST_F(MetaTest, OnlyCastsViewsAndFftTakeComplex) {
  Value* c = input(D::Complex64, {2, 3});
  Value* f = input(D::Float32, {2, 3});
  EXPECT_EQ(error("aten.add.Tensor", {c, f}),
            "aten.add.Tensor: c64 is not supported (toroid's complex support covers only the fft ops, casts and views)");
  EXPECT_NE(error("aten.cat.default", {Argument(Argument::List{Argument(f), Argument(c)})}).find("c64 is not supported"),
            std::string::npos);
  EXPECT_NE(error("aten.full.default", {L({2}), F(1.0)}, {{"dtype", Argument(D::Complex128)}}).find("c128 is not supported"),
            std::string::npos);
  EXPECT_EQ(run("aten.t.default", {c}).dtype, D::Complex64);
  EXPECT_EQ(str(run("aten.t.default", {c}).strides), "[1, 3]");
  EXPECT_EQ(run("aten._to_copy.default", {f}, {{"dtype", Argument(D::Complex128)}}).dtype, D::Complex128);
  EXPECT_EQ(run("aten._to_copy.default", {c}, {{"dtype", Argument(D::Float64)}}).dtype, D::Float64);
}

TEST_F(MetaTest, FftR2c) {
  // Rows checked against torch 2.11 CPU (tests/golden/ops/aten._fft_r2c.default).
  TensorMeta m = run("aten._fft_r2c.default", {input(D::Float32, {8}), L({0}), A(0), B(true)});
  EXPECT_EQ(m.dtype, D::Complex64);
  EXPECT_EQ(str(m.sizes), "[5]");
  m = run("aten._fft_r2c.default", {input(D::Float64, {7}), L({0}), A(1), B(false)});
  EXPECT_EQ(m.dtype, D::Complex128);
  EXPECT_EQ(str(m.sizes), "[7]");
  m = run("aten._fft_r2c.default", {input(D::Float32, {6, 5}), L({0}), A(2), B(true)});
  EXPECT_EQ(str(m.sizes), "[4, 5]");
  EXPECT_EQ(str(m.strides), "[1, 4]");
  m = run("aten._fft_r2c.default", {input(D::Float32, {2, 5, 3, 4}), L({1, 3}), A(2), B(true)});
  EXPECT_EQ(str(m.sizes), "[2, 5, 3, 3]");
  EXPECT_EQ(str(m.strides), "[45, 3, 15, 1]");
  m = run("aten._fft_r2c.default", {input(D::Float32, {4, 5, 6}), L({0, -1}), A(1), B(false)});
  EXPECT_EQ(str(m.strides), "[6, 24, 1]");
  m = run("aten._fft_r2c.default", {input(D::Float32, {4, 7}), L({1, 0}), A(0), B(true)});
  EXPECT_EQ(str(m.sizes), "[3, 7]");
  EXPECT_EQ(str(m.strides), "[1, 3]");
  // The leading transformed dims go in the input's stride order: [2, 0, 1] runs as [0, 2, 1].
  m = run("aten._fft_r2c.default", {input(D::Float32, {3, 4, 5}), L({2, 0, 1}), A(0), B(true)});
  EXPECT_EQ(str(m.sizes), "[3, 3, 5]");
  EXPECT_EQ(str(m.strides), "[15, 1, 3]");
}

TEST_F(MetaTest, FftR2cSymbolic) {
  SymExpr s0 = env().create_backed("s0", 9, sym::ValueRange::at_least(1));
  TensorMeta m = run("aten._fft_r2c.default", {input(D::Float32, {I(3), s0}), L({1}), A(0), B(true)});
  EXPECT_EQ(str(m.sizes), "[3, s0//2 + 1]");
  EXPECT_EQ(str(m.strides), "[s0//2 + 1, 1]");
}

TEST_F(MetaTest, FftC2r) {
  TensorMeta m = run("aten._fft_c2r.default", {input(D::Complex64, {4}), L({0}), A(2), A(7)});
  EXPECT_EQ(m.dtype, D::Float32);
  EXPECT_EQ(str(m.sizes), "[7]");
  m = run("aten._fft_c2r.default", {input(D::Complex128, {4, 3}), L({0}), A(1), A(6)});
  EXPECT_EQ(m.dtype, D::Float64);
  EXPECT_EQ(str(m.strides), "[1, 6]");
  m = run("aten._fft_c2r.default", {input(D::Complex64, {2, 4, 3}), L({1}), A(0), A(7)});
  EXPECT_EQ(str(m.strides), "[21, 1, 7]");
  m = run("aten._fft_c2r.default", {input(D::Complex64, {3, 4, 5}), L({0, 2}), A(0), A(8)});
  EXPECT_EQ(str(m.sizes), "[3, 4, 8]");
  EXPECT_EQ(str(m.strides), "[8, 24, 1]");
  m = run("aten._fft_c2r.default", {input(D::Complex128, {5, 4}), L({1, 0}), A(1), A(9)});
  EXPECT_EQ(str(m.sizes), "[9, 4]");
  EXPECT_EQ(str(m.strides), "[1, 9]");
  m = run("aten._fft_c2r.default", {input(D::Complex64, {4, 5}, {1, 4}), L({0, 1}), A(2), A(8)});
  EXPECT_EQ(str(m.strides), "[8, 1]");
}

TEST_F(MetaTest, FftErrors) {
  Value* f = input(D::Float32, {4});
  Value* c = input(D::Complex64, {3});
  EXPECT_NE(error("aten._fft_r2c.default", {c, L({0}), A(0), B(true)}).find("expected a floating-point input, got c64"),
            std::string::npos);
  EXPECT_NE(error("aten._fft_r2c.default", {input(D::Float16, {4}), L({0}), A(0), B(true)}).find("complex32"),
            std::string::npos);
  EXPECT_NE(error("aten._fft_r2c.default", {f, L({}), A(0), B(true)}).find("at least one dimension"), std::string::npos);
  EXPECT_NE(error("aten._fft_r2c.default", {f, L({0, -1}), A(0), B(true)}).find("appears twice"), std::string::npos);
  EXPECT_NE(error("aten._fft_c2r.default", {f, L({0}), A(0), A(6)}).find("expected a complex input, got f32"),
            std::string::npos);
  EXPECT_NE(error("aten._fft_c2r.default", {c, L({0}), A(0), A(0)}).find("Invalid number of data points (0)"),
            std::string::npos);
  EXPECT_NE(error("aten._fft_c2r.default", {c, L({1}), A(0), A(4)}).find("out of range"), std::string::npos);
}
