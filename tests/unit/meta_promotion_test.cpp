// Type promotion: promote_types, result_type with tensors, zero-dim tensors and Python numbers,
// and the per-op rules (int-to-float, always-bool, errors), against PyTorch's known results.
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using meta::promote_types;
using D = DType;

TEST(MetaPromotion, PromoteTypesTable) {
  struct Row { D a, b, r; };
  // Rows as torch.promote_types gives them.
  const Row rows[] = {
      {D::UInt8, D::Int8, D::Int16},     {D::UInt8, D::Int16, D::Int16},   {D::UInt8, D::Int64, D::Int64},
      {D::Int8, D::Int32, D::Int32},     {D::Int32, D::Int64, D::Int64},   {D::Bool, D::UInt8, D::UInt8},
      {D::Bool, D::Bool, D::Bool},       {D::Bool, D::Float16, D::Float16}, {D::BFloat16, D::Float16, D::Float32},
      {D::Float16, D::Float32, D::Float32}, {D::BFloat16, D::Float64, D::Float64}, {D::Int64, D::Float16, D::Float16},
      {D::Int64, D::BFloat16, D::BFloat16}, {D::UInt8, D::Float32, D::Float32}, {D::Float32, D::Float64, D::Float64},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(promote_types(r.a, r.b), r.r) << dtype_short_name(r.a) << "+" << dtype_short_name(r.b);
    EXPECT_EQ(promote_types(r.b, r.a), r.r) << dtype_short_name(r.b) << "+" << dtype_short_name(r.a);
  }
}

TEST(MetaPromotion, PromoteTypesIsSymmetricAndIdempotent) {
  for (int i = 0; i < kNumDTypes; ++i) {
    D a = static_cast<D>(i);
    EXPECT_EQ(promote_types(a, a), a);
    for (int j = 0; j < kNumDTypes; ++j) EXPECT_EQ(promote_types(a, static_cast<D>(j)), promote_types(static_cast<D>(j), a));
  }
}

TEST_F(MetaTest, PythonNumbersOnlyRaiseTheCategory) {
  Value* i32 = input(D::Int32, {4});
  Value* u8 = input(D::UInt8, {4});
  Value* b = input(D::Bool, {4});
  Value* h = input(D::Float16, {4});
  EXPECT_EQ(dtype("aten.add.Tensor", {i32, F(2.5)}), D::Float32);  // default float
  EXPECT_EQ(dtype("aten.add.Tensor", {u8, A(-1)}), D::UInt8);
  EXPECT_EQ(dtype("aten.add.Tensor", {b, B(true)}), D::Bool);
  EXPECT_EQ(dtype("aten.add.Tensor", {b, A(2)}), D::Int64);
  EXPECT_EQ(dtype("aten.mul.Tensor", {h, F(0.125)}), D::Float16);
  EXPECT_EQ(dtype("aten.add.Scalar", {i32, A(1000000)}), D::Int32);
  EXPECT_EQ(dtype("aten.mul.Scalar", {b, F(1.5)}), D::Float32);
}

TEST_F(MetaTest, ZeroDimTensorsRankBetweenTensorsAndNumbers) {
  Value* i32 = input(D::Int32, {4});
  Value* f32 = input(D::Float32, {4});
  Value* z64 = input(D::Float64, {});
  Value* zi64 = input(D::Int64, {});
  EXPECT_EQ(dtype("aten.add.Tensor", {i32, z64}), D::Float64);  // a higher kind wins
  EXPECT_EQ(dtype("aten.add.Tensor", {f32, z64}), D::Float32);  // same kind: the dim tensor wins
  EXPECT_EQ(dtype("aten.add.Tensor", {i32, zi64}), D::Int32);
  EXPECT_EQ(dtype("aten.add.Tensor", {zi64, F(2.5)}), D::Float32);
  EXPECT_EQ(dtype("aten.add.Tensor", {zi64, z64}), D::Float64);
}

TEST_F(MetaTest, IntToFloatOps) {
  Value* i64 = input(D::Int64, {4});
  Value* b = input(D::Bool, {4});
  Value* h = input(D::BFloat16, {4});
  EXPECT_EQ(dtype("aten.div.Tensor", {i64, i64}), D::Float32);
  EXPECT_EQ(dtype("aten.sin.default", {i64}), D::Float32);
  EXPECT_EQ(dtype("aten.sqrt.default", {b}), D::Float32);
  EXPECT_EQ(dtype("aten.exp.default", {h}), D::BFloat16);
  EXPECT_EQ(dtype("aten.sigmoid.default", {i64}), D::Float32);
  EXPECT_EQ(dtype("aten.atan2.default", {i64, i64}), D::Float32);
  EXPECT_EQ(dtype("aten.div.Tensor_mode", {i64, i64}, {{"rounding_mode", Argument::string("floor")}}), D::Int64);
  EXPECT_EQ(dtype("aten.div.Tensor_mode", {i64, i64}, {{"rounding_mode", Argument::none()}}), D::Float32);
  EXPECT_EQ(dtype("aten.abs.default", {i64}), D::Int64);
}

TEST_F(MetaTest, BoolResultsAndPow) {
  Value* f = input(D::Float32, {4});
  Value* i = input(D::Int32, {4});
  for (const char* op : {"aten.eq.Tensor", "aten.lt.Tensor", "aten.logical_and.default"})
    EXPECT_EQ(dtype(op, {f, i}), D::Bool) << op;
  EXPECT_EQ(dtype("aten.gt.Scalar", {i, F(0.5)}), D::Bool);
  EXPECT_EQ(dtype("aten.isnan.default", {f}), D::Bool);
  EXPECT_EQ(dtype("aten.pow.Tensor_Scalar", {i, F(2.5)}), D::Float32);
  EXPECT_EQ(dtype("aten.pow.Tensor_Scalar", {i, A(2)}), D::Int32);
  EXPECT_EQ(dtype("aten.pow.Scalar", {F(2.0), i}), D::Float32);
  EXPECT_EQ(dtype("aten.pow.Tensor_Tensor", {i, f}), D::Float32);
}

TEST_F(MetaTest, WhereAndClampPromote) {
  Value* c = input(D::Bool, {4});
  Value* i = input(D::Int32, {4});
  Value* h = input(D::Float16, {4});
  EXPECT_EQ(dtype("aten.where.self", {c, i, h}), D::Float16);
  EXPECT_EQ(dtype("aten.where.self", {c, i, F(0.0)}), D::Float32);
  EXPECT_EQ(dtype("aten.clamp.default", {i, F(0.5)}), D::Float32);
  EXPECT_EQ(dtype("aten.clamp.default", {i, A(0), A(3)}), D::Int32);
  EXPECT_EQ(dtype("aten.hardtanh.default", {i}), D::Int32);
  EXPECT_NE(error("aten.where.self", {i, i, i}).find("boolean"), std::string::npos);
}

TEST_F(MetaTest, BadDtypesAreUserErrors) {
  Value* b = input(D::Bool, {4});
  Value* f = input(D::Float32, {4});
  Value* i = input(D::Int32, {4});
  EXPECT_NE(error("aten.sub.Tensor", {b, b}).find("two bool tensors"), std::string::npos);
  EXPECT_NE(error("aten.neg.default", {b}).find("bool tensor"), std::string::npos);
  EXPECT_NE(error("aten.bitwise_and.Tensor", {f, i}).find("integral"), std::string::npos);
  EXPECT_NE(error("aten.add.Tensor", {i, i}, {{"alpha", F(0.5)}}).find("alpha"), std::string::npos);
  EXPECT_NE(error("aten.mean.default", {i}).find("floating point"), std::string::npos);
  EXPECT_NE(error("aten.div.Tensor_mode", {f, f}, {{"rounding_mode", Argument::string("up")}}).find("'up'"),
            std::string::npos);
}

TEST_F(MetaTest, ToCopyAndInPlaceCasting) {
  Value* f = input(D::Float32, {4});
  Value* i = input(D::Int64, {4});
  EXPECT_EQ(dtype("aten._to_copy.default", {f}, {{"dtype", Argument(D::BFloat16)}}), D::BFloat16);
  EXPECT_EQ(dtype("aten.add_.Tensor", {f, i}), D::Float32);
  EXPECT_NE(error("aten.add_.Tensor", {i, f}).find("can't be cast"), std::string::npos);
}
