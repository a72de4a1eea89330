// Broadcasting (constant and symbolic, with guards) and the output strides of pointwise ops,
// copies and fills (TensorIterator's fast setup and dimension reordering, empty_like).
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using D = DType;

TEST_F(MetaTest, BroadcastConstantShapes) {
  Value* a = input(D::Float32, {4, 1, 3});
  Value* b = input(D::Float32, {5, 1});
  TensorMeta r = run("aten.add.Tensor", {a, b});
  EXPECT_EQ(str(r.sizes), "[4, 5, 3]");
  EXPECT_EQ(str(r.strides), "[15, 3, 1]");
  Value* c = input(D::Float32, {2, 3});
  Value* d = input(D::Float32, {4});
  EXPECT_EQ(error("aten.add.Tensor", {c, d}), "aten.add.Tensor: shapes [2, 3] and [4] cannot be broadcast");
}

TEST_F(MetaTest, BroadcastSymbolicRecordsGuards) {
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  SymExpr s1 = env().create_backed("s1", 8, sym::ValueRange::at_least(2));
  SymExpr s2 = env().create_backed("s2", 1, sym::ValueRange::at_least(1));
  Value* a = input(D::Float32, {s0, I(3)});
  Value* b = input(D::Float32, {s1, I(3)});
  TensorMeta r = run("aten.mul.Tensor", {a, b});
  EXPECT_EQ(str(r.sizes), "[s0, 3]");
  ASSERT_EQ(env().guards().size(), 1u);
  EXPECT_EQ(env().guards()[0].condition, sym::eq(s0, s1));
  // s2 has hint 1: it broadcasts, under a guard s2 == 1.
  Value* c = input(D::Float32, {s2, I(3)});
  TensorMeta r2 = run("aten.mul.Tensor", {a, c});
  EXPECT_EQ(str(r2.sizes), "[s0, 3]");
  EXPECT_EQ(env().guards().size(), 2u);
}

TEST_F(MetaTest, BroadcastSymbolicAgainstOneNeedsNoGuard) {
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  Value* a = input(D::Float32, {s0, I(1)});
  Value* b = input(D::Float32, {I(1), I(7)});
  TensorMeta r = run("aten.add.Tensor", {a, b});
  EXPECT_EQ(str(r.sizes), "[s0, 7]");
  EXPECT_TRUE(env().guards().empty());
}

TEST_F(MetaTest, ChannelsLastInputsGiveChannelsLastOutputs) {
  Value* x = input(D::Float32, {2, 3, 4, 5}, {60, 1, 15, 3});
  EXPECT_EQ(str(run("aten.relu.default", {x}).strides), "[60, 1, 15, 3]");
  EXPECT_EQ(str(run("aten.add.Tensor", {x, x}).strides), "[60, 1, 15, 3]");
  EXPECT_EQ(str(run("aten.add.Tensor", {x, F(1.0)}).strides), "[60, 1, 15, 3]");
  Value* bias = input(D::Float32, {3, 1, 1});
  EXPECT_EQ(str(run("aten.add.Tensor", {x, bias}).strides), "[60, 1, 15, 3]");
}

TEST_F(MetaTest, FirstOperandBreaksLayoutTies) {
  Value* c = input(D::Float32, {2, 3, 4, 5});
  Value* cl = input(D::Float32, {2, 3, 4, 5}, {60, 1, 15, 3});
  EXPECT_EQ(str(run("aten.add.Tensor", {c, cl}).strides), "[60, 20, 5, 1]");
  EXPECT_EQ(str(run("aten.add.Tensor", {cl, c}).strides), "[60, 1, 15, 3]");
}

TEST_F(MetaTest, TransposedInputGivesTransposedOutput) {
  Value* x = input(D::Float32, {3, 4}, {1, 3});
  EXPECT_EQ(str(run("aten.exp.default", {x}).strides), "[1, 3]");
  EXPECT_EQ(str(run("aten.mul.Tensor", {x, F(2.0)}).strides), "[1, 3]");
  // Permuted 3-d, not dense (a slice): dims keep their order, made dense.
  Value* p = input(D::Float32, {2, 3, 4}, {1, 16, 4});
  EXPECT_EQ(str(run("aten.neg.default", {p}).strides), "[1, 8, 2]");
}

TEST_F(MetaTest, DenseNonContiguousKeepsStrides) {
  Value* x = input(D::Float32, {2, 3, 4}, {12, 1, 3});
  EXPECT_EQ(str(run("aten.sin.default", {x}).strides), "[12, 1, 3]");
  EXPECT_EQ(str(run("aten.clone.default", {x}).strides), "[12, 1, 3]");
  EXPECT_EQ(str(run("aten._to_copy.default", {x}, {{"dtype", Argument(D::Float16)}}).strides), "[12, 1, 3]");
}

TEST_F(MetaTest, ExpandedInputsAreIgnoredForOrder) {
  Value* e = input(D::Float32, {4, 3}, {0, 1});
  Value* t = input(D::Float32, {4, 3}, {1, 4});
  EXPECT_EQ(str(run("aten.add.Tensor", {e, t}).strides), "[1, 4]");
  EXPECT_EQ(str(run("aten.clone.default", {e}).strides), "[3, 1]");
}

TEST_F(MetaTest, SizeOneDimsCountAsContiguous) {
  // [N, C, 1, 1] with channels-last strides is also contiguous: contiguous wins.
  Value* x = input(D::Float32, {2, 3, 1, 1}, {3, 1, 3, 3});
  EXPECT_EQ(str(run("aten.relu.default", {x}).strides),
            "[3, 1, 1, 1]");
}

TEST_F(MetaTest, CloneMemoryFormats) {
  Value* x = input(D::Float32, {2, 3, 4, 5});
  EXPECT_EQ(str(run("aten.clone.default", {x}, {{"memory_format", Argument(MemoryFormat::ChannelsLast)}}).strides),
            "[60, 1, 15, 3]");
  Value* cl = input(D::Float32, {2, 3, 4, 5}, {60, 1, 15, 3});
  EXPECT_EQ(str(run("aten.clone.default", {cl}, {{"memory_format", Argument(MemoryFormat::Contiguous)}}).strides),
            "[60, 20, 5, 1]");
  Value* v = input(D::Float32, {3});
  EXPECT_NE(error("aten.clone.default", {v}, {{"memory_format", Argument(MemoryFormat::ChannelsLast)}}).find("rank 4"),
            std::string::npos);
}

TEST_F(MetaTest, ToCopyOfNonDenseKeepsItsDimsOrder) {
  // A channels-last tensor sliced in W: not dense, strides like channels-last.
  Value* x = input(D::Float32, {2, 3, 4, 2}, {60, 1, 15, 6});
  EXPECT_EQ(str(run("aten._to_copy.default", {x}).strides), "[24, 1, 6, 3]");
  EXPECT_EQ(str(run("aten.clone.default", {x}).strides), "[24, 1, 6, 3]");
  // An attention head's query, sliced from a fused projection [2, 4, 45] and transposed to
  // [batch, heads, tokens, dim]: PyTorch 2.11 keeps heads inside tokens (dense strides in the
  // dims' order), not the contiguous layout its suggested format would give.
  Value* q = input(D::Float32, {2, 3, 4, 5}, {180, 5, 45, 1});
  EXPECT_EQ(str(run("aten._to_copy.default", {q}, {{"dtype", Argument(D::Float32)}}).strides), "[60, 5, 15, 1]");
  EXPECT_EQ(str(run("aten.clone.default", {q}).strides), "[60, 5, 15, 1]");
}

TEST_F(MetaTest, CopyKeepsSelfLayoutAndOffset) {
  Value* base = input(D::Float32, {4, 4});
  std::vector<ResultSpec> sl = run_all("aten.slice.Tensor", {base, A(1), A(1), A(3)});
  Value* s = g.add_call("aten.slice.Tensor", {base, A(1), A(1), A(3)}, {}, sl)->result();
  Value* src = input(D::Float32, {2});
  TensorMeta r = run("aten.copy.default", {s, src});
  EXPECT_EQ(str(r.strides), "[4, 1]");
  EXPECT_EQ(r.offset, I(1));
  EXPECT_NE(r.storage, base->meta().storage);
  TensorMeta r2 = run("aten.copy_.default", {s, src});
  EXPECT_EQ(r2.storage, base->meta().storage);
}

TEST_F(MetaTest, MaskedFillIsContiguousOverTheBroadcast) {
  Value* x = input(D::Float32, {3, 4}, {1, 3});
  Value* m = input(D::Bool, {2, 1, 4});
  TensorMeta r = run("aten.masked_fill.Scalar", {x, m, F(0.0)});
  EXPECT_EQ(str(r.sizes), "[2, 3, 4]");
  EXPECT_EQ(str(r.strides), "[12, 4, 1]");
  EXPECT_NE(error("aten.masked_fill.Scalar", {x, x, F(0.0)}).find("boolean masks"), std::string::npos);
}

TEST_F(MetaTest, InPlaceResultIsSelf) {
  Value* x = input(D::Float32, {3, 4});
  Value* b = input(D::Float32, {4});
  TensorMeta r = run("aten.add_.Tensor", {x, b});
  EXPECT_EQ(r.storage, x->meta().storage);
  EXPECT_NE(error("aten.add_.Tensor", {b, x}).find("doesn't match the broadcast shape"), std::string::npos);
}

TEST_F(MetaTest, DeviceMismatchIsAnError) {
  TensorMeta m;
  m.sizes = shape({4});
  m.strides = shape({1});
  m.device = Device::cuda(0);
  m.storage = g.new_storage();
  Value* c = g.add_input("c", m);
  Value* x = input(D::Float32, {4});
  Value* z = input(D::Float32, {});
  EXPECT_NE(error("aten.add.Tensor", {c, x}).find("same device"), std::string::npos);
  EXPECT_TRUE(run("aten.add.Tensor", {c, z}).device == Device::cuda(0));
}
