#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "toroid/graph/graph.h"
#include "toroid/graph/verify.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/registry.h"

using namespace toroid;
using namespace toroid::ops;

namespace {

TensorMeta meta_f32(Graph& g, std::initializer_list<int64_t> dims) {
  TensorMeta m;
  for (int64_t d : dims) m.sizes.push_back(SymExpr::integer(d));
  m.strides = contiguous_strides(m.sizes);
  m.storage = g.new_storage();
  return m;
}

// Runs the schema check of one call and returns its diagnostics as text.
std::string check(const Node& n) {
  auto info = make_schema_op_info();
  Diagnostics d;
  info->check_call(n, d);
  return d.str();
}

}  // namespace

TEST(Registry, HoldsEveryCoreOpOfTheTsvInOrder) {
  std::ifstream in(std::string(TOROID_SOURCE_DIR "/data/core_aten_ops.tsv"));
  std::string line;
  size_t core = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::string overload = line.substr(0, line.find('\t'));
    const OpEntry* e = OpRegistry::global().find(overload);
    ASSERT_NE(e, nullptr) << overload << " (rerun tools/gen/gen_core_schemas.py)";
    EXPECT_TRUE(e->core);
    ++core;
  }
  EXPECT_EQ(core, 193u);
  size_t registered_core = 0;
  for (const OpEntry& e : OpRegistry::global().entries()) registered_core += e.core;
  EXPECT_EQ(registered_core, 193u);
  EXPECT_EQ(OpRegistry::global().find("aten.nope.default"), nullptr);
}

TEST(Registry, ExtrasIncludeViewsInPlaceAndMm) {
  for (const char* op : {"aten.transpose.int", "aten.t.default", "aten._unsafe_view.default", "aten.expand.default",
                         "aten.clone.default", "aten.copy_.default", "aten.mm.default", "aten.bmm.default",
                         "aten.addmm.default"}) {
    EXPECT_NE(OpRegistry::global().find(op), nullptr) << op;
  }
}

TEST(SchemaOpInfo, MutationFromAliasAnnotations) {
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, {4}));
  Value* y = g.add_input("y", meta_f32(g, {4}));
  TensorMeta aliased = meta_f32(g, {4});
  aliased.storage = x->meta().storage;
  Node* add_ = g.add_call("aten.add_.Tensor", {Argument(x), Argument(y)}, {}, {ResultSpec::tensor(aliased)});
  Node* add = g.add_call("aten.add.Tensor", {Argument(x), Argument(y)}, {}, {ResultSpec::tensor(meta_f32(g, {4}))});
  TensorMeta out_meta = meta_f32(g, {4});
  out_meta.storage = y->meta().storage;
  Node* out = g.add_call("aten.atan2.out", {Argument(x), Argument(x)}, {{"out", Argument(y)}},
                         {ResultSpec::tensor(out_meta)});
  auto info = make_schema_op_info();
  EXPECT_EQ(info->mutated_args(*add_), std::vector<size_t>{0});
  EXPECT_TRUE(info->has_side_effects(*add_));
  EXPECT_TRUE(info->mutated_args(*add).empty());
  EXPECT_FALSE(info->has_side_effects(*add));
  EXPECT_EQ(info->mutated_kwargs(*out), std::vector<std::string>{"out"});
  EXPECT_TRUE(info->has_side_effects(*out));
}

TEST(SchemaOpInfo, AcceptsWellFormedCalls) {
  // Nodes built with their meta functions pass both the schema check and the meta re-derivation.
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, {4, 4}));
  TensorMeta idx_meta = meta_f32(g, {2});
  idx_meta.dtype = DType::Int64;
  idx_meta.strides = contiguous_strides(idx_meta.sizes);
  Value* i = g.add_input("i", idx_meta);
  Node* add = build_call(g, "aten.add.Tensor", {Argument(x), Argument(x)}, {{"alpha", Argument::integer(2)}});
  EXPECT_EQ(check(*add), "");
  Node* sum = build_call(g, "aten.sum.dim_IntList", {Argument(x), Argument(Argument::List{Argument::integer(1)})},
                         {{"keepdim", Argument::boolean(true)}});
  EXPECT_EQ(check(*sum), "");
  Node* mx = build_call(g, "aten.max.dim", {Argument(x), Argument::integer(1)});
  ASSERT_EQ(mx->num_results(), 2u);
  EXPECT_EQ(mx->result(1)->meta().dtype, DType::Int64);
  EXPECT_EQ(check(*mx), "");
  Node* split = build_call(g, "aten.split_with_sizes.default",
                           {Argument(x), Argument(Argument::List{Argument::integer(1), Argument::integer(3)})});
  ASSERT_EQ(split->num_results(), 2u);
  EXPECT_EQ(split->result(1)->meta().storage, x->meta().storage);
  EXPECT_EQ(check(*split), "");
  Node* idx = build_call(g, "aten.index.Tensor", {Argument(x), Argument(Argument::List{Argument(), Argument(i)})});
  EXPECT_EQ(check(*idx), "");
  // A Python number where ATen expects a Tensor is wrapped into a 0-dim tensor.
  Node* scaled = build_call(g, "aten.mul.Tensor", {Argument(x), Argument::floating(0.125)});
  EXPECT_EQ(check(*scaled), "");
}

TEST(SchemaOpInfo, ReportsArgumentProblems) {
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, {4}));
  auto res = [&] { return std::vector<ResultSpec>{ResultSpec::tensor(meta_f32(g, {4}))}; };
  Node* missing = g.add_call("aten.add.Tensor", {Argument(x)}, {}, res());
  EXPECT_NE(check(*missing).find("missing required argument 'other' of aten.add.Tensor"), std::string::npos);
  Node* too_many = g.add_call("aten.relu.default", {Argument(x), Argument(x)}, {}, res());
  EXPECT_NE(check(*too_many).find("aten.relu.default takes at most 1 positional arguments but 2 were given"),
            std::string::npos);
  Node* unknown_kw = g.add_call("aten.relu.default", {Argument(x)}, {{"inplace", Argument::boolean(true)}}, res());
  EXPECT_NE(check(*unknown_kw).find("unknown keyword argument 'inplace' for aten.relu.default"), std::string::npos);
  Node* twice = g.add_call("aten.add.Tensor", {Argument(x), Argument(x)}, {{"other", Argument(x)}}, res());
  EXPECT_NE(check(*twice).find("argument 'other' of aten.add.Tensor is given twice"), std::string::npos);
  Node* wrong_type = g.add_call("aten.add.Tensor", {Argument(x), Argument::string("two")}, {}, res());
  EXPECT_NE(check(*wrong_type).find("argument 'other' of aten.add.Tensor must be Tensor, not str"), std::string::npos);
  Node* unknown = g.add_call("aten.frobnicate.default", {Argument(x)}, {}, res());
  EXPECT_NE(check(*unknown).find("unknown operator 'aten.frobnicate.default'"), std::string::npos);
  Node* other_ns = g.add_call("mylib.custom.default", {Argument(x)}, {}, res());
  EXPECT_EQ(check(*other_ns), "");
}

TEST(SchemaOpInfo, ReportsResultProblems) {
  Graph g;
  Value* x = g.add_input("x", meta_f32(g, {4}));
  Node* one = g.add_call("aten.max.dim", {Argument(x), Argument::integer(0)}, {}, {ResultSpec::tensor(meta_f32(g, {}))});
  EXPECT_NE(check(*one).find("aten.max.dim returns 2 results but the node has 1"), std::string::npos);
  Node* scalar = g.add_call("aten.sym_size.int", {Argument(x), Argument::integer(0)}, {},
                            {ResultSpec::tensor(meta_f32(g, {}))});
  EXPECT_NE(check(*scalar).find("result 0 of aten.sym_size.int must be SymInt, not tensor"), std::string::npos);
}
