// The decompose pass: looks each call up in the decomposition tables and rewrites it.
#include "toroid/passes/decompose.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "decompositions.h"
#include "toroid/graph/graph.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

const std::unordered_map<std::string, passes::DecompFn>& table() {
  static const auto* t = [] {
    auto* m = new std::unordered_map<std::string, passes::DecompFn>();
    for (auto family : {passes::activation_decompositions, passes::norm_decompositions,
                        passes::linalg_decompositions, passes::misc_decompositions})
      for (const passes::Decomposition& d : family())
        if (!m->emplace(d.op, d.fn).second) TOROID_INTERNAL_ERROR(std::string("decompose: two decompositions of ") + d.op);
    return m;
  }();
  return *t;
}

void decompose_graph(Graph& g) {
  for (Node* n : g.node_list()) {
    for (const NamedSubgraph& s : n->subgraphs()) decompose_graph(*s.graph);
    if (!n->is_call()) continue;
    auto it = table().find(n->target());
    if (it == table().end()) continue;
    // A decomposition that meets an argument it cannot build (a meta function rejects it)
    // leaves the node alone: the replacement is a separate graph, so g is untouched.
    try {
      passes::Rewriter rw(g, n);
      it->second(rw);
    } catch (const UserError& e) {
      TOROID_LOG("passes", "decompose: keeping " + n->describe() + ": " + e.message());
    }
  }
}

}  // namespace

void decompose(Graph& g) { decompose_graph(g); }

std::vector<std::string> decomposed_ops() {
  std::vector<std::string> out;
  for (const auto& [op, fn] : table()) out.push_back(op);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace toroid
