// replace_by_example: splicing a replacement graph over matched nodes.
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "toroid/graph/graph.h"
#include "toroid/graph/replace.h"
#include "toroid/graph/verify.h"

using namespace toroid;
using toroid::testing::call;
using toroid::testing::dims;
using toroid::testing::meta;

namespace {

// Everything a failed replacement must leave alone: order, arguments, metas, storages, uses.
std::string fingerprint(const Graph& g) {
  std::string out;
  for (Node* n : g.nodes()) {
    out += n->describe();
    for (Value* r : n->results()) {
      out += " users=" + std::to_string(r->users().size());
      if (r->is_tensor() && r->has_meta()) out += " storage=" + std::to_string(r->meta().storage->id);
    }
    out += "\n";
  }
  return out + "storages=" + std::to_string(g.storages().size());
}

// x, y -> a = relu(x); b = mul(a, y); n = neg(b) -> output n
struct Target {
  Graph g;
  Value* x;
  Value* y;
  Node* a;
  Node* b;
  Node* n;
  Target() {
    x = g.add_input("x", meta(g, dims({4})));
    y = g.add_input("y", meta(g, dims({4})));
    a = call(g, "aten.relu.default", {Argument(x)}, "a");
    b = call(g, "aten.mul.Tensor", {Argument(a->result()), Argument(y)}, "b");
    n = call(g, "aten.neg.default", {Argument(b->result())}, "n");
    g.set_output({Argument(n->result())});
  }
};

// p, q -> t = clamp_min(p, 0.0); k = constant; u = mul(t, q, alpha=k-free kwarg) -> output u
struct Replacement {
  Graph r;
  Replacement() {
    Value* p = r.add_input("p", meta(r, dims({4})));
    Value* q = r.add_input("q", meta(r, dims({4})));
    Node* t = call(r, "aten.clamp_min.default", {Argument(p), Argument::floating(0.0)}, "t");
    Node* k = r.create_node(NodeKind::Constant, "", {}, {}, {ResultSpec::tensor(meta(r, dims({})), "k")});
    k->set_constant_data({0, 0, 128, 63});
    Node* u = call(r, "aten.addcmul.default", {Argument(k->result()), Argument(t->result()), Argument(q)}, "u",
                   nullptr, {Kwarg{"value", Argument::integer(2)}});
    r.set_output({Argument(u->result())});
  }
};

}  // namespace

TEST(GraphReplace, InsertsCopiesRedirectsUsesAndReturnsNodes) {
  Target t;
  Replacement rep;
  std::vector<Node*> matched = {t.a, t.b};
  std::vector<Value*> args = {t.x, t.y};
  std::vector<Value*> replaced = {t.b->result()};
  t.b->set_loc(SourceLoc{"m.tir", 7, 3});
  size_t storages_before = t.g.storages().size();
  std::vector<Node*> inserted = replace_by_example(t.g, matched, rep.r, args, replaced);

  ASSERT_EQ(inserted.size(), 3u);
  EXPECT_EQ(inserted[0]->target(), "aten.clamp_min.default");
  EXPECT_EQ(inserted[1]->kind(), NodeKind::Constant);
  EXPECT_EQ(inserted[1]->constant_data(), (std::vector<uint8_t>{0, 0, 128, 63}));
  EXPECT_EQ(inserted[2]->target(), "aten.addcmul.default");
  for (Node* n : inserted) {
    EXPECT_EQ(n->graph(), &t.g);
    EXPECT_EQ(n->loc().line, 7);  // stamped with the replaced node's location
  }
  // Arguments bound, kwargs and constants copied, nodes in order where b was.
  EXPECT_EQ(inserted[0]->args()[0].value(), t.x);
  EXPECT_EQ(inserted[0]->args()[1], Argument::floating(0.0));
  EXPECT_EQ(inserted[2]->args()[0].value(), inserted[1]->result());
  EXPECT_EQ(inserted[2]->args()[2].value(), t.y);
  ASSERT_NE(inserted[2]->kwarg("value"), nullptr);
  EXPECT_EQ(*inserted[2]->kwarg("value"), Argument::integer(2));
  EXPECT_EQ(t.g.node_list(), (std::vector<Node*>{t.x->node(), t.y->node(), inserted[0], inserted[1], inserted[2],
                                                 t.n, t.g.output_node()}));
  // Uses redirected, metas attached with fresh storages owned by g.
  EXPECT_EQ(t.n->args()[0].value(), inserted[2]->result());
  EXPECT_EQ(inserted[2]->result()->meta().sizes, dims({4}));
  EXPECT_EQ(t.g.storages().size(), storages_before + 3);
  EXPECT_NE(inserted[0]->result()->meta().storage, t.x->meta().storage);
  EXPECT_EQ(t.x->users().size(), 1u);
  EXPECT_EQ(t.g.size(), 7u);
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
  // The caller can attach metadata to what was inserted (the point of replacing by example).
  inserted[2]->result()->set_name("b");
  EXPECT_EQ(t.n->describe(), "%n = aten.neg.default(%b)");
}

TEST(GraphReplace, InputStoragesMapToArguments) {
  Target t;
  Graph r;
  Value* p = r.add_input("p", meta(r, dims({4})));
  r.add_input("q", meta(r, dims({4})));
  Node* v = call(r, "aten.view.default", {Argument(p), Argument(Argument::List{Argument::integer(4)})}, "v",
                 p->meta().storage);
  r.set_output({Argument(v->result())});
  std::vector<Node*> matched = {t.a, t.b};
  std::vector<Value*> args = {t.x, t.y};
  std::vector<Value*> replaced = {t.b->result()};
  std::vector<Node*> inserted = replace_by_example(t.g, matched, r, args, replaced);
  ASSERT_EQ(inserted.size(), 1u);
  EXPECT_EQ(inserted[0]->result()->meta().storage, t.x->meta().storage);
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
}

// A view of a replaced value reads the replacement's storage (else it would alias a storage no
// value of the graph produces, and the printed graph would not parse: a debug directory's
// graph.tir after a decomposition).
TEST(GraphReplace, ViewsOfAReplacedValueFollowItsStorage) {
  Target t;
  Replacement rep;
  Node* v = call(t.g, "aten.view.default", {Argument(t.b->result()), Argument(Argument::List{Argument::integer(4)})},
                 "v", t.b->result()->meta().storage);
  t.g.move_after(v, t.b);
  t.g.set_output({Argument(t.n->result()), Argument(v->result())});
  std::vector<Node*> matched = {t.a, t.b};
  std::vector<Value*> args = {t.x, t.y};
  std::vector<Value*> replaced = {t.b->result()};
  std::vector<Node*> inserted = replace_by_example(t.g, matched, rep.r, args, replaced);
  ASSERT_EQ(inserted.size(), 3u);
  EXPECT_EQ(v->args()[0].value(), inserted[2]->result());
  EXPECT_EQ(v->result()->meta().storage, inserted[2]->result()->meta().storage);
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
}

TEST(GraphReplace, ReplacementReturningAnInput) {
  Target t;
  Graph r;
  Value* p = r.add_input("p", meta(r, dims({4})));
  r.set_output({Argument(p)});
  std::vector<Node*> matched = {t.a};
  std::vector<Value*> args = {t.x};
  std::vector<Value*> replaced = {t.a->result()};
  std::vector<Node*> inserted = replace_by_example(t.g, matched, r, args, replaced);
  EXPECT_TRUE(inserted.empty());
  EXPECT_EQ(t.b->args()[0].value(), t.x);
  EXPECT_EQ(t.g.size(), 5u);  // x, y, b, n, output
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
}

TEST(GraphReplace, MultipleResultsAndScalarValues) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4, 3})));
  Node* m = g.add_call("aten.max.dim", {Argument(x), Argument::integer(1)}, {},
                       {ResultSpec::tensor(meta(g, dims({4})), "vals"),
                        ResultSpec::tensor(meta(g, dims({4}), DType::Int64), "idx")});
  Node* s = g.add_call("aten.sym_size.int", {Argument(x), Argument::integer(0)}, {},
                       {ResultSpec::scalar(ValueType::Int, SymExpr::integer(4), "n")});
  g.set_output({Argument(m->result(0)), Argument(m->result(1)), Argument(s->result())});

  Graph r;
  Value* p = r.add_input("p", meta(r, dims({4, 3})));
  Node* vals = r.add_call("aten.amax.default", {Argument(p), Argument(Argument::List{Argument::integer(1)})}, {},
                          {ResultSpec::tensor(meta(r, dims({4})), "v")});
  Node* idx = r.add_call("aten.argmax.default", {Argument(p), Argument::integer(1)}, {},
                         {ResultSpec::tensor(meta(r, dims({4}), DType::Int64), "i")});
  Node* sz = r.add_call("aten.sym_size.int", {Argument(p), Argument::integer(0)}, {},
                        {ResultSpec::scalar(ValueType::Int, SymExpr::integer(4), "k")});
  r.set_output({Argument(vals->result()), Argument(idx->result()), Argument(sz->result())});

  std::vector<Node*> matched = {m, s};
  std::vector<Value*> args = {x};
  std::vector<Value*> replaced = {m->result(0), m->result(1), s->result()};
  std::vector<Node*> inserted = replace_by_example(g, matched, r, args, replaced);
  ASSERT_EQ(inserted.size(), 3u);
  EXPECT_EQ(inserted[2]->result()->scalar_value(), SymExpr::integer(4));
  EXPECT_EQ(g.output_values(), (std::vector<Value*>{inserted[0]->result(), inserted[1]->result(),
                                                     inserted[2]->result()}));
  EXPECT_EQ(inserted[1]->result()->meta().dtype, DType::Int64);
  EXPECT_TRUE(verify(g).empty()) << verify(g).str();
}

TEST(GraphReplace, DeepCopiesSubgraphs) {
  Target t;
  Graph r;
  Value* p = r.add_input("p", meta(r, dims({4})));
  Value* q = r.add_input("q", meta(r, dims({4})));
  Value* pred = nullptr;
  {
    Node* any = r.add_call("aten.any.default", {Argument(p)}, {}, {ResultSpec::scalar(ValueType::Bool, {}, "c")});
    pred = any->result();
  }
  Node* cond = call(r, "higher_order.cond", {Argument(pred), Argument(p), Argument(q)}, "r");
  for (const char* name : {"true_branch", "false_branch"}) {
    Graph* br = cond->add_subgraph(name);
    Value* a = br->add_input("a", meta(*br, dims({4})));
    Value* b = br->add_input("b", meta(*br, dims({4})));
    Node* m = call(*br, "aten.mul.Tensor", {Argument(a), Argument(b)}, "m");
    br->set_output({Argument(m->result())});
  }
  r.set_output({Argument(cond->result())});
  ASSERT_TRUE(verify(r).empty()) << verify(r).str();

  std::vector<Node*> matched = {t.a, t.b};
  std::vector<Value*> args = {t.x, t.y};
  std::vector<Value*> replaced = {t.b->result()};
  std::vector<Node*> inserted = replace_by_example(t.g, matched, r, args, replaced);
  ASSERT_EQ(inserted.size(), 2u);
  Node* copy = inserted[1];
  ASSERT_EQ(copy->subgraphs().size(), 2u);
  Graph* tb = copy->subgraph("true_branch");
  ASSERT_NE(tb, nullptr);
  EXPECT_NE(tb, cond->subgraph("true_branch"));
  EXPECT_EQ(tb->parent_node(), copy);
  EXPECT_EQ(tb->root(), &t.g);
  EXPECT_EQ(tb->size(), 4u);
  // Inner values map to the copied subgraph's own inputs.
  EXPECT_EQ(tb->output_node()->prev()->args()[0].value(), tb->inputs()[0]->result());
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
  // The replacement graph itself is untouched.
  EXPECT_TRUE(verify(r).empty());
  EXPECT_EQ(p->users().size(), 2u);
}

TEST(GraphReplace, BindsReplacementSymbolsToArgumentShapes) {
  Target t;
  Graph r;
  SymExpr k = SymExpr::fresh_symbol("k");  // the replacement's own symbol, unknown to t.g
  Value* p = r.add_input("p", meta(r, {k}));
  r.add_input("q", meta(r, {k}));
  Node* cat = r.add_call("aten.cat.default", {Argument(Argument::List{Argument(p), Argument(p)}), Argument(k)}, {},
                         {ResultSpec::tensor(meta(r, {k * 2}), "c")});
  Node* view = r.add_call("aten.view.default", {Argument(cat->result()), Argument(Argument::List{Argument(k), Argument::integer(2)})}, {},
                          {ResultSpec::tensor(meta(r, {k, SymExpr::integer(2)}, DType::Float32, cat->result()->meta().storage), "v")});
  Node* sum = r.add_call("aten.sum.dim_IntList", {Argument(view->result()), Argument(Argument::List{Argument::integer(1)})}, {},
                         {ResultSpec::tensor(meta(r, {k}), "s")});
  r.set_output({Argument(sum->result())});
  std::vector<Node*> matched = {t.a, t.b};
  std::vector<Value*> args = {t.x, t.y};
  std::vector<Value*> replaced = {t.b->result()};
  std::vector<Node*> inserted = replace_by_example(t.g, matched, r, args, replaced);
  ASSERT_EQ(inserted.size(), 3u);
  EXPECT_EQ(inserted[0]->result()->meta().sizes, dims({8}));
  EXPECT_EQ(inserted[0]->args()[1], Argument::integer(4));
  EXPECT_EQ(inserted[1]->result()->meta().strides, dims({2, 1}));
  EXPECT_EQ(inserted[1]->result()->meta().storage, inserted[0]->result()->meta().storage);
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
}

TEST(GraphReplace, FailedPreconditionsLeaveGraphUnchanged) {
  Target t;
  Replacement rep;
  t.g.set_insertion_point_after(t.b);
  Value* late = call(t.g, "aten.sin.default", {Argument(t.x)}, "late")->result();
  t.g.set_insertion_point_to_end();
  Value* i64 = t.g.add_input("i", meta(t.g, dims({4}), DType::Int64));
  Value* scalar = t.g.add_scalar_input("s", ValueType::Int);
  const std::string before = fingerprint(t.g);

  struct Case {
    std::vector<Node*> matched;
    std::vector<Value*> args;
    std::vector<Value*> replaced;
    const char* message;
  };
  std::vector<Case> cases = {
      {{}, {t.x, t.y}, {}, "no matched nodes"},
      {{t.a, t.b}, {t.x}, {t.b->result()}, "has 2 inputs but 1 arguments are given"},
      {{t.a, t.b}, {t.x, i64}, {t.b->result()}, "replacement input 1 is f32 tensor of rank 1 but argument 1 (%i) is i64"},
      {{t.a, t.b}, {t.x, scalar}, {t.b->result()}, "but argument 1 (%s) is int"},
      {{t.a, t.b}, {t.x, t.y}, {t.b->result(), t.b->result()}, "has 1 outputs but 2 values are replaced"},
      {{t.a, t.b}, {t.x, t.y}, {t.n->result()}, "replaced value %n is not a result of a matched node"},
      {{t.a, t.b}, {t.x, late}, {t.b->result()}, "argument 1 (%late) is not defined before the insertion point"},
      {{t.a, t.b}, {t.a->result(), t.y}, {t.b->result()}, "argument 0 (%a) is a result of a matched node"},
      // a's result is used by b, outside the match, and not replaced.
      {{t.a}, {t.x, t.y}, {}, "result %a of matched node %a = aten.relu.default(%x) is used by %b"},
      // a is replaced, but its user b comes before the insertion point (late).
      {{t.a, late->node()}, {t.x, t.y}, {t.a->result(), late},
       "replaced value %a is used by %b = aten.mul.Tensor(%a, %y), which comes before the insertion point"},
      {{t.a, t.b, t.b}, {t.x, t.y}, {t.b->result()}, "is matched twice"},
      {{t.x->node()}, {t.x, t.y}, {t.b->result()}, "is not a call or constant"},
  };
  for (const Case& c : cases) {
    try {
      replace_by_example(t.g, c.matched, rep.r, c.args, c.replaced);
      ADD_FAILURE() << "expected failure: " << c.message;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
    EXPECT_EQ(fingerprint(t.g), before) << c.message;
  }
  // A replacement that uses a value before defining it.
  Graph bad;
  Value* bp = bad.add_input("p", meta(bad, dims({4})));
  bad.add_input("q", meta(bad, dims({4})));
  Node* u1 = call(bad, "aten.neg.default", {Argument(bp)}, "u1");
  Node* u2 = call(bad, "aten.neg.default", {Argument(u1->result())}, "u2");
  bad.set_output({Argument(u2->result())});
  bad.move_before(u2, u1);
  std::vector<Node*> m2 = {t.b};
  std::vector<Value*> a2 = {t.a->result(), t.y};
  std::vector<Value*> r2 = {t.b->result()};
  EXPECT_THROW(replace_by_example(t.g, m2, bad, a2, r2), UserError);
  EXPECT_EQ(fingerprint(t.g), before);
  // And the same call with a good replacement succeeds.
  EXPECT_EQ(replace_by_example(t.g, m2, rep.r, a2, r2).size(), 3u);
  EXPECT_TRUE(verify(t.g).empty()) << verify(t.g).str();
}
