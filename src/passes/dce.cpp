#include "toroid/passes/dce.h"

#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

bool removable(const Node& n) {
  if (n.has_users()) return false;
  if (n.kind() == NodeKind::Constant) return true;
  return n.kind() == NodeKind::Call && !op_info().has_side_effects(n);
}

}  // namespace

void dce(Graph& g) {
  // Subgraphs first: their bodies do not change whether the owner is used.
  for (Node* n : g.nodes())
    for (const NamedSubgraph& sub : n->subgraphs()) dce(*sub.graph);

  // Walking backwards erases whole dead chains in one sweep.
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (!removable(*n)) continue;
    TOROID_LOG("passes", "dce: erasing " + n->describe());
    g.erase(n);
  }
}

}  // namespace toroid
