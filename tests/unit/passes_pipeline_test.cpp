#include <gtest/gtest.h>

#include <sstream>

#include "graph_test_util.h"

#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/passes/cse.h"
#include "toroid/passes/dce.h"
#include "toroid/passes/pass_manager.h"

using namespace toroid;
using toroid::testing::count_calls;
using toroid::testing::dims;

namespace {

TensorMeta meta_f32(Graph& g, std::vector<SymExpr> sizes, Storage* storage = nullptr) {
  return toroid::testing::meta(g, std::move(sizes), DType::Float32, storage);
}

Value* unary(Graph& g, const char* op, Value* x) {
  return g.add_call(op, {Argument(x)}, {}, {ResultSpec::tensor(meta_f32(g, x->meta().sizes))})->result();
}


// A bad "no-op removal": replaces a returned clone of an input by the input itself.
void remove_clones_unsafely(Graph& g) {
  std::vector<Node*> clones;
  for (Node* n : g.nodes())
    if (n->is_call() && n->target() == "aten.clone.default") clones.push_back(n);
  for (Node* n : clones) {
    n->result()->replace_all_uses_with(n->args()[0].value());
    g.erase(n);
  }
}

}  // namespace

TEST(Dce, RemovesDeadChainKeepsSignature) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta_f32(g, dims({4})));
  Value* unused = g.add_input("unused", meta_f32(g, dims({4})));
  Value* dead = unary(g, "aten.exp.default", x);
  unary(g, "aten.sin.default", dead);
  Value* y = unary(g, "aten.relu.default", x);
  g.set_output({Argument(y)});
  dce(g);
  EXPECT_EQ(count_calls(g, "aten.exp.default"), 0u);
  EXPECT_EQ(count_calls(g, "aten.sin.default"), 0u);
  EXPECT_EQ(count_calls(g, "aten.relu.default"), 1u);
  EXPECT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[1]->result(), unused);
  EXPECT_TRUE(verify(g).empty()) << verify(g).str();
}

TEST(Dce, KeepsInPlaceCalls) {
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, dims({4})));
  Value* y = g.add_input("y", meta_f32(g, dims({4})));
  g.add_call("aten.add_.Tensor", {Argument(x), Argument(y)}, {},
             {ResultSpec::tensor(meta_f32(g, dims({4}), x->meta().storage))});
  g.set_output({Argument(y)});
  dce(g);
  EXPECT_EQ(count_calls(g, "aten.add_.Tensor"), 1u);
}

TEST(Cse, MergesIdenticalCallsTransitively) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta_f32(g, dims({8})));
  Value* e1 = unary(g, "aten.exp.default", x);
  Value* e2 = unary(g, "aten.exp.default", x);
  Value* n1 = unary(g, "aten.neg.default", e1);
  Value* n2 = unary(g, "aten.neg.default", e2);
  Node* add = g.add_call("aten.add.Tensor", {Argument(n1), Argument(n2)}, {},
                         {ResultSpec::tensor(meta_f32(g, dims({8})))});
  g.set_output({Argument(add->result())});
  cse(g);
  EXPECT_EQ(count_calls(g, "aten.exp.default"), 1u);
  EXPECT_EQ(count_calls(g, "aten.neg.default"), 1u);
  EXPECT_EQ(add->args()[0].value(), add->args()[1].value());
  EXPECT_TRUE(verify(g).empty()) << verify(g).str();
}

TEST(Cse, KwargsAndScalarsMustMatch) {
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, dims({8})));
  auto add = [&](int64_t alpha) {
    return g.add_call("aten.add.Tensor", {Argument(x), Argument(x)}, {{"alpha", Argument::integer(alpha)}},
                      {ResultSpec::tensor(meta_f32(g, dims({8})))})->result();
  };
  Value* a = add(2);
  Value* b = add(3);
  Value* c = add(2);
  Node* neg = g.add_call("aten.neg.default", {Argument(c)}, {}, {ResultSpec::tensor(meta_f32(g, dims({8})))});
  g.set_output({Argument(a), Argument(b), Argument(neg->result())});
  cse(g);
  EXPECT_EQ(count_calls(g, "aten.add.Tensor"), 2u);
  EXPECT_EQ(neg->args()[0].value(), a);
}

TEST(Cse, DoesNotMergeRandomOps) {
  Graph g;
  auto rand = [&] {
    return g.add_call("aten.rand.default", {Argument(Argument::List{Argument::integer(4)})}, {},
                      {ResultSpec::tensor(meta_f32(g, dims({4})))})->result();
  };
  Value* a = rand();
  Value* b = rand();
  g.set_output({Argument(a), Argument(b)});
  cse(g);
  EXPECT_EQ(count_calls(g, "aten.rand.default"), 2u);
}

TEST(Cse, KeepsTwoReturnedClonesApart) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta_f32(g, dims({4})));
  Value* c1 = unary(g, "aten.clone.default", x);
  Value* c2 = unary(g, "aten.clone.default", x);
  g.set_output({Argument(c1), Argument(c2)});
  AliasSnapshot before = alias_snapshot(g);
  cse(g);
  EXPECT_EQ(count_calls(g, "aten.clone.default"), 2u);
  EXPECT_TRUE(check_no_new_aliasing(before, g, "cse").empty());
}

TEST(Cse, RetargetsViewStoragesOfMergedValue) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta_f32(g, dims({4})));
  Value* e1 = unary(g, "aten.exp.default", x);
  Value* e2 = unary(g, "aten.exp.default", x);
  // A view of e2 shares e2's storage; after the merge it must share e1's.
  TensorMeta view = meta_f32(g, dims({2, 2}), e2->meta().storage);
  Node* v = g.add_call("aten.view.default",
                       {Argument(e2), Argument(Argument::List{Argument::integer(2), Argument::integer(2)})}, {},
                       {ResultSpec::tensor(view)});
  Value* n = unary(g, "aten.neg.default", v->result());
  g.set_output({Argument(e1), Argument(n)});
  cse(g);
  EXPECT_EQ(v->args()[0].value(), e1);
  EXPECT_EQ(v->result()->meta().storage, e1->meta().storage);
}

TEST(PassManager, ParsesPassListAndRejectsUnknown) {
  auto passes = parse_pass_list("cse,dce");
  ASSERT_EQ(passes.size(), 2u);
  EXPECT_STREQ(passes[0]->name, "cse");
  EXPECT_STREQ(passes[1]->name, "dce");
  EXPECT_TRUE(parse_pass_list("").empty());
  EXPECT_THROW(parse_pass_list("dce,bogus"), UserError);
}

TEST(PassManager, VerifyEachCatchesNewAliasing) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta_f32(g, dims({4})));
  Value* c = unary(g, "aten.clone.default", x);
  g.set_output({Argument(c)});
  PassInfo bad{"remove-clones", "unsafe", &remove_clones_unsafely};
  const PassInfo* passes[] = {&bad};
  PassManagerOptions options;
  options.verify_each = true;
  try {
    run_passes(g, passes, options);
    FAIL() << "the new alias was not caught";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("remove-clones"), std::string::npos) << e.what();
  }
}

TEST(PassManager, PrintAfterAllWritesEachPass) {
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, dims({4})));
  unary(g, "aten.exp.default", x);
  g.set_output({Argument(x)});
  std::ostringstream out;
  PassManagerOptions options;
  options.print_after_all = true;
  options.print_stream = &out;
  auto passes = parse_pass_list("cse,dce");
  run_passes(g, passes, options);
  std::string text = out.str();
  size_t cse_at = text.find("IR after cse");
  size_t dce_at = text.find("IR after dce");
  ASSERT_NE(cse_at, std::string::npos);
  ASSERT_NE(dce_at, std::string::npos);
  EXPECT_LT(cse_at, dce_at);
  EXPECT_NE(text.find("aten.exp.default", cse_at), std::string::npos);
  EXPECT_EQ(text.find("aten.exp.default", dce_at), std::string::npos);
}

TEST(PassManager, PassesCompositionIsIdempotent) {
  const char* text =
      "graph @main functional {\n"
      "  %x = input : f32[4]\n"
      "  %a = aten.exp.default(%x) : f32[4]\n"
      "  %b = aten.exp.default(%x) : f32[4]\n"
      "  %c = aten.add.Tensor(%a, %b) : f32[4]\n"
      "  output %c\n"
      "}\n";
  auto g = parse_graph(text, "t.tir");
  auto passes = parse_pass_list("cse,dce");
  run_passes(*g, passes, {});
  std::string once = print_graph(*g);
  run_passes(*g, passes, {});
  EXPECT_EQ(print_graph(*g), once);
  EXPECT_EQ(once.find("%b = "), std::string::npos);
}
