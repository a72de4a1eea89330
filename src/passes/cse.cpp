#include "toroid/passes/cse.h"

#include <functional>
#include <set>
#include <unordered_map>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"
#include "toroid/support/hash.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

size_t hash_argument(const Argument& a) {
  size_t h = static_cast<size_t>(a.kind());
  switch (a.kind()) {
    case Argument::Kind::None: break;
    case Argument::Kind::Scalar: h = hash_combine(h, a.scalar().hash()); break;
    case Argument::Kind::String: h = hash_combine(h, std::hash<std::string>()(a.str())); break;
    case Argument::Kind::DType: h = hash_combine(h, static_cast<size_t>(a.dtype())); break;
    case Argument::Kind::Device:
      h = hash_combine(h, static_cast<size_t>(a.device().type) * 1024 + static_cast<size_t>(a.device().index + 1));
      break;
    case Argument::Kind::Layout: h = hash_combine(h, static_cast<size_t>(a.layout())); break;
    case Argument::Kind::MemoryFormat: h = hash_combine(h, static_cast<size_t>(a.memory_format())); break;
    case Argument::Kind::Value: h = hash_combine(h, std::hash<const void*>()(a.value())); break;
    case Argument::Kind::List:
      for (const Argument& e : a.list()) h = hash_combine(h, hash_argument(e));
      break;
  }
  return h;
}

size_t hash_node(const Node& n) {
  size_t h = hash_combine(static_cast<size_t>(n.kind()), std::hash<std::string>()(n.target()));
  for (const Argument& a : n.args()) h = hash_combine(h, hash_argument(a));
  for (const Kwarg& k : n.kwargs()) {
    h = hash_combine(h, std::hash<std::string>()(k.name));
    h = hash_combine(h, hash_argument(k.value));
  }
  h = hash_combine(h, n.num_results());
  if (n.kind() == NodeKind::Constant) {
    std::string_view bytes(reinterpret_cast<const char*>(n.constant_data().data()), n.constant_data().size());
    h = hash_combine(h, std::hash<std::string_view>()(bytes));
  }
  return h;
}

bool same_results(const Node& a, const Node& b) {
  if (a.num_results() != b.num_results()) return false;
  for (size_t i = 0; i < a.num_results(); ++i) {
    const Value* va = a.result(i);
    const Value* vb = b.result(i);
    if (va->type() != vb->type()) return false;
    if (va->is_tensor()) {
      if (!va->meta().same_layout(vb->meta())) return false;
    } else if (va->scalar_value() != vb->scalar_value()) {
      return false;
    }
  }
  return true;
}

bool same_kwargs(const Node& a, const Node& b) {
  if (a.kwargs().size() != b.kwargs().size()) return false;
  for (size_t i = 0; i < a.kwargs().size(); ++i)
    if (a.kwargs()[i].name != b.kwargs()[i].name || !(a.kwargs()[i].value == b.kwargs()[i].value)) return false;
  return true;
}

bool equivalent(const Node& a, const Node& b) {
  return a.kind() == b.kind() && a.target() == b.target() && a.args() == b.args() && same_kwargs(a, b) &&
         a.constant_data() == b.constant_data() && same_results(a, b);
}

bool mergeable(const Node& n) {
  if (n.kind() == NodeKind::Constant) return true;
  return n.kind() == NodeKind::Call && n.subgraphs().empty() && !op_info().has_side_effects(n) &&
         op_info().is_deterministic(n);
}

// Storages a caller can see: those of graph inputs, params and outputs. Merging two distinct
// observable storages would create aliasing the graph did not have.
std::set<const Storage*> observable_storages(const Graph& g) {
  std::set<const Storage*> seen;
  auto add = [&](const Value* v) {
    if (v->is_tensor() && v->meta().storage) seen.insert(v->meta().storage);
  };
  for (Node* n : g.inputs()) add(n->result());
  for (Node* n : g.params()) add(n->result());
  for (Value* v : g.output_values()) add(v);
  return seen;
}

void cse_graph(Graph& g) {
  for (Node* n : g.nodes())
    for (const NamedSubgraph& sub : n->subgraphs()) cse_graph(*sub.graph);

  std::set<const Storage*> observable = observable_storages(g);
  std::unordered_map<size_t, std::vector<Node*>> seen;
  std::vector<Node*> order;
  for (Node* n : g.nodes()) order.push_back(n);

  for (Node* n : order) {
    if (!mergeable(*n)) continue;
    std::vector<Node*>& bucket = seen[hash_node(*n)];
    Node* twin = nullptr;
    for (Node* candidate : bucket)
      if (equivalent(*candidate, *n)) { twin = candidate; break; }
    if (!twin) { bucket.push_back(n); continue; }

    bool aliasing_conflict = false;
    for (size_t i = 0; i < n->num_results(); ++i) {
      Value* keep = twin->result(i);
      Value* drop = n->result(i);
      if (!keep->is_tensor()) continue;
      Storage* sk = keep->meta().storage;
      Storage* sd = drop->meta().storage;
      if (sk != sd && observable.count(sk) && observable.count(sd)) aliasing_conflict = true;
    }
    if (aliasing_conflict) {
      TOROID_LOG("passes", "cse: keeping " + n->describe() + " (merging would alias two observable tensors)");
      continue;
    }
    TOROID_LOG("passes", "cse: " + n->describe() + " -> " + twin->describe());
    for (size_t i = 0; i < n->num_results(); ++i) {
      Value* keep = twin->result(i);
      Value* drop = n->result(i);
      if (keep->is_tensor() && keep->meta().storage != drop->meta().storage) {
        Storage* sd = drop->meta().storage;
        if (observable.count(sd)) observable.insert(keep->meta().storage);
        retarget_storage(g, sd, keep->meta().storage);
      }
      drop->replace_all_uses_with(keep);
    }
    g.erase(n);
  }
}

}  // namespace

void cse(Graph& g) { cse_graph(g); }

}  // namespace toroid
