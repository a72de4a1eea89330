// replace_by_example (Inductor's pattern replacement): splice a copy of a replacement graph over matched nodes.
#include "toroid/graph/replace.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "toroid/graph/graph.h"

namespace toroid {

namespace {

bool same_signature_type(const Value* a, const Value* b) {
  if (a->type() != b->type()) return false;
  if (!a->is_tensor() || !a->has_meta() || !b->has_meta()) return true;
  return a->meta().dtype == b->meta().dtype && a->meta().rank() == b->meta().rank();
}

std::string type_text(const Value* v) {
  if (!v->is_tensor() || !v->has_meta()) return value_type_name(v->type());
  return std::string(dtype_short_name(v->meta().dtype)) + " tensor of rank " + std::to_string(v->meta().rank());
}

[[noreturn]] void fail(const std::string& message) { user_error("replace_by_example: " + message); }

// Every argument of every node, recursively through subgraphs, is defined earlier in its graph.
bool closed(const Graph& g) {
  if (!g.is_topologically_sorted()) return false;
  for (Node* n : g.nodes()) {
    for (const NamedSubgraph& s : n->subgraphs()) {
      if (s.graph == nullptr || !closed(*s.graph)) return false;
    }
  }
  return true;
}

// State of one copy: value and storage maps, symbol substitution, and the location to stamp.
class Copier {
 public:
  Copier(Graph& g, SourceLoc loc, NodeOrigin origin) : g_(g), loc_(std::move(loc)), origin_(std::move(origin)) {}

  std::unordered_map<const Storage*, Storage*> storages;
  std::unordered_map<SymExpr, SymExpr> symbols;

  SymExpr expr(SymExpr e) const {
    if (symbols.empty() || e.is_null() || !e.has_symbols()) return e;
    return sym::substitute(e, [&](SymExpr s) {
      auto it = symbols.find(s);
      return it == symbols.end() ? s : it->second;
    });
  }

  Argument arg(const Argument& a, const std::unordered_map<const Value*, Value*>& values) const {
    switch (a.kind()) {
      case Argument::Kind::Value:
        return Argument(values.at(a.value()));
      case Argument::Kind::Scalar:
        return Argument(expr(a.scalar()));
      case Argument::Kind::List: {
        Argument::List out;
        out.reserve(a.list().size());
        for (const Argument& e : a.list()) out.push_back(arg(e, values));
        return Argument(std::move(out));
      }
      default:
        return a;
    }
  }

  TensorMeta meta(const TensorMeta& m) {
    TensorMeta out = m;
    for (SymExpr& e : out.sizes) e = expr(e);
    for (SymExpr& e : out.strides) e = expr(e);
    out.offset = expr(out.offset);
    if (m.storage != nullptr) {
      auto [it, inserted] = storages.try_emplace(m.storage, nullptr);
      if (inserted) it->second = g_.new_storage();
      out.storage = it->second;
    }
    return out;
  }

  std::vector<ResultSpec> results(const Node& src) {
    std::vector<ResultSpec> out;
    for (const Value* r : src.results()) {
      ResultSpec spec;
      spec.type = r->type();
      if (r->is_tensor() && r->has_meta()) spec.meta = meta(r->meta());
      spec.scalar_value = expr(r->scalar_value());
      spec.name = r->name();
      out.push_back(std::move(spec));
    }
    return out;
  }

  // Copies `src` into `dst` (at dst's insertion point), mapping its uses through `values`.
  Node* copy(const Node& src, Graph& dst, std::unordered_map<const Value*, Value*>& values) {
    std::vector<Argument> args;
    for (const Argument& a : src.args()) args.push_back(arg(a, values));
    std::vector<Kwarg> kwargs;
    for (const Kwarg& k : src.kwargs()) kwargs.push_back(Kwarg{k.name, arg(k.value, values)});
    Node* n = dst.create_node(src.kind(), src.target(), std::move(args), std::move(kwargs), results(src));
    n->set_constant_data(src.constant_data());
    n->set_donated(src.donated());
    n->set_loc(loc_);
    n->set_origin(origin_);
    for (const NamedSubgraph& s : src.subgraphs()) {
      Graph* sub = n->add_subgraph(s.name);
      sub->set_functional(s.graph->functional());
      std::unordered_map<const Value*, Value*> inner;  // subgraphs are closed: a fresh scope
      for (Node* m : s.graph->nodes()) copy(*m, *sub, inner);
    }
    for (size_t i = 0; i < src.num_results(); ++i) values[src.result(i)] = n->result(i);
    return n;
  }

 private:
  Graph& g_;
  SourceLoc loc_;
  NodeOrigin origin_;
};

// Binds symbols of the replacement's inputs that g's ShapeEnv does not know to the args' exprs,
// so a replacement traced with its own symbols takes the matched shapes.
void bind_symbols(const Graph& g, SymExpr from, SymExpr to, std::unordered_map<SymExpr, SymExpr>& out) {
  if (from.is_null() || to.is_null() || from == to || !from.is_symbol()) return;
  if (g.shape_env().info(from) != nullptr) return;
  out.try_emplace(from, to);
}

}  // namespace

std::vector<Node*> replace_by_example(Graph& g, std::span<Node* const> matched, const Graph& replacement,
                                      std::span<Value* const> args, std::span<Value* const> replaced) {
  // ---- Validate everything before touching g, so a failure leaves it unchanged. ----
  if (matched.empty()) fail("no matched nodes");
  std::unordered_set<const Node*> mset;
  Node* last = nullptr;
  for (Node* n : matched) {
    if (n == nullptr) fail("a matched node is null");
    if (n->graph() != &g) fail("matched node " + n->describe() + " is not in graph @" + g.name());
    if (n->kind() != NodeKind::Call && n->kind() != NodeKind::Constant) {
      fail("matched node " + n->describe() + " is not a call or constant");
    }
    if (!mset.insert(n).second) fail("node " + n->describe() + " is matched twice");
    if (last == nullptr || g.comes_before(last, n)) last = n;
  }

  std::unordered_set<const Value*> rset;
  for (Value* v : replaced) {
    if (v == nullptr) fail("a replaced value is null");
    if (!mset.contains(v->node())) fail("replaced value " + describe_value(v) + " is not a result of a matched node");
    rset.insert(v);
  }
  for (Node* n : matched) {
    for (Value* r : n->results()) {
      for (Node* u : r->users()) {
        if (mset.contains(u)) continue;
        if (!rset.contains(r)) {
          fail("result " + describe_value(r) + " of matched node " + n->describe() + " is used by " + u->describe() +
               " outside the matched nodes but is not replaced");
        }
        if (u->graph() != &g || g.comes_before(u, last)) {
          fail("replaced value " + describe_value(r) + " is used by " + u->describe() +
               ", which comes before the insertion point " + last->describe());
        }
      }
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    Value* a = args[i];
    if (a == nullptr) fail("argument " + std::to_string(i) + " is null");
    if (mset.contains(a->node())) {
      fail("argument " + std::to_string(i) + " (" + describe_value(a) + ") is a result of a matched node");
    }
    if (a->node()->graph() != &g || !g.comes_before(a->node(), last)) {
      fail("argument " + std::to_string(i) + " (" + describe_value(a) + ") is not defined before the insertion point " +
           last->describe());
    }
  }

  if (&replacement == &g || replacement.root() == g.root()) fail("the replacement must be a separate graph");
  if (!replacement.params().empty()) fail("the replacement graph has params");
  std::vector<Node*> rinputs = replacement.inputs();
  if (rinputs.size() != args.size()) {
    fail("the replacement graph has " + std::to_string(rinputs.size()) + " inputs but " + std::to_string(args.size()) +
         " arguments are given");
  }
  for (size_t i = 0; i < rinputs.size(); ++i) {
    if (rinputs[i]->num_results() != 1) fail("replacement input " + rinputs[i]->describe() + " is malformed");
    const Value* in = rinputs[i]->result();
    if (!same_signature_type(in, args[i])) {
      fail("replacement input " + std::to_string(i) + " is " + type_text(in) + " but argument " + std::to_string(i) +
           " (" + describe_value(args[i]) + ") is " + type_text(args[i]));
    }
  }
  const Node* rout = replacement.output_node();
  if (rout == nullptr || rout != replacement.back()) fail("the replacement graph must end with its output node");
  if (!closed(replacement)) fail("the replacement graph uses a value before defining it");
  std::vector<Value*> routs;
  for (const Argument& a : rout->args()) {
    if (!a.is_value()) fail("replacement output " + describe_argument(a) + " is not a value");
    routs.push_back(a.value());
  }
  if (routs.size() != replaced.size()) {
    fail("the replacement graph has " + std::to_string(routs.size()) + " outputs but " +
         std::to_string(replaced.size()) + " values are replaced");
  }
  for (size_t i = 0; i < routs.size(); ++i) {
    if (!same_signature_type(routs[i], replaced[i])) {
      fail("replacement output " + std::to_string(i) + " is " + type_text(routs[i]) + " but replaced value " +
           describe_value(replaced[i]) + " is " + type_text(replaced[i]));
    }
  }
  for (Node* n : replacement.nodes()) {
    if (n->kind() == NodeKind::Output && n != rout) fail("the replacement graph has more than one output node");
  }

  // ---- Mutate. ----
  Copier copier(g, last->loc(), last->origin());
  std::unordered_map<const Value*, Value*> values;
  for (size_t i = 0; i < rinputs.size(); ++i) {
    const Value* in = rinputs[i]->result();
    values[in] = args[i];
    if (in->is_tensor() && in->has_meta() && args[i]->has_meta()) {
      const TensorMeta& rm = in->meta();
      const TensorMeta& am = args[i]->meta();
      if (rm.storage != nullptr && am.storage != nullptr) copier.storages.try_emplace(rm.storage, am.storage);
      for (size_t d = 0; d < rm.sizes.size() && d < am.sizes.size(); ++d) bind_symbols(g, rm.sizes[d], am.sizes[d], copier.symbols);
      for (size_t d = 0; d < rm.strides.size() && d < am.strides.size(); ++d) {
        bind_symbols(g, rm.strides[d], am.strides[d], copier.symbols);
      }
      bind_symbols(g, rm.offset, am.offset, copier.symbols);
    } else if (!in->is_tensor()) {
      bind_symbols(g, in->scalar_value(), args[i]->scalar_value(), copier.symbols);
    }
  }

  std::vector<Node*> inserted;
  Node* anchor = last;
  for (Node* n : replacement.nodes()) {
    if (n->kind() != NodeKind::Call && n->kind() != NodeKind::Constant) continue;
    Node* copy = copier.copy(*n, g, values);
    g.move_after(copy, anchor);
    anchor = copy;
    inserted.push_back(copy);
  }
  for (size_t i = 0; i < replaced.size(); ++i) {
    Value* now = values.at(routs[i]);
    // Views of the replaced value view its replacement.
    if (replaced[i]->is_tensor() && replaced[i]->has_meta() && now->is_tensor() && now->has_meta())
      retarget_storage(g, replaced[i]->meta().storage, now->meta().storage);
    replaced[i]->replace_all_uses_with(now);
  }

  std::vector<Node*> doomed(matched.begin(), matched.end());
  std::sort(doomed.begin(), doomed.end(), [&](Node* a, Node* b) { return g.comes_before(b, a); });
  for (Node* n : doomed) g.erase(n);
  return inserted;
}

}  // namespace toroid
