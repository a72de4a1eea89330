// Binding arguments to schemas, build_call, and the verifier's re-derivation of results.
#include "meta_test_util.h"

#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/ops/registry.h"

using namespace toroid;
using namespace toroid::ops;
using namespace toroid::ops::testing;
using D = DType;

namespace {
const OpSchema& schema(const char* op) { return OpRegistry::global().find(op)->schema; }

std::string bind_error(const char* op, size_t n, std::vector<std::string> kw) {
  try {
    bind_positions(schema(op), n, kw);
  } catch (const UserError& e) {
    EXPECT_FALSE(e.loc().known());
    return e.message();
  }
  return "";
}

std::string verify_text(const std::string& text) {
  install_schema_op_info();
  std::unique_ptr<Graph> g = parse_graph(text, "t.tir");
  return verify(*g).str();
}
}  // namespace

TEST(MetaBind, PositionsAndKeywords) {
  std::vector<std::string> kw{"alpha"};
  std::vector<int> w = bind_positions(schema("aten.add.Tensor"), 2, kw);
  EXPECT_EQ(w, (std::vector<int>{0, 1, -2}));
  EXPECT_EQ(bind_positions(schema("aten.add.Tensor"), 2, {}), (std::vector<int>{0, 1, -1}));
}

TEST(MetaBind, ErrorsNameOpAndArgument) {
  EXPECT_EQ(bind_error("aten.add.Tensor", 3, {}), "aten.add.Tensor takes at most 2 positional arguments but 3 were given");
  EXPECT_EQ(bind_error("aten.add.Tensor", 2, {"beta"}), "unknown keyword argument 'beta' for aten.add.Tensor");
  EXPECT_EQ(bind_error("aten.add.Tensor", 2, {"other"}), "argument 'other' of aten.add.Tensor is given twice");
  EXPECT_EQ(bind_error("aten.add.Tensor", 1, {}), "missing required argument 'other' of aten.add.Tensor");
}

TEST_F(MetaTest, BoundArgsDefaultsAndTypes) {
  Value* x = input(D::Float32, {2});
  std::vector<Argument> args{x, L({0})};
  BoundArgs b(schema("aten.sum.dim_IntList"), args, {});
  EXPECT_FALSE(b.scalar("keepdim").bool_value());
  EXPECT_FALSE(b.dtype("dtype").has_value());
  EXPECT_EQ(b.int_list("dim").size(), 1u);
  std::vector<Argument> r{A(5)};
  BoundArgs p(schema("aten.randperm.default"), r, {});
  EXPECT_EQ(p.dtype("dtype"), D::Int64);  // the schema's default is the c10 code 4
  std::vector<Argument> bad{A(3), L({0})};
  BoundArgs s(schema("aten.sum.dim_IntList"), bad, {});
  try {
    s.tensor("self");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "argument 'self' of aten.sum.dim_IntList must be a Tensor, not int (3)");
  }
  std::vector<Argument> pad{x, A(2)};
  BoundArgs ap(schema("aten.avg_pool2d.default"), pad, {});
  EXPECT_EQ(ap.int_list("kernel_size").size(), 2u);  // int[2] from one int
}

TEST_F(MetaTest, BuildCallInsertsAndRecords) {
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  SymExpr s1 = env().create_backed("s1", 8, sym::ValueRange::at_least(2));
  Value* a = input(D::Float32, {s0});
  Value* b = input(D::Float32, {s1});
  Node* n = build_call(g, "aten.add.Tensor", {a, b});
  EXPECT_EQ(n->target(), "aten.add.Tensor");
  EXPECT_EQ(str(n->result()->meta().sizes), "[s0]");
  EXPECT_EQ(env().guards().size(), 1u);
  try {
    build_call(g, "aten.frobnicate.default", {a});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "no meta function for aten.frobnicate.default");
  }
}

TEST_F(MetaTest, NonzeroStyleUnbackedSymbolsAndDryRun) {
  SymExpr s0 = env().create_backed("s0", 8, sym::ValueRange::at_least(2));
  SymExpr s1 = env().create_backed("s1", 8, sym::ValueRange::at_least(2));
  Value* a = input(D::Float32, {s0});
  Value* b = input(D::Float32, {s1});
  MetaContext ctx{g, env(), {}, "test", /*dry=*/true};
  std::vector<std::vector<SymExpr>> shapes{a->meta().sizes, b->meta().sizes};
  EXPECT_EQ(str(meta::broadcast_shapes(ctx, shapes)), "[s0]");
  EXPECT_TRUE(env().guards().empty());  // decided from hints, not recorded
  SymExpr u = ctx.create_unbacked(sym::ValueRange::at_least(0));
  EXPECT_EQ(env().info(u), nullptr);  // a placeholder, not in the ShapeEnv
  size_t storages = g.storages().size();
  ctx.new_storage();
  EXPECT_EQ(g.storages().size(), storages);
}

TEST(MetaVerify, ReportsSizeDtypeAndStrideMismatches) {
  std::string out = verify_text(R"(graph @main {
  %x = input : f32[4, 3]
  %a = aten.add.Tensor(%x, %x) : f32[4, 4]
  %b = aten.eq.Tensor(%x, %x) : f32[4, 3]
  %c = aten.t.default(%x) : f32[3, 4]{storage=%x}
  output %a, %b, %c
})");
  EXPECT_NE(out.find("t.tir:3:3: error: result 0 of aten.add.Tensor is f32[4, 4] but its meta function gives f32[4, 3]"),
            std::string::npos) << out;
  EXPECT_NE(out.find("result 0 of aten.eq.Tensor is f32[4, 3] but its meta function gives bool[4, 3]"), std::string::npos)
      << out;
  EXPECT_NE(out.find("result 0 of aten.t.default is f32[3, 4] but its meta function gives f32[3, 4]{strides=[1, 3]}"),
            std::string::npos) << out;
}

TEST(MetaVerify, ReportsAliasing) {
  std::string out = verify_text(R"(graph @main {
  %x = input : f32[4, 3]
  %a = aten.relu.default(%x) : f32[4, 3]{storage=%x}
  %v = aten.view.default(%x, [12]) : f32[12]
  output %a, %v
})");
  EXPECT_NE(out.find("result 0 of aten.relu.default shares storage with %x but is not a view of it"), std::string::npos)
      << out;
  EXPECT_NE(out.find("result 0 of aten.view.default must share storage with %x"), std::string::npos) << out;
}

TEST(MetaVerify, ValidGraphRecordsNoGuards) {
  install_schema_op_info();
  std::unique_ptr<Graph> g = parse_graph(R"(graph @main {
  sym s0 : hint=8, range=[1, inf]
  sym s1 : hint=8, range=[1, inf]
  %x = input : f32[s0, 1]
  %y = input : f32[1, s1]
  %a = aten.mul.Tensor(%x, %y) : f32[s0, s1]
  output %a
})", "t.tir");
  EXPECT_EQ(verify(*g).str(), "");
  EXPECT_TRUE(g->shape_env().guards().empty());
}

TEST(MetaVerify, EveryRowNamesARegisteredOp) {
  size_t with_meta = 0;
  for (const OpEntry& e : OpRegistry::global().entries()) with_meta += e.meta != nullptr;
  EXPECT_GE(with_meta, 150u);
}
