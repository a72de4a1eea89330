#include "toroid/passes/fuse_addmm_activation.h"

#include <optional>

#include "rewriter.h"
#include "toroid/graph/graph.h"
#include "toroid/passes/dce.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

bool is_tanh(const Argument& a) { return a.kind() == Argument::Kind::String && a.str() == "tanh"; }

// An argument of the matched graph with its values mapped into the rewriter's graph.
Argument remap(passes::Rewriter& rw, const Argument& a) {
  if (a.is_value()) return Argument(rw.map(a.value()));
  if (!a.is_list()) return a;
  Argument::List out;
  for (const Argument& e : a.list()) out.push_back(remap(rw, e));
  return Argument(std::move(out));
}

// use_gelu for the activations cuBLASLt has (relu: false, tanh-gelu: true); nullopt otherwise.
std::optional<bool> activation(const Node& n) {
  if (n.target() == "aten.relu.default") return false;
  if (n.target() != "aten.gelu.default") return std::nullopt;
  for (const Kwarg& k : n.kwargs())
    if (k.name == "approximate" && is_tanh(k.value)) return true;
  if (n.args().size() >= 2 && is_tanh(n.args()[1])) return true;
  return std::nullopt;
}

bool is_reshape(const Node& n) {
  return n.target() == "aten.view.default" || n.target() == "aten._unsafe_view.default" ||
         n.target() == "aten.reshape.default";
}

// The single-user producer of v, or null.
Node* sole_producer(Value* v) {
  if (v->users().size() != 1 || v->node() == nullptr || !v->node()->is_call() || v->node()->num_results() != 1)
    return nullptr;
  return v->node();
}

bool fuse(Graph& g, Node* act, bool use_gelu) {
  Value* x = act->args().at(0).value();
  Node* view = nullptr;
  Node* mm = sole_producer(x);
  if (mm && is_reshape(*mm)) {
    view = mm;
    mm = sole_producer(view->args().at(0).value());
  }
  if (!mm || mm->target() != "aten.addmm.default") return false;
  DType d = mm->result()->meta().dtype;
  if (d != DType::Float32 && d != DType::BFloat16 && d != DType::Float16) return false;

  passes::Rewriter rw(g, act);
  std::vector<Argument> args;
  for (const Argument& a : mm->args()) args.push_back(remap(rw, a));
  std::vector<Kwarg> kwargs;
  for (const Kwarg& k : mm->kwargs()) kwargs.push_back(Kwarg{k.name, remap(rw, k.value)});
  kwargs.push_back(Kwarg{"use_gelu", Argument::boolean(use_gelu)});
  Value* r = rw.call("aten._addmm_activation.default", std::move(args), std::move(kwargs));
  if (view) {
    std::vector<Argument> vargs{Argument(r)};
    for (size_t i = 1; i < view->args().size(); ++i) vargs.push_back(remap(rw, view->args()[i]));
    std::vector<Kwarg> vkwargs;
    for (const Kwarg& k : view->kwargs()) vkwargs.push_back(Kwarg{k.name, remap(rw, k.value)});
    r = rw.call(view->target(), std::move(vargs), std::move(vkwargs));
  }
  if (!rw.commit({r})) return false;
  TOROID_LOG("fusion", std::string("addmm + ") + (use_gelu ? "gelu" : "relu") + " -> _addmm_activation");
  return true;
}

}  // namespace

void fuse_addmm_activation(Graph& g) {
  bool changed = false;
  for (Node* n : g.node_list()) {
    if (!n->is_call()) continue;
    std::optional<bool> gelu = activation(*n);
    if (gelu && n->args().size() >= 1 && n->args()[0].is_value()) changed |= fuse(g, n, *gelu);
  }
  // The addmm and view now have no users.
  if (changed) dce(g);
}

}  // namespace toroid
