// The verifier and the aliasing checks (no new aliasing between outputs and inputs).
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"
#include "toroid/graph/verify.h"

using namespace toroid;
using toroid::testing::call;
using toroid::testing::dims;
using toroid::testing::meta;

namespace {

// All messages joined, one per line.
std::string messages(const Diagnostics& d) {
  std::string out;
  for (const Diagnostic& item : d.items) out += item.message + "\n";
  return out;
}

#define EXPECT_CLEAN(g) EXPECT_TRUE(verify(g).empty()) << verify(g).str()
#define EXPECT_DIAG(g, text) EXPECT_NE(messages(verify(g)).find(text), std::string::npos) << verify(g).str()

// x -> relu -> output.
struct Simple {
  Graph g;
  Value* x;
  Node* r;
  Simple() {
    x = g.add_input("x", meta(g, dims({4})));
    r = call(g, "aten.relu.default", {Argument(x)}, "r");
    g.set_output({Argument(r->result())});
  }
};

// %r = higher_order.cond(%p, %x) with branches returning sin(a) and a.
struct Cond {
  Graph g;
  Value* p;
  Value* x;
  Node* cond;
  Graph* t;
  Graph* f;
  explicit Cond(DType false_in = DType::Float32) {
    p = g.add_scalar_input("p", ValueType::Bool);
    x = g.add_input("x", meta(g, dims({4})));
    cond = call(g, "higher_order.cond", {Argument(p), Argument(x)}, "r");
    t = cond->add_subgraph("true_branch");
    Value* a = t->add_input("a", meta(*t, dims({4})));
    Node* s = call(*t, "aten.sin.default", {Argument(a)}, "s");
    t->set_output({Argument(s->result())});
    f = cond->add_subgraph("false_branch");
    Value* b = f->add_input("b", meta(*f, dims({4}), false_in));
    f->set_output({Argument(b)});
    g.set_output({Argument(cond->result())});
  }
};

}  // namespace

TEST(GraphVerify, WellFormedGraphIsClean) {
  Simple s;
  EXPECT_CLEAN(s.g);
  EXPECT_NO_THROW(verify_or_throw(s.g));
}

TEST(GraphVerify, UseBeforeDefinition) {
  Simple s;
  Node* n = call(s.g, "aten.neg.default", {Argument(s.r->result())}, "n");
  s.g.set_output({Argument(n->result())});
  EXPECT_CLEAN(s.g);
  s.g.move_before(n, s.r);
  EXPECT_DIAG(s.g, "value %r is used before it is defined");
  // A node using its own result is the same error.
  Simple t;
  t.r->set_arg(0, Argument(t.r->result()));
  EXPECT_DIAG(t.g, "value %r is used before it is defined");
}

TEST(GraphVerify, SubgraphsAreClosed) {
  Cond c;
  EXPECT_CLEAN(c.g);
  Node* s = c.t->output_node()->prev();
  s->set_arg(0, Argument(c.x));  // a root value inside the branch
  EXPECT_DIAG(c.g, "value %x of graph @main is used in graph @main/true_branch (subgraphs are closed)");
  s->set_arg(0, Argument(c.t->inputs()[0]->result()));
}

TEST(GraphVerify, ValueOfAnErasedNode) {
  Simple s;
  {
    Graph other;
    Value* gone = other.add_input("gone", meta(other, dims({4})));
    s.r->set_arg(0, Argument(gone));
  }  // `other` and its values are destroyed; the verifier must not look at the dangling pointer
  EXPECT_DIAG(s.g, "uses a value that is not defined by any live node (was its node erased?); in: %r = "
                   "aten.relu.default(%<dead>)");
  s.g.set_functional(true);
  s.r->set_target("aten.relu_.default");  // other checks skip the node rather than touch the value
  EXPECT_EQ(verify(s.g).items.size(), 1u);
  // Destroying `s` does not touch use lists, so the dangling argument is harmless there.
}

TEST(GraphVerify, OutputNodeChecks) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  EXPECT_DIAG(g, "graph @main has no output node");
  g.set_output({Argument(x)});
  EXPECT_CLEAN(g);
  g.set_insertion_point_after(g.output_node());
  Node* late = call(g, "aten.relu.default", {Argument(x)}, "late");
  EXPECT_EQ(g.back(), late);
  EXPECT_DIAG(g, "node after the output node of graph @main (the output must be last)");
  g.erase(late);
  g.create_node(NodeKind::Output, "", {Argument(x)}, {}, {});
  EXPECT_DIAG(g, "graph @main has more than one output node");
}

TEST(GraphVerify, InputNodesTakeNoArguments) {
  Simple s;
  s.g.create_node(NodeKind::Input, "", {}, {}, {ResultSpec::tensor(meta(s.g, dims({4})), "ok")});
  EXPECT_CLEAN(s.g);
  s.g.create_node(NodeKind::Input, "", {Argument(s.x)}, {}, {ResultSpec::tensor(meta(s.g, dims({4})), "bad")});
  EXPECT_DIAG(s.g, "input node must have no arguments");
}

TEST(GraphVerify, NodeShapes) {
  {
    Simple s;
    s.g.create_node(NodeKind::Param, "p", {}, {}, {ResultSpec::tensor(meta(s.g, dims({4})), "w")});
    s.g.create_node(NodeKind::Constant, "", {}, {}, {ResultSpec::scalar(ValueType::Int, SymExpr::integer(1), "c")});
    EXPECT_CLEAN(s.g);
  }
  {
    Simple s;
    s.g.create_node(NodeKind::Param, "p", {}, {}, {ResultSpec::scalar(ValueType::Int, {}, "w")});
    EXPECT_DIAG(s.g, "param %w must be a tensor");
  }
  {
    Simple s;
    s.g.create_node(NodeKind::Constant, "", {Argument::integer(1)}, {}, {ResultSpec::scalar(ValueType::Int, {}, "c")});
    EXPECT_DIAG(s.g, "constant node must have no arguments");
  }
  {
    Simple s;
    s.g.create_node(NodeKind::Input, "", {}, {}, {});
    EXPECT_DIAG(s.g, "input node must have exactly one result, has 0");
  }
  {
    Simple s;
    s.r->set_target("");
    EXPECT_DIAG(s.g, "call node has no operator name");
  }
  {
    Simple s;
    s.x->node()->add_subgraph("body")->set_output({});
    EXPECT_DIAG(s.g, "input node must not own subgraphs");
  }
  {
    Graph g;
    Value* x = g.add_input("x", meta(g, dims({4})));
    g.create_node(NodeKind::Output, "", {Argument(x)}, {Kwarg{"k", Argument(x)}},
                  {ResultSpec::tensor(meta(g, dims({4})), "o")});
    EXPECT_DIAG(g, "output node must have no results");
    EXPECT_DIAG(g, "output node must have no keyword arguments");
  }
}

TEST(GraphVerify, MetaExpressionTypes) {
  Simple s;
  s.r->result()->meta().sizes[0] = SymExpr::floating(4.0);
  s.r->result()->meta().strides[0] = SymExpr();
  s.r->result()->meta().offset = SymExpr::boolean(false);
  EXPECT_DIAG(s.g, "size 0 of %r is not an integer expression");
  EXPECT_DIAG(s.g, "stride 0 of %r is not an integer expression");
  EXPECT_DIAG(s.g, "storage offset of %r is not an integer expression");
}

TEST(GraphVerify, TensorMetas) {
  {
    Simple s;
    s.r->result()->meta().strides.pop_back();
    EXPECT_DIAG(s.g, "tensor value %r has 1 size but 0 strides");
  }
  {
    Simple s;
    s.r->result()->meta().storage = nullptr;
    EXPECT_DIAG(s.g, "tensor value %r has no storage");
  }
  {
    Simple s;
    Graph other;
    s.r->result()->meta().storage = other.new_storage();
    EXPECT_DIAG(s.g, "tensor value %r has a storage that its root graph does not own");
  }
  {
    Simple s;
    Node* m = s.g.add_call("aten.empty.memory_format", {}, {}, {ResultSpec{ValueType::Tensor, std::nullopt, {}, "e"}});
    EXPECT_DIAG(s.g, "tensor value %e has no meta");
    m->result()->set_meta(meta(s.g, dims({2})));
    EXPECT_CLEAN(s.g);
  }
}

TEST(GraphVerify, ScalarValues) {
  Simple s;
  Value* n = s.g.add_scalar_input("n", ValueType::Int, SymExpr::integer(3));
  EXPECT_FALSE(n->has_meta());
  EXPECT_CLEAN(s.g);
  n->set_scalar_value(SymExpr::floating(2.5));
  EXPECT_DIAG(s.g, "int value %n has a value of another type (");
}

TEST(GraphVerify, ConstantData) {
  Simple s;
  Node* c = s.g.create_node(NodeKind::Constant, "", {}, {}, {ResultSpec::tensor(meta(s.g, dims({2})), "c")});
  c->set_constant_data(std::vector<uint8_t>(8, 0));
  EXPECT_CLEAN(s.g);
  c->set_constant_data(std::vector<uint8_t>(3, 0));
  EXPECT_DIAG(s.g, "constant %c has 3 bytes of data, expected 8 for f32[2]");
}

TEST(GraphVerify, CondSignature) {
  Cond ok;
  EXPECT_CLEAN(ok.g);

  Cond wrong_dtype(DType::Int64);
  EXPECT_DIAG(wrong_dtype.g, "input 0 of subgraph false_branch is i64[4] but higher_order.cond passes %x : f32[4]");

  Cond int_pred;
  Value* i = int_pred.g.add_scalar_input("i", ValueType::Int);
  int_pred.cond->set_arg(0, Argument(i));
  EXPECT_DIAG(int_pred.g, "predicate of higher_order.cond must be a bool scalar or a tensor, got %i (int)");
  int_pred.cond->set_arg(0, Argument::boolean(true));  // a constant predicate is fine
  EXPECT_CLEAN(int_pred.g);

  Cond extra_operand;
  extra_operand.cond->set_args({Argument(extra_operand.p), Argument(extra_operand.x), Argument(extra_operand.x)});
  EXPECT_DIAG(extra_operand.g, "subgraph true_branch has 1 input but higher_order.cond passes 2 operands");

  Cond bad_output;
  Value* a = bad_output.f->inputs()[0]->result();
  bad_output.f->set_output({Argument(a), Argument(a)});
  EXPECT_DIAG(bad_output.g, "subgraph false_branch returns 2 values but higher_order.cond has 1 result");

  Cond const_operand;
  const_operand.cond->set_args({Argument(const_operand.p), Argument::integer(3)});
  EXPECT_DIAG(const_operand.g, "operand 1 of higher_order.cond must be a value or a list of values, got 3");

  Cond list_operand;  // operands may come as a list
  list_operand.cond->set_args({Argument(list_operand.p), Argument(Argument::List{Argument(list_operand.x)})});
  EXPECT_CLEAN(list_operand.g);

  Cond wrong_result;
  wrong_result.cond->result()->meta().dtype = DType::Int32;
  EXPECT_DIAG(wrong_result.g, "output 0 of subgraph true_branch is f32[4] but result 0 of higher_order.cond (%r) is i32[4]");

  Graph g;
  Value* p = g.add_scalar_input("p", ValueType::Bool);
  Node* c = call(g, "higher_order.cond", {Argument(p)}, "r");
  c->add_subgraph("then")->set_output({});
  g.set_output({Argument(c->result())});
  EXPECT_DIAG(g, "higher_order.cond must have subgraphs true_branch, false_branch (has then)");
}

TEST(GraphVerify, WhileLoopSignature) {
  auto build = [](Graph& g, ValueType cond_result) {
    Value* x = g.add_input("x", meta(g, dims({4})));
    Node* w = call(g, "higher_order.while_loop", {Argument(x)}, "w");
    Graph* c = w->add_subgraph("cond_fn");
    c->add_input("a", meta(*c, dims({4})));
    Value* flag = c->add_scalar_input("flag", cond_result);
    c->set_output({Argument(flag)});
    Graph* b = w->add_subgraph("body_fn");
    Value* a = b->add_input("a", meta(*b, dims({4})));
    Node* n = call(*b, "aten.neg.default", {Argument(a)}, "n");
    b->set_output({Argument(n->result())});
    g.set_output({Argument(w->result())});
    return w;
  };
  Graph ok;
  build(ok, ValueType::Bool);
  // cond_fn's extra scalar input does not match the operands.
  EXPECT_DIAG(ok, "subgraph cond_fn has 2 inputs but higher_order.while_loop passes 1 operand");
  Graph good;
  Node* w = build(good, ValueType::Bool);
  Graph* c = w->subgraph("cond_fn");
  Node* flag = c->inputs()[1];
  Node* t = c->add_call("aten.any.default", {Argument(c->inputs()[0]->result())}, {},
                        {ResultSpec::scalar(ValueType::Bool, {}, "t")});
  c->set_output({Argument(t->result())});
  c->erase(flag);
  EXPECT_CLEAN(good);
  Node* i = c->add_call("aten.sym_numel.default", {Argument(c->inputs()[0]->result())}, {},
                        {ResultSpec::scalar(ValueType::Int, {}, "k")});
  c->set_output({Argument(i->result())});
  EXPECT_DIAG(good, "subgraph cond_fn of higher_order.while_loop must return one bool scalar or tensor");
  c->set_output({Argument(t->result())});
  EXPECT_CLEAN(good);
  w->result()->meta().dtype = DType::Int64;
  EXPECT_DIAG(good, "result 0 of higher_order.while_loop (%w) is i64[4] but carried operand 0 (%x) is f32[4]");
  EXPECT_DIAG(good, "output 0 of subgraph body_fn is f32[4] but result 0 of higher_order.while_loop (%w) is i64[4]");
}

TEST(GraphVerify, RegisteredSubgraphChecker) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* k = call(g, "test.kernel_wrapper", {Argument(x)}, "k");
  Graph* body = k->add_subgraph("body");
  Value* a = body->add_input("a", meta(*body, dims({4}), DType::Float16));
  body->set_output({Argument(a)});
  g.set_output({Argument(k->result())});
  EXPECT_CLEAN(g);  // unknown ops get only the recursive check
  register_subgraph_checker("test.kernel_wrapper", [](const Node& n, Diagnostics& d) {
    if (check_subgraph_names(n, {"body"}, d)) {
      std::vector<Value*> ops = n.inputs();
      check_subgraph_inputs(n, "body", ops, d);
    }
  });
  EXPECT_DIAG(g, "input 0 of subgraph body is f16[4] but test.kernel_wrapper passes %x : f32[4]");
  register_subgraph_checker("test.kernel_wrapper", [](const Node&, Diagnostics&) {});
  EXPECT_CLEAN(g);
}

TEST(GraphVerify, FunctionalForbidsMutation) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* y = g.add_input("y", meta(g, dims({4})));
  Node* a = call(g, "aten.add.Tensor", {Argument(x), Argument(y)}, "a");
  g.set_output({Argument(a->result())});
  EXPECT_CLEAN(g);
  a->set_target("aten.add_.Tensor");
  a->result()->meta().storage = x->meta().storage;
  EXPECT_DIAG(g, "graph marked functional mutates %x in aten.add_.Tensor");
  g.set_functional(false);
  EXPECT_CLEAN(g);  // mutation is fine in a graph not marked functional
}

TEST(GraphVerify, FunctionalForbidsOutKwargs) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* buf = g.add_input("buf", meta(g, dims({4})));
  Node* e = call(g, "aten.exp.out", {Argument(x)}, "e", buf->meta().storage, {Kwarg{"out", Argument(buf)}});
  g.set_output({Argument(e->result())});
  EXPECT_DIAG(g, "graph marked functional mutates %buf in aten.exp.out (out=)");
}

TEST(GraphVerify, FunctionalAllowsTrailingCopyIntoInput) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* y = call(g, "aten.clone.default", {Argument(x)}, "y");
  Node* c = call(g, "aten.copy_.default", {Argument(x), Argument(y->result())}, "c", x->meta().storage);
  g.set_output({Argument(y->result())});
  EXPECT_CLEAN(g);
  // Not trailing: a computation follows the copy_.
  Node* late = call(g, "aten.neg.default", {Argument(y->result())}, "late");
  EXPECT_DIAG(g, "copy_ into graph input %x must be in the trailing epilogue, but %late = aten.neg.default(%y) follows it");
  g.erase(late);
  EXPECT_CLEAN(g);
  // Into an intermediate, not an input.
  c->set_arg(0, Argument(y->result()));
  EXPECT_DIAG(g, "graph marked functional mutates %y in aten.copy_.default (only a trailing copy_ into a graph input is allowed)");
}

TEST(GraphVerify, FunctionalSubgraphsMayNotMutate) {
  Cond c;
  c.g.set_functional(true);
  EXPECT_CLEAN(c.g);
  Node* s = c.t->output_node()->prev();
  s->set_target("aten.sin_.default");
  EXPECT_DIAG(c.g, "graph marked functional mutates %a in aten.sin_.default");
}

namespace {
struct PickyOps : OpInfoProvider {
  void check_call(const Node& call, Diagnostics& diags) const override {
    if (call.target() == "aten.bogus.default") diags.error(&call, "unknown operator aten.bogus.default");
  }
};
}  // namespace

TEST(GraphVerify, RunsCheckCallOnEveryCall) {
  set_op_info(std::make_unique<PickyOps>());
  Cond c;
  EXPECT_CLEAN(c.g);
  c.t->output_node()->prev()->set_target("aten.bogus.default");  // inside a subgraph
  EXPECT_DIAG(c.g, "unknown operator aten.bogus.default");
  set_op_info(nullptr);
  EXPECT_CLEAN(c.g);
}

TEST(GraphVerify, DiagnosticLocations) {
  Simple s;
  s.r->set_arg(0, Argument(s.r->result()));
  Diagnostics d = verify(s.g);
  ASSERT_EQ(d.items.size(), 1u);
  EXPECT_EQ(d.str(),
            "<graph @main>: error: value %r is used before it is defined; in: %r = aten.relu.default(%r)");
  s.r->set_loc(SourceLoc{"t.tir", 3, 5});
  EXPECT_EQ(verify(s.g).str(), "t.tir:3:5: error: value %r is used before it is defined");
  try {
    verify_or_throw(s.g, "after pass 'cse'");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "t.tir:3:5: error: after pass 'cse': value %r is used before it is defined");
  }
}

// ---- aliasing ----

TEST(GraphAlias, SnapshotByStorage) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* w = g.add_param("w", meta(g, dims({4})), "w");
  Node* v = call(g, "aten.view.default", {Argument(x)}, "v", x->meta().storage);
  Node* c = call(g, "aten.clone.default", {Argument(w)}, "c");
  g.set_output({Argument(c->result()), Argument(), Argument(v->result()), Argument(w), Argument(x)});
  AliasSnapshot snap = alias_snapshot(g);
  EXPECT_EQ(snap.output_input, (std::set<std::pair<size_t, size_t>>{{2, 0}, {3, 1}, {4, 0}}));
  EXPECT_EQ(snap.output_output, (std::set<std::pair<size_t, size_t>>{{2, 4}}));
}

// A fake "no-op removal" that replaces a clone of an input by the input (new aliasing) is caught.
TEST(GraphAlias, NoopRemovalOfCloneIsCaught) {
  Graph g;
  g.set_functional(true);
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* y = g.add_input("y", meta(g, dims({4})));
  Node* c = call(g, "aten.clone.default", {Argument(y)}, "c");
  g.set_output({Argument(c->result())});
  AliasSnapshot before = alias_snapshot(g);
  EXPECT_TRUE(check_no_new_aliasing(before, g, "noop").empty());
  c->result()->replace_all_uses_with(y);
  g.erase(c);
  EXPECT_TRUE(verify(g).empty());  // structurally fine; only the aliasing check sees it
  Diagnostics d = check_no_new_aliasing(before, g, "noop");
  ASSERT_EQ(d.items.size(), 1u);
  EXPECT_EQ(d.items[0].message, "pass 'noop' made output 0 alias input 1 (%y); in: output %y");
  (void)x;
}

TEST(GraphAlias, NewOutputOutputAliasing) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* a = call(g, "aten.clone.default", {Argument(x)}, "a");
  Node* b = call(g, "aten.clone.default", {Argument(x)}, "b");
  g.set_output({Argument(a->result()), Argument(b->result())});
  AliasSnapshot before = alias_snapshot(g);
  EXPECT_TRUE(before.output_output.empty());
  // A bad CSE: merge b into a.
  b->result()->replace_all_uses_with(a->result());
  g.erase(b);
  Diagnostics d = check_no_new_aliasing(before, g, "cse");
  ASSERT_EQ(d.items.size(), 1u);
  EXPECT_NE(d.items[0].message.find("pass 'cse' made output 1 alias output 0 (%a)"), std::string::npos);
  // Aliasing that already existed is not reported.
  EXPECT_TRUE(check_no_new_aliasing(alias_snapshot(g), g, "dce").empty());
}
