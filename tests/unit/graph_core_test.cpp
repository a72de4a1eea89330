// Graph, Node, Value, Argument, types and metas.
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "toroid/graph/graph.h"
#include "toroid/graph/meta.h"
#include "toroid/graph/op_info.h"
#include "toroid/graph/types.h"

using namespace toroid;
using toroid::testing::call;
using toroid::testing::dims;
using toroid::testing::meta;

// ---- types ----

TEST(GraphTypes, DTypeNamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto d = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(dtype_short_name(d)), d);
    EXPECT_EQ(parse_dtype(dtype_torch_name(d)), d);
  }
  EXPECT_STREQ(dtype_short_name(DType::BFloat16), "bf16");
  EXPECT_STREQ(dtype_torch_name(DType::UInt8), "torch.uint8");
  EXPECT_EQ(parse_dtype("torch.float"), DType::Float32);
  EXPECT_EQ(parse_dtype("torch.half"), DType::Float16);
  EXPECT_EQ(parse_dtype("torch.long"), DType::Int64);
  EXPECT_EQ(parse_dtype("torch.int"), DType::Int32);
  EXPECT_EQ(parse_dtype("torch.double"), DType::Float64);
  EXPECT_EQ(parse_dtype("torch.short"), DType::Int16);
  EXPECT_EQ(parse_dtype("float32"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
  EXPECT_EQ(parse_dtype("torch.f32"), std::nullopt);
}

TEST(GraphTypes, DTypeProperties) {
  EXPECT_EQ(dtype_size(DType::Bool), 1);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2);
  EXPECT_EQ(dtype_size(DType::Int32), 4);
  EXPECT_EQ(dtype_size(DType::Float64), 8);
  EXPECT_TRUE(is_floating(DType::BFloat16));
  EXPECT_FALSE(is_floating(DType::Int64));
  EXPECT_TRUE(is_integral(DType::UInt8));
  EXPECT_FALSE(is_integral(DType::Bool));
  EXPECT_TRUE(is_integral(DType::Bool, /*include_bool=*/true));
  EXPECT_FALSE(is_integral(DType::Float16, true));
}

TEST(GraphTypes, Devices) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda"), Device::cuda(0));
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(3).str(), "cuda:3");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:1x", "cuda: 1", "cpu:0", "cuda:99999999999"}) {
    EXPECT_EQ(parse_device(bad), std::nullopt) << bad;
  }
}

TEST(GraphTypes, LayoutsAndMemoryFormats) {
  for (Layout l : {Layout::Strided, Layout::SparseCoo, Layout::SparseCsr}) {
    EXPECT_EQ(parse_layout(layout_torch_name(l)), l);
  }
  EXPECT_STREQ(layout_torch_name(Layout::SparseCsr), "torch.sparse_csr");
  for (MemoryFormat m : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d,
                         MemoryFormat::Preserve}) {
    EXPECT_EQ(parse_memory_format(memory_format_torch_name(m)), m);
  }
  EXPECT_STREQ(memory_format_torch_name(MemoryFormat::ChannelsLast3d), "torch.channels_last_3d");
  EXPECT_EQ(parse_layout("strided"), std::nullopt);
  EXPECT_EQ(parse_memory_format("torch.channels_first"), std::nullopt);
}

// ---- metas ----

TEST(GraphMeta, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides(dims({2, 3, 4})), dims({12, 4, 1}));
  EXPECT_EQ(contiguous_strides(dims({})), dims({}));
  EXPECT_EQ(contiguous_strides(dims({2, 0, 3})), dims({3, 3, 1}));  // as PyTorch
  SymExpr s0 = SymExpr::fresh_symbol("s0");
  std::vector<SymExpr> st = contiguous_strides({s0, SymExpr::integer(4), SymExpr::integer(2)});
  EXPECT_EQ(st[0], SymExpr::integer(8));
  Graph g;
  TensorMeta m = meta(g, {SymExpr::integer(3), s0});
  EXPECT_EQ(m.strides[0], s0);
  EXPECT_TRUE(m.is_contiguous());
  EXPECT_EQ(m.numel(), s0 * 3);
  TensorMeta t = m;
  std::swap(t.strides[0], t.strides[1]);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_FALSE(t.same_layout(m));
  TensorMeta other = meta(g, {SymExpr::integer(3), s0});
  EXPECT_NE(other.storage, m.storage);
  EXPECT_TRUE(other.same_layout(m));  // storage is not part of the layout
  other.dtype = DType::Float16;
  EXPECT_FALSE(other.same_layout(m));
  EXPECT_EQ(meta(g, {}).numel(), SymExpr::integer(1));
}

// ---- arguments and use lists ----

TEST(GraphArgument, KindsAndEquality) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  EXPECT_TRUE(Argument().is_none());
  EXPECT_EQ(Argument::integer(3).kind(), Argument::Kind::Scalar);
  EXPECT_EQ(Argument::string("mean").str(), "mean");
  EXPECT_EQ(Argument(DType::Int8).dtype(), DType::Int8);
  EXPECT_EQ(Argument(Device::cuda(1)).device(), Device::cuda(1));
  EXPECT_EQ(Argument(MemoryFormat::ChannelsLast).kind(), Argument::Kind::MemoryFormat);
  EXPECT_EQ(Argument::integer(3), Argument::integer(3));
  EXPECT_FALSE(Argument::integer(3) == Argument::floating(3.0));
  EXPECT_EQ(Argument(Argument::List{Argument(x), Argument::integer(1)}),
            Argument(Argument::List{Argument(x), Argument::integer(1)}));
  EXPECT_FALSE(Argument(x) == Argument::none());
  EXPECT_EQ(describe_argument(Argument(Argument::List{Argument(x), Argument::integer(1), Argument(DType::Float32)})),
            "[%x, 1, torch.float32]");
  EXPECT_EQ(describe_argument(Argument(Layout::SparseCoo)), "torch.sparse_coo");
}

TEST(GraphUses, OneEntryPerUseAcrossArgsKwargsAndLists) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* y = g.add_input("y", meta(g, dims({4})));
  Node* n = call(g, "aten.foo.default", {Argument(x), Argument(Argument::List{Argument(x), Argument(y)})}, "z", nullptr,
                 {Kwarg{"other", Argument(x)}});
  EXPECT_EQ(x->users().size(), 3u);
  EXPECT_EQ(y->users().size(), 1u);
  EXPECT_EQ(n->inputs(), (std::vector<Value*>{x, x, y, x}));
  ASSERT_NE(n->kwarg("other"), nullptr);
  EXPECT_EQ(n->kwarg("missing"), nullptr);

  n->set_args({Argument(y)});
  EXPECT_EQ(x->users().size(), 1u);  // the kwarg
  EXPECT_EQ(y->users().size(), 1u);
  n->set_kwargs({});
  EXPECT_FALSE(x->has_users());
  n->set_arg(0, Argument(x));
  EXPECT_EQ(x->users(), std::vector<Node*>{n});
  EXPECT_FALSE(y->has_users());
  EXPECT_THROW(n->set_arg(5, Argument(x)), InternalError);
}

TEST(GraphUses, ReplaceAllUsesWith) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* y = g.add_input("y", meta(g, dims({4})));
  Node* a = call(g, "aten.add.Tensor", {Argument(x), Argument(x)}, "a");
  Node* b = call(g, "aten.cat.default", {Argument(Argument::List{Argument(x), Argument(a->result())})}, "b", nullptr,
                 {Kwarg{"out", Argument(x)}});
  g.set_output({Argument(b->result()), Argument(x)});
  x->replace_all_uses_with(y);
  EXPECT_FALSE(x->has_users());
  EXPECT_EQ(y->users().size(), 5u);
  EXPECT_EQ(a->args()[0].value(), y);
  EXPECT_EQ(b->args()[0].list()[0].value(), y);
  EXPECT_EQ(b->kwarg("out")->value(), y);
  EXPECT_EQ(g.output_values(), (std::vector<Value*>{b->result(), y}));

  Value* n = g.add_scalar_input("n", ValueType::Int);
  EXPECT_THROW(y->replace_all_uses_with(n), InternalError);  // types differ
  b->replace_input(y, a->result());
  EXPECT_EQ(b->kwarg("out")->value(), a->result());
  EXPECT_EQ(y->users().size(), 3u);
}

// ---- erase and insertion ----

TEST(GraphEdit, EraseRequiresNoUsersAndDropsUses) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* a = call(g, "aten.relu.default", {Argument(x)}, "a");
  Node* b = call(g, "aten.neg.default", {Argument(a->result())}, "b");
  g.set_output({Argument(b->result())});
  try {
    g.erase(a);
    FAIL() << "erase of a used node must throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("%a still has 1 use(s)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.size(), 4u);
  g.output_node()->set_args({Argument(x)});
  g.erase(b);
  EXPECT_FALSE(a->has_users());
  g.erase(a);
  EXPECT_EQ(x->users().size(), 1u);  // the output
  EXPECT_EQ(g.size(), 2u);
  Graph other;
  Value* z = other.add_input("z", meta(other, dims({4})));
  EXPECT_THROW(g.erase(z->node()), InternalError);  // not this graph's node
}

TEST(GraphEdit, DefaultInsertionIsBeforeOutput) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  g.set_output({Argument(x)});
  Node* a = call(g, "aten.relu.default", {Argument(x)}, "a");
  EXPECT_EQ(g.back(), g.output_node());
  EXPECT_EQ(a->next(), g.output_node());
  Node* out = g.set_output({Argument(a->result())});  // replaces, does not add
  EXPECT_EQ(out, g.output_node());
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(x->users().size(), 1u);
}

TEST(GraphEdit, InsertionPoints) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* a = call(g, "aten.a.default", {Argument(x)}, "a");
  Node* c = call(g, "aten.c.default", {Argument(x)}, "c");
  g.set_output({Argument(c->result())});
  g.set_insertion_point_before(c);
  Node* b = call(g, "aten.b.default", {Argument(x)}, "b");
  g.set_insertion_point_after(x->node());
  Node* first = call(g, "aten.first.default", {Argument(x)}, "f");
  g.set_insertion_point_after(c);
  Node* d = call(g, "aten.d.default", {Argument(x)}, "d");
  g.set_insertion_point_to_end();
  Node* e = call(g, "aten.e.default", {Argument(x)}, "e");
  std::vector<Node*> expect = {x->node(), first, a, b, c, d, e, g.output_node()};
  EXPECT_EQ(g.node_list(), expect);
  EXPECT_EQ(b->prev(), a);
  EXPECT_EQ(x->node()->prev(), nullptr);
  EXPECT_EQ(g.output_node()->next(), nullptr);
  // Erasing the anchor moves the insertion point to the next node.
  g.set_insertion_point_before(d);
  g.erase(d);
  Node* f = call(g, "aten.f.default", {Argument(x)}, "f2");
  EXPECT_EQ(f->next(), e);
}

TEST(GraphEdit, InputsStayFirstAndParamsFollow) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* a = call(g, "aten.relu.default", {Argument(x)}, "a");
  g.set_output({Argument(a->result())});
  Value* w = g.add_param("fc.weight", meta(g, dims({4})), "w");
  Value* y = g.add_input("y", meta(g, dims({4})));
  Value* n = g.add_scalar_input("n", ValueType::Int);
  EXPECT_EQ(g.inputs(), (std::vector<Node*>{x->node(), y->node(), n->node()}));
  EXPECT_EQ(g.params(), std::vector<Node*>{w->node()});
  EXPECT_EQ(w->node()->target(), "fc.weight");
  EXPECT_EQ(w->node()->next(), a);
  EXPECT_EQ(n->node()->next(), w->node());
  EXPECT_EQ(n->type(), ValueType::Int);
  EXPECT_EQ(g.front(), x->node());
}

TEST(GraphOrder, ComesBeforeAcrossManyInsertionsAndMoves) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* last = call(g, "aten.last.default", {Argument(x)}, "last");
  g.set_output({Argument(last->result())});
  EXPECT_TRUE(g.comes_before(x->node(), last));
  // Repeated insertion right after the input exhausts the gaps and forces renumbering.
  std::vector<Node*> inserted;
  for (int i = 0; i < 100; ++i) {
    g.set_insertion_point_after(x->node());
    inserted.push_back(call(g, "aten.n.default", {Argument(x)}, "n" + std::to_string(i)));
    ASSERT_TRUE(g.comes_before(inserted.back(), last));
    ASSERT_TRUE(g.comes_before(x->node(), inserted.back()));
    if (i > 0) {
      ASSERT_TRUE(g.comes_before(inserted.back(), inserted[i - 1]));
    }
  }
  EXPECT_FALSE(g.comes_before(last, x->node()));
  EXPECT_FALSE(g.comes_before(last, last));
  g.move_after(inserted[0], x->node());
  EXPECT_TRUE(g.comes_before(inserted[0], inserted[1]));
  g.move_before(inserted[1], last);
  EXPECT_TRUE(g.comes_before(inserted[0], inserted[1]));
  EXPECT_TRUE(g.comes_before(inserted[2], inserted[1]));
  EXPECT_EQ(inserted[1]->next(), last);
  Graph other;
  Value* z = other.add_input("z", meta(other, dims({4})));
  EXPECT_THROW(g.comes_before(z->node(), last), InternalError);
}

TEST(GraphOrder, TopologicalCheck) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* a = call(g, "aten.relu.default", {Argument(x)}, "a");
  Node* b = call(g, "aten.neg.default", {Argument(a->result())}, "b");
  g.set_output({Argument(b->result())});
  EXPECT_TRUE(g.is_topologically_sorted());
  g.move_before(b, a);
  EXPECT_FALSE(g.is_topologically_sorted());
  g.move_after(b, a);
  EXPECT_TRUE(g.is_topologically_sorted());
}

TEST(GraphNode, MultipleResults) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4, 3})));
  Node* m = g.add_call("aten.max.dim", {Argument(x), Argument::integer(1)}, {},
                       {ResultSpec::tensor(meta(g, dims({4})), "vals"),
                        ResultSpec::tensor(meta(g, dims({4}), DType::Int64), "idx")});
  ASSERT_EQ(m->num_results(), 2u);
  EXPECT_EQ(m->result(1)->index(), 1u);
  EXPECT_EQ(m->result(1)->node(), m);
  EXPECT_EQ(m->result(1)->meta().dtype, DType::Int64);
  EXPECT_FALSE(m->has_users());
  Node* use = call(g, "aten.neg.default", {Argument(m->result(1))}, "u");
  EXPECT_TRUE(m->has_users());
  EXPECT_EQ(m->describe(), "%vals, %idx = aten.max.dim(%x, 1)");
  EXPECT_EQ(use->describe(), "%u = aten.neg.default(%idx)");
  EXPECT_THROW(m->result(2), std::out_of_range);
}

TEST(GraphNode, ScalarValuesAndMetaAccess) {
  Graph g;
  Value* n = g.add_scalar_input("n", ValueType::Int, SymExpr::integer(3));
  EXPECT_EQ(n->scalar_value(), SymExpr::integer(3));
  EXPECT_FALSE(n->has_meta());
  EXPECT_THROW(n->meta(), InternalError);
  EXPECT_THROW(n->set_meta(meta(g, dims({1}))), InternalError);
  Node* t = g.add_call("aten.empty.memory_format", {Argument(Argument::List{Argument::integer(2)})}, {},
                       {ResultSpec{ValueType::Tensor, std::nullopt, {}, "t"}});
  EXPECT_FALSE(t->result()->has_meta());
  EXPECT_THROW(t->result()->meta(), InternalError);
  t->result()->set_meta(meta(g, dims({2})));
  EXPECT_EQ(t->result()->meta().rank(), 1);
}

TEST(GraphNode, Describe) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* w = g.add_param("fc.weight", meta(g, dims({4})), "w");
  Node* y = call(g, "aten.sum.dim_IntList", {Argument(x), Argument(Argument::List{Argument::integer(0)})}, "y", nullptr,
                 {Kwarg{"dtype", Argument(DType::Float64)}, Kwarg{"device", Argument(Device::cuda(1))},
                  Kwarg{"mode", Argument::string("a\"b")}, Kwarg{"none", Argument()}});
  Node* out = g.set_output({Argument(y->result()), Argument()});
  EXPECT_EQ(x->node()->describe(), "%x = input");
  EXPECT_EQ(w->node()->describe(), "%w = param \"fc.weight\"");
  EXPECT_EQ(y->describe(),
            "%y = aten.sum.dim_IntList(%x, [0], dtype=torch.float64, device=device(\"cuda:1\"), mode=\"a\\\"b\", "
            "none=None)");
  EXPECT_EQ(out->describe(), "output %y, None");
  Node* unnamed = g.add_call("aten.relu.default", {Argument(x)}, {}, {ResultSpec::tensor(meta(g, dims({4})))});
  EXPECT_EQ(unnamed->describe(), "%<unnamed> = aten.relu.default(%x)");
  EXPECT_STREQ(node_kind_name(NodeKind::Param), "param");
  EXPECT_STREQ(value_type_name(ValueType::Float), "float");
}

// ---- subgraphs and storages ----

TEST(GraphSubgraph, SharesShapeEnvAndStorages) {
  Graph g;
  Value* p = g.add_input("p", meta(g, dims({})));
  Node* cond = g.add_call("higher_order.cond", {Argument(p)}, {}, {ResultSpec::tensor(meta(g, dims({4})), "r")});
  Graph* t = cond->add_subgraph("true_branch");
  Graph* f = cond->add_subgraph("false_branch");
  EXPECT_EQ(cond->subgraph("true_branch"), t);
  EXPECT_EQ(cond->subgraph("nope"), nullptr);
  EXPECT_EQ(cond->subgraphs().size(), 2u);
  EXPECT_EQ(t->parent_node(), cond);
  EXPECT_EQ(t->root(), &g);
  EXPECT_EQ(g.root(), &g);
  EXPECT_EQ(g.parent_node(), nullptr);
  EXPECT_EQ(&t->shape_env(), &g.shape_env());
  EXPECT_EQ(t->name(), "true_branch");
  size_t before = g.storages().size();
  Storage* s = t->new_storage();
  Storage* s2 = f->new_storage();
  EXPECT_EQ(g.storages().size(), before + 2);
  EXPECT_EQ(g.storages()[before], s);
  EXPECT_EQ(t->storages(), g.storages());
  EXPECT_EQ(s->id + 1, s2->id);
  Value* a = t->add_input("a", meta(*t, dims({4}), DType::Float32, s));
  t->set_output({Argument(a)});
  EXPECT_EQ(a->meta().storage, s);
  // Erasing the owner drops the uses inside its subgraphs too.
  g.erase(cond);
  EXPECT_FALSE(p->has_users());
  EXPECT_EQ(g.size(), 1u);
}

TEST(GraphSubgraph, DistinctRootsHaveDistinctEnvs) {
  Graph a;
  Graph b;
  EXPECT_NE(&a.shape_env(), &b.shape_env());
  EXPECT_TRUE(a.storages().empty());
  EXPECT_EQ(a.new_storage()->id, 0u);
  EXPECT_EQ(a.new_storage()->id, 1u);
}

// ---- op info ----

TEST(GraphOpInfo, NameHelpers) {
  EXPECT_EQ(op_base_name("aten.add_.Tensor"), "add_");
  EXPECT_EQ(op_overload_name("aten.add_.Tensor"), "Tensor");
  EXPECT_EQ(op_base_name("higher_order.cond"), "cond");
  EXPECT_EQ(op_overload_name("higher_order.cond"), "");
  EXPECT_EQ(op_base_name("relu"), "relu");
  EXPECT_EQ(op_overload_name("prims.convert_element_type.default"), "default");
}

TEST(GraphOpInfo, DefaultProviderFromNames) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Value* y = g.add_input("y", meta(g, dims({4})));
  auto make = [&](const std::string& op, std::vector<Kwarg> kw = {}) {
    return call(g, op, {Argument(x), Argument(y)}, "r", nullptr, std::move(kw));
  };
  const OpInfoProvider& info = op_info();
  EXPECT_EQ(info.mutated_args(*make("aten.add_.Tensor")), std::vector<size_t>{0});
  EXPECT_EQ(info.mutated_args(*make("aten.copy_.default")), std::vector<size_t>{0});
  EXPECT_EQ(info.mutated_args(*make("aten.__iand__.Tensor")), std::vector<size_t>{0});
  EXPECT_TRUE(info.mutated_args(*make("aten.__and__.Tensor")).empty());
  EXPECT_TRUE(info.mutated_args(*make("aten.add.Tensor")).empty());
  EXPECT_FALSE(info.has_side_effects(*make("aten.add.Tensor")));
  EXPECT_TRUE(info.has_side_effects(*make("aten.add_.Tensor")));

  Node* out = make("aten.exp.out", {Kwarg{"out", Argument(y)}, Kwarg{"output_size", Argument::integer(1)}});
  EXPECT_TRUE(info.mutated_args(*out).empty());
  EXPECT_EQ(info.mutated_kwargs(*out), std::vector<std::string>{"out"});
  EXPECT_TRUE(info.has_side_effects(*out));
  Node* out2 = make("aten.pow.Tensor_Scalar_out", {Kwarg{"out", Argument(y)}});
  EXPECT_EQ(info.mutated_kwargs(*out2), std::vector<std::string>{"out"});
  EXPECT_TRUE(info.mutated_kwargs(*make("aten.exp.default", {Kwarg{"out", Argument(y)}})).empty());

  for (const char* op : {"aten.rand.default", "aten.randn_like.default", "aten.native_dropout.default",
                         "aten.bernoulli.p", "aten.normal.Tensor_Tensor", "aten.uniform.default",
                         "aten.exponential.default", "aten.multinomial.default", "aten.randperm.default",
                         "aten.log_normal.default", "aten.cauchy.default", "aten.geometric.default",
                         "aten.poisson.default"}) {
    EXPECT_FALSE(info.is_deterministic(*make(op))) << op;
  }
  EXPECT_TRUE(info.is_deterministic(*make("aten.native_layer_norm.default")));
  EXPECT_FALSE(info.has_side_effects(*make("aten.rand.default")));
  EXPECT_TRUE(info.has_side_effects(*make("aten._assert_async.msg")));
  EXPECT_TRUE(info.has_side_effects(*make("aten.sym_constrain_range.default")));
}

namespace {
struct EverythingMutates : OpInfoProvider {
  std::vector<size_t> mutated_args(const Node&) const override { return {1}; }
};
}  // namespace

TEST(GraphOpInfo, InstallAndReset) {
  Graph g;
  Value* x = g.add_input("x", meta(g, dims({4})));
  Node* n = call(g, "aten.relu.default", {Argument(x), Argument(x)}, "r");
  set_op_info(std::make_unique<EverythingMutates>());
  EXPECT_EQ(op_info().mutated_args(*n), std::vector<size_t>{1});
  EXPECT_TRUE(op_info().has_side_effects(*n));  // the base class builds on mutated_args
  set_op_info(nullptr);
  EXPECT_TRUE(op_info().mutated_args(*n).empty());
}
