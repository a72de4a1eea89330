#include "toroid/passes/remove_noops.h"

#include <set>
#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

bool same_expr(const ShapeEnv& env, SymExpr a, SymExpr b) {
  if (a == b) return true;
  if (a.is_null() || b.is_null()) return false;
  return env.simplify(a) == env.simplify(b);
}

// Same dtype, device, sizes, strides and offset.
bool same_tensor_layout(const ShapeEnv& env, const TensorMeta& a, const TensorMeta& b) {
  if (a.dtype != b.dtype || !(a.device == b.device) || a.rank() != b.rank()) return false;
  if (!same_expr(env, a.offset, b.offset)) return false;
  for (size_t i = 0; i < a.sizes.size(); ++i)
    if (!same_expr(env, a.sizes[i], b.sizes[i]) || !same_expr(env, a.strides[i], b.strides[i])) return false;
  return true;
}

bool scalar_is(const Argument& a, double v) {
  if (!a.is_scalar()) return false;
  SymExpr e = a.scalar();
  if (std::optional<int64_t> i = e.as_int()) return static_cast<double>(*i) == v;
  if (e.kind() == sym::Kind::FloatConst) return e.float_value() == v;
  return false;
}


// The input a call would return unchanged, judged by its target and arguments; the caller
// then checks the metas. Null when the call is not of a no-op form.
Value* noop_source(const Node& n) {
  if (!n.is_call() || n.num_results() != 1 || !n.result()->is_tensor() || n.args().empty() || !n.args()[0].is_value())
    return nullptr;
  Value* src = n.args()[0].value();
  if (!src->is_tensor()) return nullptr;
  const std::string& t = n.target();
  static const std::set<std::string> kCopies = {"aten.clone.default", "aten.alias.default", "aten.detach.default",
                                                "aten.lift_fresh_copy.default", "aten._to_copy.default",
                                                "aten.contiguous.default"};
  if (kCopies.count(t)) return src;
  // copy(dst, src) takes only dst's layout, so with src's own layout it is src (functionalized
  // `dst.copy_(src)`, as a user kernel's result written back to its tensor).
  if (t == "aten.copy.default" && n.args().size() >= 2 && n.args()[1].is_value() && n.args()[1].value()->is_tensor())
    return n.args()[1].value();
  // Arithmetic identities with a scalar (possibly in the .Tensor overload's second argument).
  if (n.args().size() >= 2) {
    const Argument& other = n.args()[1];
    if ((t == "aten.mul.Tensor" || t == "aten.mul.Scalar" || t == "aten.div.Tensor" || t == "aten.div.Scalar") &&
        scalar_is(other, 1.0) && n.kwargs().empty())
      return src;
    if ((t == "aten.add.Tensor" || t == "aten.add.Scalar" || t == "aten.sub.Tensor" || t == "aten.sub.Scalar") &&
        scalar_is(other, 0.0))
      return src;
  }
  // Any other single-input call whose result is a view of its input with the same layout.
  if (n.result()->meta().storage == src->meta().storage) return src;
  return nullptr;
}

class RemoveNoops {
 public:
  explicit RemoveNoops(Graph& g) : g_(g) {
    for (Node* n : g.inputs()) add_storage(n->result(), protected_);
    for (Node* n : g.params()) add_storage(n->result(), protected_);
    for (Node* n : g.nodes()) {
      if (!n->is_call()) continue;
      for (size_t i : op_info().mutated_args(*n))
        if (i < n->args().size()) n->args()[i].for_each_value([&](Value* v) { add_storage(v, mutated_); });
    }
  }

  void run() {
    for (Node* n : g_.node_list()) {
      if (!n->is_call() || op_info().has_side_effects(*n)) continue;
      Value* src = noop_source(*n);
      if (src == nullptr) continue;
      Value* r = n->result();
      if (!r->has_meta() || !src->has_meta()) continue;
      if (!same_tensor_layout(g_.shape_env(), r->meta(), src->meta())) continue;
      if (!safe_to_forward(r, src)) continue;
      TOROID_LOG("passes", "remove_noops: " + n->describe());
      // Views of the removed copy now view its source.
      retarget_storage(g_, r->meta().storage, src->meta().storage);
      r->replace_all_uses_with(src);
      g_.erase(n);
    }
  }

 private:
  static void add_storage(const Value* v, std::set<const Storage*>& s) {
    if (v->is_tensor() && v->has_meta() && v->meta().storage) s.insert(v->meta().storage);
  }

  // Forwarding a view of the same storage changes no aliasing. A copy may be dropped only if
  // nothing can tell it from its source: neither it nor a view of it returned next to an
  // observable storage, and its source is never written.
  bool safe_to_forward(Value* r, Value* src) const {
    const Storage* sr = r->meta().storage;
    const Storage* ss = src->meta().storage;
    if (sr == ss) return true;
    if (mutated_.count(ss) || mutated_.count(sr)) return false;
    Node* out = g_.output_node();
    // A view of the copy is as observable as the copy itself.
    bool returned = false;
    if (out)
      for (const Argument& a : out->args())
        a.for_each_value([&](Value* v) { returned = returned || (v->is_tensor() && v->has_meta() && v->meta().storage == sr); });
    if (!returned) return true;
    if (protected_.count(ss)) return false;
    bool ss_is_output = false;
    for (const Argument& a : out->args())
      a.for_each_value([&](Value* v) {
        if (v->is_tensor() && v->has_meta() && v->meta().storage == ss) ss_is_output = true;
      });
    return !ss_is_output;
  }

  Graph& g_;
  std::set<const Storage*> protected_;  // inputs and params
  std::set<const Storage*> mutated_;
};

void run_graph(Graph& g) {
  for (Node* n : g.nodes())
    for (const NamedSubgraph& s : n->subgraphs()) run_graph(*s.graph);
  RemoveNoops(g).run();
}

}  // namespace

void remove_noops(Graph& g) { run_graph(g); }

}  // namespace toroid
