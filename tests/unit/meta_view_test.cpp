// View metas: sizes, strides, storage offset and shared storage of every view op.
#include "meta_test_util.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using D = DType;

namespace {
// "sizes strides offset" for compact comparisons.
std::string layout(const TensorMeta& m) { return str(m.sizes) + " " + str(m.strides) + " " + m.offset.str(); }
}  // namespace

TEST_F(MetaTest, ViewInfersMinusOneAndSharesStorage) {
  Value* x = input(D::Float32, {4, 6});
  TensorMeta r = run("aten.view.default", {x, L({2, -1, 3})});
  EXPECT_EQ(layout(r), "[2, 4, 3] [12, 3, 1] 0");
  EXPECT_EQ(r.storage, x->meta().storage);
  EXPECT_NE(error("aten.view.default", {x, L({5, -1})}).find("is invalid for input of size 24"), std::string::npos);
}

TEST_F(MetaTest, ViewOfTransposedSplitsWithinAChunk) {
  Value* x = input(D::Float32, {6, 4}, {1, 6});
  EXPECT_EQ(layout(run("aten.view.default", {x, L({3, 2, 4})})), "[3, 2, 4] [2, 1, 6] 0");
  EXPECT_NE(error("aten.view.default", {x, L({24})}).find("reshape"), std::string::npos);
  // reshape copies when no view exists.
  TensorMeta r = run("aten.reshape.default", {x, L({24})});
  EXPECT_EQ(layout(r), "[24] [1] 0");
  EXPECT_NE(r.storage, x->meta().storage);
}

TEST_F(MetaTest, ViewSymbolic) {
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  Value* x = input(D::Float32, {s0, I(64)});
  TensorMeta r = run("aten.view.default", {x, Argument::List{Argument(s0 * 64)}});
  EXPECT_EQ(layout(r), "[64*s0] [1] 0");
  TensorMeta r2 = run("aten.view.default", {x, L({-1, 8, 8})});
  EXPECT_EQ(layout(r2), "[s0, 8, 8] [64, 8, 1] 0");
}

TEST_F(MetaTest, ExpandAndErrors) {
  Value* x = input(D::Float32, {3, 1});
  EXPECT_EQ(layout(run("aten.expand.default", {x, L({2, 3, 4})})), "[2, 3, 4] [0, 1, 0] 0");
  EXPECT_EQ(layout(run("aten.expand.default", {x, L({-1, 5})})), "[3, 5] [1, 0] 0");
  EXPECT_NE(error("aten.expand.default", {x, L({4, 4})}).find("must match the existing size (3)"), std::string::npos);
  EXPECT_NE(error("aten.expand.default", {x, L({4})}).find("number of sizes"), std::string::npos);
}

TEST_F(MetaTest, PermuteTransposeT) {
  Value* x = input(D::Float32, {2, 3, 4});
  EXPECT_EQ(layout(run("aten.permute.default", {x, L({2, 0, -2})})), "[4, 2, 3] [1, 12, 4] 0");
  EXPECT_EQ(layout(run("aten.transpose.int", {x, A(0), A(-1)})), "[4, 3, 2] [1, 4, 12] 0");
  EXPECT_NE(error("aten.permute.default", {x, L({0, 0, 1})}).find("repeated dim"), std::string::npos);
  EXPECT_NE(error("aten.t.default", {x}).find("<= 2 dimensions"), std::string::npos);
  Value* m = input(D::Float32, {5, 7});
  EXPECT_EQ(layout(run("aten.t.default", {m})), "[7, 5] [1, 7] 0");
  EXPECT_NE(error("aten.transpose.int", {x, A(0), A(3)}).find("out of range"), std::string::npos);
}

TEST_F(MetaTest, SqueezeUnsqueeze) {
  Value* x = input(D::Float32, {1, 3, 1, 4});
  EXPECT_EQ(layout(run("aten.squeeze.default", {x})), "[3, 4] [4, 1] 0");
  EXPECT_EQ(layout(run("aten.squeeze.dim", {x, A(-2)})), "[1, 3, 4] [12, 4, 1] 0");
  EXPECT_EQ(layout(run("aten.squeeze.dim", {x, A(1)})), "[1, 3, 1, 4] [12, 4, 4, 1] 0");
  EXPECT_EQ(layout(run("aten.squeeze.dims", {x, L({0, 2})})), "[3, 4] [4, 1] 0");
  Value* y = input(D::Float32, {3, 4}, {1, 3});
  EXPECT_EQ(layout(run("aten.unsqueeze.default", {y, A(1)})), "[3, 1, 4] [1, 12, 3] 0");
  EXPECT_EQ(layout(run("aten.unsqueeze.default", {y, A(-1)})), "[3, 4, 1] [1, 3, 1] 0");
}

TEST_F(MetaTest, SelectNegativeIndex) {
  Value* x = input(D::Float32, {3, 4});
  EXPECT_EQ(layout(run("aten.select.int", {x, A(0), A(-1)})), "[4] [1] 8");
  EXPECT_EQ(layout(run("aten.select.int", {x, A(1), A(2)})), "[3] [4] 2");
  EXPECT_NE(error("aten.select.int", {x, A(0), A(3)}).find("out of range"), std::string::npos);
}

TEST_F(MetaTest, SliceClampsAndSteps) {
  Value* x = input(D::Float32, {10, 4});
  EXPECT_EQ(layout(run("aten.slice.Tensor", {x, A(0), A(-3), A(100)})), "[3, 4] [4, 1] 28");
  EXPECT_EQ(layout(run("aten.slice.Tensor", {x, A(0), A(1), A(9223372036854775807), A(3)})), "[3, 4] [12, 1] 4");
  EXPECT_EQ(layout(run("aten.slice.Tensor", {x, A(1), A(3), A(1)})), "[10, 0] [4, 1] 3");
  EXPECT_EQ(layout(run("aten.slice.Tensor", {x, A(0), A(-100), A(2)})), "[2, 4] [4, 1] 0");
  EXPECT_NE(error("aten.slice.Tensor", {x, A(0), A(0), A(5), A(0)}).find("step must be positive"), std::string::npos);
}

TEST_F(MetaTest, SliceSymbolic) {
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  Value* x = input(D::Float32, {s0, I(4)});
  EXPECT_EQ(layout(run("aten.slice.Tensor", {x, A(0), A(1)})), "[s0 - 1, 4] [4, 1] 4");
  EXPECT_EQ(layout(run("aten.slice.Tensor", {x, A(0), A(0), A(9223372036854775807)})), "[s0, 4] [4, 1] 0");
}

TEST_F(MetaTest, Diagonal) {
  Value* x = input(D::Float32, {3, 4});
  EXPECT_EQ(layout(run("aten.diagonal.default", {x})), "[3] [5] 0");
  EXPECT_EQ(layout(run("aten.diagonal.default", {x, A(1)})), "[3] [5] 1");
  EXPECT_EQ(layout(run("aten.diagonal.default", {x, A(-1)})), "[2] [5] 4");
  EXPECT_EQ(layout(run("aten.diagonal.default", {x, A(10)})), "[0] [5] 0");
  Value* y = input(D::Float32, {2, 3, 4});
  EXPECT_EQ(layout(run("aten.diagonal.default", {y, A(0), A(0), A(2)})), "[3, 2] [4, 13] 0");
}

TEST_F(MetaTest, AsStridedAliasDetach) {
  Value* x = input(D::Float32, {4, 4});
  TensorMeta r = run("aten.as_strided.default", {x, L({2, 2}), L({1, 4}), A(5)});
  EXPECT_EQ(layout(r), "[2, 2] [1, 4] 5");
  EXPECT_EQ(r.storage, x->meta().storage);
  EXPECT_EQ(run("aten.alias.default", {x}).storage, x->meta().storage);
  EXPECT_EQ(run("aten.detach.default", {x}).storage, x->meta().storage);
}

TEST_F(MetaTest, SplitsGiveOneViewPerChunk) {
  Value* x = input(D::Float32, {5, 4});
  std::vector<ResultSpec> r = run_all("aten.split_with_sizes.default", {x, L({2, 3})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(layout(*r[1].meta), "[3, 4] [4, 1] 8");
  EXPECT_EQ(r[1].meta->storage, x->meta().storage);
  EXPECT_NE(error("aten.split_with_sizes.default", {x, L({2, 2})}).find("sum exactly to 5"), std::string::npos);
  std::vector<ResultSpec> s = run_all("aten.split.Tensor", {x, A(2)});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(layout(*s[2].meta), "[1, 4] [4, 1] 16");
  std::vector<ResultSpec> u = run_all("aten.unbind.int", {x, A(1)});
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(layout(*u[3].meta), "[5] [4] 3");
}
