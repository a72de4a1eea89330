// Rewriter: builds the replacement of one call node as a small graph (through the ops' meta
// functions) and splices it in with replace_by_example. Used by the decompositions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/ops/impl.h"

namespace toroid::passes {

class Rewriter {
 public:
  // `n` must be a call of an op with a schema.
  Rewriter(Graph& g, Node* n);

  Graph& graph() { return *rep_; }
  Node* node() const { return node_; }
  const ops::BoundArgs& args() const { return bound_; }

  // A tensor argument of the matched node as a value of the replacement graph (null for None).
  Value* in(std::string_view name);
  // A scalar argument (null for None or unknown).
  SymExpr scalar(std::string_view name) const { return bound_.scalar(name); }
  std::optional<double> number(std::string_view name) const;  // a constant number argument
  std::optional<int64_t> integer(std::string_view name) const;
  bool flag(std::string_view name, bool dflt) const;
  // The replacement value for a value of the matched graph.
  Value* map(Value* v);

  // Appends a call (results inferred by its meta function) and returns its first result.
  Value* call(std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {});
  Node* call_node(std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {});

  // Shorthands for the lowerable set.
  Value* unary(const char* op, Value* x) { return call(op, {Argument(x)}); }
  Value* binary(const char* op, Value* a, Value* b) { return call(op, {Argument(a), Argument(b)}); }
  Value* add(Value* a, Value* b) { return binary("aten.add.Tensor", a, b); }
  Value* sub(Value* a, Value* b) { return binary("aten.sub.Tensor", a, b); }
  Value* mul(Value* a, Value* b) { return binary("aten.mul.Tensor", a, b); }
  Value* div(Value* a, Value* b) { return binary("aten.div.Tensor", a, b); }
  Value* add(Value* a, double s) { return call("aten.add.Tensor", {Argument(a), Argument::floating(s)}); }
  Value* mul(Value* a, double s) { return call("aten.mul.Tensor", {Argument(a), Argument::floating(s)}); }
  Value* cast(Value* x, DType d);  // _to_copy unless already of dtype d
  Value* scalar_tensor(double v, DType d);  // a 0-d tensor on the matched node's device
  // keepdim reductions over `dims`.
  Value* sum(Value* x, const std::vector<int64_t>& dims, bool keepdim);
  Value* amax(Value* x, const std::vector<int64_t>& dims, bool keepdim);
  Value* reshape(Value* x, std::vector<SymExpr> sizes);
  Value* view(Value* x, std::vector<SymExpr> sizes);
  Value* unsqueeze(Value* x, int64_t dim);
  Value* squeeze(Value* x, const std::vector<int64_t>& dims);
  Value* where(Value* c, Value* a, Value* b) { return call("aten.where.self", {Argument(c), Argument(a), Argument(b)}); }

  // f32 for f16/bf16 (PyTorch's computation dtype), else d.
  static DType computation_dtype(DType d);
  DType dtype_of(Value* v) const { return v->meta().dtype; }
  Device device() const;

  // Replaces the node's results by `outs` (one per result). Each is first brought to the
  // original result's dtype, sizes and strides; false (graph unchanged) when that is not
  // possible. `copies` are side-effecting calls (copy_ into running stats) kept in the graph.
  bool commit(std::vector<Value*> outs);

 private:
  Value* match_layout(Value* v, const TensorMeta& want);
  bool same(SymExpr a, SymExpr b) const;
  bool same_layout(const TensorMeta& a, const TensorMeta& b) const;

  Graph& g_;
  Node* node_;
  std::unique_ptr<Graph> rep_;
  ops::BoundArgs bound_;
  std::vector<Value*> g_args_;                       // matched-graph values, in rep input order
  std::unordered_map<Value*, Value*> inputs_;        // matched-graph value -> rep input
  std::unordered_map<const Storage*, Storage*> storages_;
};

// Integer helpers on argument lists.
std::vector<int64_t> int_values(const std::vector<SymExpr>& v, bool* ok);
int64_t wrap_dim(int64_t d, int64_t rank);

}  // namespace toroid::passes
