#include "toroid/passes/reinplace_user_kernels.h"

#include "toroid/graph/graph.h"
#include "toroid/ops/user_kernel.h"
#include "toroid/support/log.h"

namespace toroid {

void reinplace_user_kernels(Graph& g) {
  for (Node* n : g.nodes()) {
    for (const NamedSubgraph& sub : n->subgraphs()) reinplace_user_kernels(*sub.graph);  // a branch's inputs stay cloned
    if (!n->is_call() || n->target() != ops::kUserKernelFunctional) continue;
    const Argument* cloned = n->kwarg("tensors_to_clone");
    if (!cloned || !cloned->is_list()) continue;  // the verifier reports it
    const Argument::List& tensors = n->args().at(1).list();
    Argument::List kept;
    for (const Argument& e : cloned->list()) {
      const Value* v = tensors.at(static_cast<size_t>(e.scalar().int_value())).value();
      std::string why = ops::in_place_hazard(*n, v);
      if (why.empty()) {
        TOROID_LOG("passes", "reinplace_user_kernels: " + n->args()[0].str() + " writes " + describe_value(v) + " in place");
        continue;
      }
      TOROID_LOG("passes", "reinplace_user_kernels: " + n->args()[0].str() + " keeps the clone of " + describe_value(v) + ": " + why);
      kept.push_back(e);
    }
    if (kept.size() == cloned->list().size()) continue;
    std::vector<Kwarg> kwargs = n->kwargs();
    for (Kwarg& k : kwargs)
      if (k.name == "tensors_to_clone") k.value = Argument(std::move(kept));
    n->set_kwargs(std::move(kwargs));
  }
}

}  // namespace toroid
