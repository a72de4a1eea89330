#include "toroid/passes/dce.h"

#include <unordered_set>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

void add_symbols(SymExpr e, std::unordered_set<SymExpr>& out) {
  if (e.is_null() || !e.has_symbols()) return;
  for (SymExpr s : e.free_symbols()) out.insert(s);
}

void add_argument_symbols(const Argument& a, std::unordered_set<SymExpr>& out) {
  if (a.is_scalar()) add_symbols(a.scalar(), out);
  if (a.is_list())
    for (const Argument& e : a.list()) add_argument_symbols(e, out);
}

// The symbols `n` reads: in its arguments and its results' types (which name the sizes it makes).
void symbols_used(const Node& n, std::unordered_set<SymExpr>& out) {
  for (const Argument& a : n.args()) add_argument_symbols(a, out);
  for (const auto& [name, a] : n.kwargs()) add_argument_symbols(a, out);
  for (const NamedSubgraph& sub : n.subgraphs())
    for (const Node* m : sub.graph->nodes()) symbols_used(*m, out);
}

// The unbacked symbols a call binds (item()'s value, nonzero's row count): the call stays while
// another node reads them, even when none of its results is used.
bool defines_used_symbol(const Node& n, const ShapeEnv& env, const std::unordered_set<SymExpr>& used) {
  auto defined = [&](SymExpr e) {
    if (e.is_null() || !e.is_symbol() || !used.count(e)) return false;
    const sym::SymbolInfo* info = env.info(e);
    return info && info->unbacked;
  };
  for (const Value* v : n.results()) {
    if (defined(v->scalar_value())) return true;
    if (v->is_tensor() && v->has_meta())
      for (SymExpr d : v->meta().sizes)
        if (defined(d)) return true;
  }
  return false;
}

}  // namespace

void dce(Graph& g) {
  // Subgraphs first: their bodies do not change whether the owner is used.
  for (Node* n : g.nodes())
    for (const NamedSubgraph& sub : n->subgraphs()) dce(*sub.graph);

  // Walking backwards erases whole dead chains in one sweep. A node's result types count as
  // uses of the symbols in them, so a kernel sized by u0 keeps the item() that binds u0.
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);
  std::unordered_set<SymExpr> used;
  auto removable = [&](const Node& n) {
    if (n.has_users()) return false;
    if (n.kind() == NodeKind::Constant) return true;
    if (n.kind() != NodeKind::Call || op_info().has_side_effects(n)) return false;
    return !defines_used_symbol(n, g.shape_env(), used);
  };
  auto note_uses = [&](const Node& n) {
    symbols_used(n, used);
    for (const Value* v : n.results()) {
      if (v->is_tensor() && v->has_meta()) {
        const TensorMeta& m = v->meta();
        for (SymExpr e : m.sizes) add_symbols(e, used);
        for (SymExpr e : m.strides) add_symbols(e, used);
        add_symbols(m.offset, used);
      }
    }
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (!removable(*n)) {
      note_uses(*n);
      continue;
    }
    TOROID_LOG("passes", "dce: erasing " + n->describe());
    g.erase(n);
  }
}

}  // namespace toroid
