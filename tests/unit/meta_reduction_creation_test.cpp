// Reductions (dims, keepdim, dtypes, errors) and creation ops (dtype inference, formats, arange).
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using D = DType;

TEST_F(MetaTest, SumKeepdimNegativeDims) {
  Value* x = input(D::Float32, {2, 3, 4}, {1, 8, 2});
  TensorMeta r = run("aten.sum.dim_IntList", {x, L({-1, 0}), B(true)});
  EXPECT_EQ(str(r.sizes), "[1, 3, 1]");
  EXPECT_EQ(str(r.strides), "[3, 1, 1]");
  EXPECT_EQ(str(run("aten.sum.dim_IntList", {x, L({1})}).sizes), "[2, 4]");
  EXPECT_EQ(str(run("aten.sum.dim_IntList", {x, L({})}).sizes), "[]");
  EXPECT_EQ(str(run("aten.sum.dim_IntList", {x, Argument::none()}).sizes), "[]");
}

TEST_F(MetaTest, SumAndProdDtypes) {
  Value* i = input(D::Int32, {4});
  Value* b = input(D::Bool, {4});
  Value* h = input(D::Float16, {4});
  EXPECT_EQ(dtype("aten.sum.dim_IntList", {i, L({0})}), D::Int64);
  EXPECT_EQ(dtype("aten.sum.default", {b}), D::Int64);
  EXPECT_EQ(dtype("aten.sum.default", {h}), D::Float16);
  EXPECT_EQ(dtype("aten.sum.dim_IntList", {i, L({0})}, {{"dtype", Argument(D::Float64)}}), D::Float64);
  EXPECT_EQ(dtype("aten.prod.dim_int", {i, A(0)}), D::Int64);
  EXPECT_EQ(dtype("aten.cumsum.default", {i, A(0)}), D::Int64);
  EXPECT_EQ(dtype("aten.mean.dim", {i, L({0})}, {{"dtype", Argument(D::Float32)}}), D::Float32);
}

TEST_F(MetaTest, ReductionDimErrors) {
  Value* x = input(D::Float32, {2, 3});
  EXPECT_NE(error("aten.sum.dim_IntList", {x, L({1, -1})}).find("appears multiple times"), std::string::npos);
  EXPECT_EQ(error("aten.amax.default", {x, L({2})}),
            "aten.amax.default: dim 2 is out of range for a tensor of rank 2 (expected to be in [-2, 1])");
}

TEST_F(MetaTest, AmaxAnyArgmax) {
  Value* x = input(D::Float16, {2, 3});
  Value* u = input(D::UInt8, {2, 3});
  TensorMeta r = run("aten.amax.default", {x, L({-1}), B(true)});
  EXPECT_EQ(str(r.sizes), "[2, 1]");
  EXPECT_EQ(r.dtype, D::Float16);
  EXPECT_EQ(dtype("aten.any.dim", {x, A(0)}), D::Bool);
  EXPECT_EQ(dtype("aten.any.default", {u}), D::UInt8);
  EXPECT_EQ(str(run("aten.argmax.default", {x}).sizes), "[]");
  EXPECT_EQ(str(run("aten.argmax.default", {x, Argument::none(), B(true)}).sizes), "[1, 1]");
  TensorMeta am = run("aten.argmin.default", {x, A(1)});
  EXPECT_EQ(str(am.sizes), "[2]");
  EXPECT_EQ(am.dtype, D::Int64);
}

TEST_F(MetaTest, MaxDimAndVarMeanGiveTwoResults) {
  Value* x = input(D::Float32, {2, 3, 4});
  std::vector<ResultSpec> r = run_all("aten.max.dim", {x, A(1), B(true)});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(str(r[0].meta->sizes), "[2, 1, 4]");
  EXPECT_EQ(r[1].meta->dtype, D::Int64);
  EXPECT_NE(r[0].meta->storage, r[1].meta->storage);
  std::vector<ResultSpec> v = run_all("aten.var_mean.correction", {x, L({2})}, {{"correction", A(0)}, {"keepdim", B(true)}});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(str(v[1].meta->sizes), "[2, 3, 1]");
  EXPECT_EQ(str(run("aten.var.correction", {x}).sizes), "[]");
  EXPECT_EQ(str(run("aten.var.dim", {x, L({0, 1})}).sizes), "[4]");
  Value* i = input(D::Int64, {3});
  EXPECT_NE(error("aten.var.correction", {i}).find("floating point"), std::string::npos);
}

TEST_F(MetaTest, FullInfersDtypeFromTheFillValue) {
  EXPECT_EQ(dtype("aten.full.default", {L({2, 3}), B(true)}), D::Bool);
  EXPECT_EQ(dtype("aten.full.default", {L({2, 3}), A(7)}), D::Int64);
  EXPECT_EQ(dtype("aten.full.default", {L({2, 3}), F(0.5)}), D::Float32);
  EXPECT_EQ(dtype("aten.full.default", {L({2}), A(7)}, {{"dtype", Argument(D::Float16)}}), D::Float16);
  EXPECT_EQ(dtype("aten.zeros.default", {L({2})}), D::Float32);
  EXPECT_EQ(dtype("aten.scalar_tensor.default", {A(3)}), D::Float32);
  EXPECT_NE(error("aten.ones.default", {L({2, -1})}).find("negative dimension"), std::string::npos);
}

TEST_F(MetaTest, EmptyFormatsAndStrided) {
  TensorMeta e = run("aten.empty.memory_format", {L({2, 3, 4, 5})}, {{"memory_format", Argument(MemoryFormat::ChannelsLast)}});
  EXPECT_EQ(str(e.strides), "[60, 1, 15, 3]");
  TensorMeta e3 = run("aten.empty.memory_format", {L({2, 3, 4, 5, 6})}, {{"memory_format", Argument(MemoryFormat::ChannelsLast3d)}});
  EXPECT_EQ(str(e3.strides), "[360, 1, 90, 18, 3]");
  TensorMeta s = run("aten.empty_strided.default", {L({2, 3}), L({1, 2})});
  EXPECT_EQ(str(s.strides), "[1, 2]");
  TensorMeta c = run("aten.empty.memory_format", {L({2, 0, 3})});
  EXPECT_EQ(str(c.strides), "[3, 3, 1]");
}

TEST_F(MetaTest, LikeOpsPreserveLayout) {
  Value* x = input(D::Float16, {2, 3, 4, 5}, {60, 1, 15, 3});
  TensorMeta r = run("aten.full_like.default", {x, F(1.0)});
  EXPECT_EQ(str(r.strides), "[60, 1, 15, 3]");
  EXPECT_EQ(r.dtype, D::Float16);
  TensorMeta z = run("aten.zeros_like.default", {x}, {{"dtype", Argument(D::Int32)}, {"memory_format", Argument(MemoryFormat::Contiguous)}});
  EXPECT_EQ(str(z.strides), "[60, 20, 5, 1]");
  EXPECT_EQ(z.dtype, D::Int32);
}

TEST_F(MetaTest, ArangeSizes) {
  TensorMeta a = run("aten.arange.start_step", {A(0), A(10), A(3)});
  EXPECT_EQ(str(a.sizes), "[4]");
  EXPECT_EQ(a.dtype, D::Int64);
  TensorMeta f = run("aten.arange.start_step", {F(0.0), F(1.0), F(0.3)});
  EXPECT_EQ(str(f.sizes), "[4]");
  EXPECT_EQ(f.dtype, D::Float32);
  EXPECT_EQ(str(run("aten.arange.start_step", {A(10), A(0), A(-3)}).sizes), "[4]");
  EXPECT_NE(error("aten.arange.start_step", {A(0), A(10), A(-1)}).find("inconsistent with step sign"), std::string::npos);
  EXPECT_NE(error("aten.arange.start_step", {A(0), A(10), A(0)}).find("nonzero"), std::string::npos);
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  EXPECT_EQ(str(run("aten.arange.start_step", {A(0), Argument(s0), A(2)}).sizes), "[(s0 + 1)//2]");
}

TEST_F(MetaTest, RandomOps) {
  EXPECT_EQ(dtype("aten.randperm.default", {A(5)}), D::Int64);
  EXPECT_EQ(dtype("aten.randn.default", {L({5})}, {{"dtype", Argument(D::Float64)}}), D::Float64);
  Value* x = input(D::Float32, {3, 4}, {1, 3});
  std::vector<ResultSpec> r = run_all("aten.native_dropout.default", {x, F(0.5), B(true)});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(str(r[0].meta->strides), "[1, 3]");
  EXPECT_EQ(r[1].meta->dtype, D::Bool);
  EXPECT_EQ(str(r[1].meta->strides), "[1, 3]");
}
