#include "toroid/passes/functionalize_user_kernels.h"

#include "toroid/graph/graph.h"
#include "toroid/ops/user_kernel.h"
#include "toroid/support/error.h"

namespace toroid {

namespace {

// A clone of `v`: its type and layout in a storage of its own.
TensorMeta clone_meta(Graph& g, const Value* v) {
  TensorMeta m = v->meta();
  m.storage = g.new_storage();
  m.offset = SymExpr::integer(0);
  return m;
}

void functionalize(Graph& g, Node* n) {
  std::vector<size_t> writes = ops::user_kernel_positions(*n, "writes");
  const Argument::List& tensors = n->args().at(1).list();
  // Every written tensor cloned: reinplace_user_kernels drops the clones nothing needs.
  std::vector<Kwarg> kwargs = n->kwargs();
  kwargs.push_back(Kwarg{"tensors_to_clone", *n->kwarg("writes")});
  std::vector<ResultSpec> results;
  for (size_t w : writes) results.push_back(ResultSpec::tensor(clone_meta(g, tensors.at(w).value())));
  g.set_insertion_point_before(n);
  Node* f = g.create_node(NodeKind::Call, ops::kUserKernelFunctional, n->args(), std::move(kwargs), std::move(results));
  f->set_loc(n->loc());
  f->set_origin(n->origin());
  for (size_t r = 0; r < writes.size(); ++r) {
    Value* old = tensors.at(writes[r]).value();
    Value* fresh = f->result(r);
    // Later readers see the kernel's write; earlier ones the value before it.
    std::vector<Node*> users = old->users();
    for (Node* u : users)
      if (u != n && u != f && g.comes_before(n, u)) u->replace_input(old, fresh);
    // A graph input keeps the write for the caller: a trailing copy_ of the clone into it.
    if (old->node()->kind() == NodeKind::Input || old->node()->kind() == NodeKind::Param) {
      g.set_insertion_point_to_end();
      Node* c = g.create_node(NodeKind::Call, "aten.copy_.default", {Argument(old), Argument(fresh)}, {},
                              {ResultSpec::tensor(old->meta())});
      c->set_loc(n->loc());
    }
  }
  g.erase(n);
}

}  // namespace

void functionalize_user_kernels(Graph& g) {
  std::vector<Node*> calls;
  for (Node* n : g.nodes())
    if (n->is_call() && n->target() == ops::kUserKernelMutation) calls.push_back(n);
  for (Node* n : calls) functionalize(g, n);
}

}  // namespace toroid
