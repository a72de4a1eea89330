// The verifier: structure, metas, subgraph signatures, and the functional-graph invariants.
#include "toroid/graph/verify.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"

namespace toroid {

namespace {

constexpr const char* kCopyInto = "aten.copy_.default";

std::string graph_path(const Graph& g) {
  if (g.parent_node() == nullptr) return "@" + g.name();
  return graph_path(*g.parent_node()->graph()) + "/" + g.name();
}

SourceLoc graph_loc(const Graph& g) {
  SourceLoc loc;
  loc.file = "<graph " + graph_path(g) + ">";
  return loc;
}

// "f32[s0, 4]" or "int": the type as written in .tir, for signature messages.
std::string type_text(const Value* v) {
  if (!v->is_tensor()) return value_type_name(v->type());
  if (!v->has_meta()) return "tensor";
  const TensorMeta& m = v->meta();
  std::string out = std::string(dtype_short_name(m.dtype)) + "[";
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    if (i > 0) out += ", ";
    out += m.sizes[i].is_null() ? std::string("?") : m.sizes[i].str();
  }
  return out + "]";
}

// Same type for a signature: value type, and dtype and rank for tensors.
bool same_signature_type(const Value* a, const Value* b) {
  if (a->type() != b->type()) return false;
  if (!a->is_tensor() || !a->has_meta() || !b->has_meta()) return true;
  return a->meta().dtype == b->meta().dtype && a->meta().rank() == b->meta().rank();
}

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Values (top-level and in lists) of a run of arguments; non-value arguments are reported.
std::vector<Value*> operand_values(const Node& n, size_t first, Diagnostics& d) {
  std::vector<Value*> out;
  for (size_t i = first; i < n.args().size(); ++i) {
    const Argument& a = n.args()[i];
    if (a.is_value()) {
      out.push_back(a.value());
    } else if (a.is_list() && std::all_of(a.list().begin(), a.list().end(), [](const Argument& e) { return e.is_value(); })) {
      for (const Argument& e : a.list()) out.push_back(e.value());
    } else {
      d.error(&n, "operand " + std::to_string(i) + " of " + n.target() + " must be a value or a list of values, got " +
                      describe_argument(a));
    }
  }
  return out;
}

void check_cond(const Node& n, Diagnostics& d) {
  if (n.args().empty()) {
    d.error(&n, "higher_order.cond needs a predicate argument");
    return;
  }
  const Argument& pred = n.args()[0];
  bool pred_ok = (pred.is_value() && pred.value() != nullptr &&
                  (pred.value()->type() == ValueType::Bool || pred.value()->is_tensor())) ||
                 (pred.is_scalar() && !pred.scalar().is_null() && pred.scalar().is_bool());
  if (!pred_ok) {
    std::string got = describe_argument(pred);
    if (pred.is_value() && pred.value() != nullptr) got += " (" + type_text(pred.value()) + ")";
    d.error(&n, "predicate of higher_order.cond must be a bool scalar or a tensor, got " + got);
  }
  std::vector<Value*> operands = operand_values(n, 1, d);
  std::vector<Value*> results = n.results();
  check_subgraph_names(n, {"true_branch", "false_branch"}, d);
  for (const char* branch : {"true_branch", "false_branch"}) {
    if (n.subgraph(branch) == nullptr) continue;
    check_subgraph_inputs(n, branch, operands, d);
    check_subgraph_outputs(n, branch, results, d);
  }
}

void check_while_loop(const Node& n, Diagnostics& d) {
  std::vector<Value*> operands = operand_values(n, 0, d);
  check_subgraph_names(n, {"cond_fn", "body_fn"}, d);
  if (n.subgraph("cond_fn") != nullptr) {
    check_subgraph_inputs(n, "cond_fn", operands, d);
    const Node* out = n.subgraph("cond_fn")->output_node();
    if (out != nullptr) {
      bool ok = out->args().size() == 1 && out->args()[0].is_value() && out->args()[0].value() != nullptr &&
                (out->args()[0].value()->type() == ValueType::Bool || out->args()[0].value()->is_tensor());
      if (!ok) d.error(&n, "subgraph cond_fn of higher_order.while_loop must return one bool scalar or tensor");
    }
  }
  if (n.subgraph("body_fn") != nullptr) check_subgraph_outputs(n, "body_fn", n.results(), d);
  // The results are the final carried values: the leading operands.
  if (n.num_results() > operands.size()) {
    d.error(&n, "higher_order.while_loop has " + plural(n.num_results(), "result") + " but only " +
                    plural(operands.size(), "operand"));
    return;
  }
  for (size_t i = 0; i < n.num_results(); ++i) {
    if (!same_signature_type(n.result(i), operands[i])) {
      d.error(&n, "result " + std::to_string(i) + " of higher_order.while_loop (" + describe_value(n.result(i)) +
                      ") is " + type_text(n.result(i)) + " but carried operand " + std::to_string(i) + " (" +
                      describe_value(operands[i]) + ") is " + type_text(operands[i]));
    }
  }
}

std::map<std::string, SubgraphChecker>& checkers() {
  static std::map<std::string, SubgraphChecker> table = {
      {"higher_order.cond", check_cond},
      {"higher_order.while_loop", check_while_loop},
  };
  return table;
}

const Storage* storage_of(const Value* v);

class Verifier {
 public:
  Verifier(const Graph& g, Diagnostics& d) : d_(d) {
    collect(*g.root());
    find_broken();
    for (const Storage* s : g.storages()) storages_.insert(s);
  }

  void verify_graph(const Graph& g, bool functional) {
    check_output_placement(g);
    std::unordered_set<const Value*> defined;
    for (Node* n : g.nodes()) {
      check_node_shape(*n);
      check_uses(g, *n, defined);
      if (broken_.contains(n)) {
        // It names a destroyed value: anything else could touch it.
        for (Value* r : n->results()) defined.insert(r);
        continue;
      }
      for (Value* r : n->results()) check_value(*n, r);
      if (n->is_call()) op_info().check_call(*n, d_);
      for (const NamedSubgraph& s : n->subgraphs()) {
        if (s.graph == nullptr) {
          err(n, "subgraph " + s.name + " of " + n->target() + " is null");
          continue;
        }
        if (s.graph->parent_node() != n) err(n, "subgraph " + s.name + " does not name " + n->target() + " as its owner");
        verify_graph(*s.graph, functional || s.graph->functional());
      }
      if (n->is_call()) {
        auto it = checkers().find(n->target());
        if (it != checkers().end()) it->second(*n, d_);
      }
      for (Value* r : n->results()) defined.insert(r);
    }
    if (functional) check_functional(g);
    check_donated(g);
  }

 private:
  // Like Diagnostics::error, but safe for nodes whose arguments dangle.
  void err(const Node* n, std::string message) {
    if (n == nullptr || !broken_.contains(n)) {
      d_.error(n, std::move(message));
      return;
    }
    Diagnostic d;
    if (n->loc().known()) {
      d.loc = n->loc();
    } else {
      d.loc = graph_loc(*n->graph());
      message += "; in: " + safe_describe(n);
    }
    d.message = std::move(message);
    d_.items.push_back(std::move(d));
  }

  std::string safe_describe(const Node* n) const {
    if (!broken_.contains(n)) return n->describe();
    return n->describe([this](const Value* v) { return values_.contains(v); });
  }

  void find_broken() {
    for (const Node* n : nodes_) {
      for (Value* v : n->inputs()) {
        if (v != nullptr && !values_.contains(v)) broken_.insert(n);
      }
    }
  }

  void collect(const Graph& g) {
    for (Node* n : g.nodes()) {
      nodes_.insert(n);
      for (Value* r : n->results()) values_.insert(r);
      for (const NamedSubgraph& s : n->subgraphs()) {
        if (s.graph != nullptr) collect(*s.graph);
      }
    }
  }

  void check_output_placement(const Graph& g) {
    const Node* first_output = nullptr;
    for (Node* n : g.nodes()) {
      if (n->kind() != NodeKind::Output) continue;
      if (first_output == nullptr) first_output = n;
      else err(n, "graph " + graph_path(g) + " has more than one output node");
    }
    if (first_output == nullptr) {
      d_.error(g, "graph " + graph_path(g) + " has no output node");
    } else if (first_output->next() != nullptr && first_output->next()->kind() != NodeKind::Output) {
      err(first_output->next(), "node after the output node of graph " + graph_path(g) +
                                         " (the output must be last)");
    }
  }

  void check_node_shape(const Node& n) {
    switch (n.kind()) {
      case NodeKind::Input:
      case NodeKind::Param:
      case NodeKind::Constant:
        if (!n.args().empty() || !n.kwargs().empty()) {
          err(&n, std::string(node_kind_name(n.kind())) + " node must have no arguments");
        }
        if (n.num_results() != 1) {
          err(&n, std::string(node_kind_name(n.kind())) + " node must have exactly one result, has " +
                           std::to_string(n.num_results()));
        } else if (n.kind() == NodeKind::Param && !n.result()->is_tensor()) {
          err(&n, "param " + describe_value(n.result()) + " must be a tensor");
        }
        if (n.kind() == NodeKind::Constant) check_constant_data(n);
        break;
      case NodeKind::Call:
        if (n.target().empty()) err(&n, "call node has no operator name");
        break;
      case NodeKind::Output:
        if (n.num_results() != 0) err(&n, "output node must have no results");
        if (!n.kwargs().empty()) err(&n, "output node must have no keyword arguments");
        break;
    }
    if (n.kind() != NodeKind::Call && !n.subgraphs().empty()) {
      err(&n, std::string(node_kind_name(n.kind())) + " node must not own subgraphs");
    }
  }

  void check_constant_data(const Node& n) {
    if (n.num_results() != 1 || !n.result()->is_tensor() || !n.result()->has_meta()) return;
    const TensorMeta& m = n.result()->meta();
    int64_t numel = 1;
    for (const SymExpr& s : m.sizes) {
      std::optional<int64_t> v = s.is_null() ? std::nullopt : s.as_int();
      if (!v || *v < 0 || (numel != 0 && *v > (int64_t{1} << 40) / std::max<int64_t>(numel, 1))) return;
      numel *= *v;
    }
    auto expected = static_cast<uint64_t>(numel) * static_cast<uint64_t>(dtype_size(m.dtype));
    if (n.constant_data().size() != expected) {
      err(&n, "constant " + describe_value(n.result()) + " has " + std::to_string(n.constant_data().size()) +
                       " bytes of data, expected " + std::to_string(expected) + " for " + type_text(n.result()));
    }
  }

  void check_uses(const Graph& g, const Node& n, const std::unordered_set<const Value*>& defined) {
    std::unordered_map<const Value*, size_t> counts;
    for (Value* v : n.inputs()) {
      if (v == nullptr) {
        err(&n, "argument is a null value");
        continue;
      }
      if (!values_.contains(v)) {
        // Never dereference it: the node that defined it is gone.
        err(&n, "uses a value that is not defined by any live node (was its node erased?)");
        continue;
      }
      ++counts[v];
      if (defined.contains(v)) continue;
      if (v->node()->graph() == &g) {
        err(&n, "value " + describe_value(v) + " is used before it is defined");
      } else {
        err(&n, "value " + describe_value(v) + " of graph " + graph_path(*v->node()->graph()) +
                         " is used in graph " + graph_path(g) + " (subgraphs are closed)");
      }
    }
    for (const auto& [v, count] : counts) {
      size_t listed = static_cast<size_t>(std::count(v->users().begin(), v->users().end(), &n));
      if (listed != count) {
        err(&n, "use list of " + describe_value(v) + " is out of date: it lists this node " +
                         std::to_string(listed) + " time(s), the node uses it " + std::to_string(count));
      }
    }
    for (Value* r : n.results()) {
      for (Node* u : r->users()) {
        if (!nodes_.contains(u)) {
          err(&n, "use list of " + describe_value(r) + " names a node that no longer exists");
        } else if (broken_.contains(u)) {
          continue;
        } else if (!inputs_of(u).contains(r)) {
          err(&n, "use list of " + describe_value(r) + " names " + u->describe() + ", which does not use it");
        }
      }
    }
  }

  void check_value(const Node& n, const Value* v) {
    if (v->node() != &n || n.result(v->index()) != v) {
      err(&n, "result " + describe_value(v) + " does not point back to its node");
    }
    std::string what = describe_value(v);
    if (!v->is_tensor()) {
      if (v->has_meta()) err(&n, std::string(value_type_name(v->type())) + " value " + what + " has a tensor meta");
      SymExpr e = v->scalar_value();
      if (!e.is_null()) {
        bool ok = (v->type() == ValueType::Int && e.is_int()) || (v->type() == ValueType::Float && e.is_float()) ||
                  (v->type() == ValueType::Bool && e.is_bool());
        if (!ok) {
          err(&n, std::string(value_type_name(v->type())) + " value " + what + " has a value of another type (" +
                           e.str() + ")");
        }
      }
      return;
    }
    if (!v->has_meta()) {
      err(&n, "tensor value " + what + " has no meta");
      return;
    }
    const TensorMeta& m = v->meta();
    if (m.sizes.size() != m.strides.size()) {
      err(&n, "tensor value " + what + " has " + plural(m.sizes.size(), "size") + " but " +
                       plural(m.strides.size(), "stride"));
    }
    auto check_exprs = [&](const std::vector<SymExpr>& es, const char* kind) {
      for (size_t i = 0; i < es.size(); ++i) {
        if (es[i].is_null() || !es[i].is_int()) {
          err(&n, std::string(kind) + " " + std::to_string(i) + " of " + what + " is not an integer expression");
        } else if (std::optional<int64_t> c = es[i].as_int(); c && *c < 0) {
          err(&n, std::string(kind) + " " + std::to_string(i) + " of " + what + " is " + std::to_string(*c) +
                      " (sizes and strides are never negative)");
        }
      }
    };
    check_exprs(m.sizes, "size");
    check_exprs(m.strides, "stride");
    if (m.offset.is_null() || !m.offset.is_int()) err(&n, "storage offset of " + what + " is not an integer expression");
    else if (std::optional<int64_t> c = m.offset.as_int(); c && *c < 0)
      err(&n, "storage offset of " + what + " is " + std::to_string(*c) + " (offsets are never negative)");
    if (m.storage == nullptr) {
      err(&n, "tensor value " + what + " has no storage");
    } else if (!storages_.contains(m.storage)) {
      err(&n, "tensor value " + what + " has a storage that its root graph does not own");
    }
  }

  // `input donated`: a tensor input of the root graph that no node writes (its caller gives up
  // the memory, so a write would be lost; the program reuses the memory after the last read).
  void check_donated(const Graph& g) {
    std::unordered_map<const Storage*, const Node*> donated;
    for (Node* n : g.nodes()) {
      if (!n->donated()) continue;
      if (n->kind() != NodeKind::Input || g.parent_node() != nullptr)
        err(n, "only an input of the root graph can be donated");
      else if (n->num_results() != 1 || !n->result()->is_tensor())
        err(n, "a donated input must be a tensor");
      else if (const Storage* st = storage_of(n->result()))
        donated.emplace(st, n);
    }
    if (donated.empty()) return;
    auto check_write = [&](const Node* n, const Argument* a) {
      if (a == nullptr || !a->is_value() || a->value() == nullptr || !values_.contains(a->value())) return;
      auto it = donated.find(storage_of(a->value()));
      if (it == donated.end()) return;
      err(n, n->target() + " writes donated input " + describe_value(it->second->result()) +
                 " (a caller that gives up an input's memory never reads it again: drop 'donated' or the write)");
    };
    for (Node* n : g.nodes()) {
      if (!n->is_call() || broken_.contains(n)) continue;
      for (size_t a : op_info().mutated_args(*n))
        if (a < n->args().size()) check_write(n, &n->args()[a]);
      for (const std::string& k : op_info().mutated_kwargs(*n)) check_write(n, n->kwarg(k));
    }
  }

  // A functional graph: no mutation except a trailing copy_ epilogue into graph inputs (root
  // graph only; a subgraph of a functional graph may not mutate at all).
  void check_functional(const Graph& g) {
    bool root = g.parent_node() == nullptr;
    std::vector<Node*> nodes = g.node_list();
    // Index of the last node that may not follow an epilogue copy_.
    size_t last_body = 0;
    bool any_body = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node* n = nodes[i];
      bool epilogue = (n->is_call() && n->target() == kCopyInto) || n->kind() == NodeKind::Output;
      if (!epilogue) {
        last_body = i;
        any_body = true;
      }
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node* n = nodes[i];
      if (!n->is_call() || broken_.contains(n)) continue;
      if (root && n->target() == kCopyInto && !n->args().empty()) {
        const Argument& dst = n->args()[0];
        bool into_input = dst.is_value() && dst.value() != nullptr && values_.contains(dst.value()) &&
                          dst.value()->node()->graph() == &g &&
                          (dst.value()->node()->kind() == NodeKind::Input ||
                           dst.value()->node()->kind() == NodeKind::Param);
        if (!into_input) {
          err(n, "graph marked functional mutates " + describe_argument(dst) + " in " + n->target() +
                          " (only a trailing copy_ into a graph input is allowed)");
        } else if (any_body && i < last_body) {
          err(n, "copy_ into graph input " + describe_argument(dst) +
                          " must be in the trailing epilogue, but " + safe_describe(nodes[last_body]) + " follows it");
        }
        continue;
      }
      for (size_t a : op_info().mutated_args(*n)) {
        if (a < n->args().size()) {
          err(n, "graph marked functional mutates " + describe_argument(n->args()[a]) + " in " + n->target());
        }
      }
      for (const std::string& k : op_info().mutated_kwargs(*n)) {
        const Argument* v = n->kwarg(k);
        err(n, "graph marked functional mutates " + (v ? describe_argument(*v) : k) + " in " + n->target() +
                        " (" + k + "=)");
      }
    }
  }

  Diagnostics& d_;
  std::unordered_set<const Node*> nodes_;
  std::unordered_set<const Value*> values_;
  std::unordered_set<const Storage*> storages_;
  std::unordered_set<const Node*> broken_;  // nodes with an argument that is not a live value
  // Each user's inputs as a set, built once: the output node of a graph with n outputs is a
  // user of n values, and re-listing its inputs for each made verification quadratic.
  std::unordered_map<const Node*, std::unordered_set<const Value*>> input_sets_;
  const std::unordered_set<const Value*>& inputs_of(const Node* u) {
    auto [it, fresh] = input_sets_.try_emplace(u);
    if (fresh)
      for (const Value* v : u->inputs()) it->second.insert(v);
    return it->second;
  }
};

// Flattened output arguments (lists expanded), by position.
std::vector<const Argument*> flat_outputs(const Graph& g) {
  std::vector<const Argument*> out;
  const Node* o = g.output_node();
  if (o == nullptr) return out;
  std::function<void(const Argument&)> add = [&](const Argument& a) {
    if (a.is_list()) {
      for (const Argument& e : a.list()) add(e);
    } else {
      out.push_back(&a);
    }
  };
  for (const Argument& a : o->args()) add(a);
  return out;
}

const Storage* storage_of(const Value* v) {
  if (v == nullptr || !v->is_tensor() || !v->has_meta()) return nullptr;
  return v->meta().storage;
}

}  // namespace

// ---- Diagnostics ----

void Diagnostics::error(const Node* where, std::string message) {
  Diagnostic d;
  if (where != nullptr && where->loc().known()) {
    d.loc = where->loc();
  } else if (where != nullptr) {
    d.loc = graph_loc(*where->graph());
    message += "; in: " + where->describe();
  }
  d.message = std::move(message);
  items.push_back(std::move(d));
}

void Diagnostics::error(const Graph& where, std::string message) {
  items.push_back(Diagnostic{graph_loc(where), std::move(message)});
}

std::string Diagnostics::str() const {
  std::string out;
  for (const Diagnostic& d : items) {
    if (!out.empty()) out += "\n";
    out += format_diagnostic(d.loc, d.message);
  }
  return out;
}

// ---- subgraph checker helpers ----

void register_subgraph_checker(const std::string& op, SubgraphChecker checker) {
  checkers()[op] = std::move(checker);
}

bool check_subgraph_names(const Node& owner, const std::vector<std::string>& names, Diagnostics& diags) {
  std::vector<std::string> want = names;
  std::vector<std::string> have;
  for (const NamedSubgraph& s : owner.subgraphs()) have.push_back(s.name);
  std::vector<std::string> sorted_have = have;
  std::sort(want.begin(), want.end());
  std::sort(sorted_have.begin(), sorted_have.end());
  if (want == sorted_have) return true;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  diags.error(&owner, owner.target() + " must have subgraphs " + join(names) + " (has " + join(have) + ")");
  return false;
}

void check_subgraph_inputs(const Node& owner, const std::string& subgraph, std::span<Value* const> operands,
                           Diagnostics& diags) {
  const Graph* sub = owner.subgraph(subgraph);
  if (sub == nullptr) return;
  std::vector<Node*> inputs = sub->inputs();
  if (inputs.size() != operands.size()) {
    diags.error(&owner, "subgraph " + subgraph + " has " + plural(inputs.size(), "input") + " but " + owner.target() +
                            " passes " + plural(operands.size(), "operand"));
    return;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->num_results() != 1 || operands[i] == nullptr) continue;
    const Value* in = inputs[i]->result();
    if (!same_signature_type(in, operands[i])) {
      diags.error(&owner, "input " + std::to_string(i) + " of subgraph " + subgraph + " is " + type_text(in) +
                              " but " + owner.target() + " passes " + describe_value(operands[i]) + " : " +
                              type_text(operands[i]));
    }
  }
}

void check_subgraph_outputs(const Node& owner, const std::string& subgraph, std::span<Value* const> results,
                            Diagnostics& diags) {
  const Graph* sub = owner.subgraph(subgraph);
  if (sub == nullptr || sub->output_node() == nullptr) return;  // a missing output is reported anyway
  std::vector<const Argument*> outs = flat_outputs(*sub);
  if (outs.size() != results.size()) {
    diags.error(&owner, "subgraph " + subgraph + " returns " + plural(outs.size(), "value") + " but " +
                            owner.target() + " has " + plural(results.size(), "result"));
    return;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i]->is_value() || outs[i]->value() == nullptr) {
      diags.error(&owner, "output " + std::to_string(i) + " of subgraph " + subgraph + " is " +
                              describe_argument(*outs[i]) + ", expected a value");
      continue;
    }
    const Value* out = outs[i]->value();
    if (!same_signature_type(out, results[i])) {
      diags.error(&owner, "output " + std::to_string(i) + " of subgraph " + subgraph + " is " + type_text(out) +
                              " but result " + std::to_string(i) + " of " + owner.target() + " (" +
                              describe_value(results[i]) + ") is " + type_text(results[i]));
    }
  }
}

// ---- entry points ----

Diagnostics verify(const Graph& g) {
  Diagnostics d;
  Verifier v(g, d);
  v.verify_graph(g, g.functional());
  return d;
}

void verify_or_throw(const Graph& g, const std::string& context) {
  Diagnostics d = verify(g);
  if (d.empty()) return;
  std::string text;
  for (const Diagnostic& item : d.items) {
    if (!text.empty()) text += "\n";
    text += format_diagnostic(item.loc, context.empty() ? item.message : context + ": " + item.message);
  }
  user_error_preformatted(std::move(text));
}

AliasSnapshot alias_snapshot(const Graph& g) {
  AliasSnapshot snap;
  std::vector<const Storage*> inputs;
  for (Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Input || n->kind() == NodeKind::Param) {
      inputs.push_back(n->num_results() == 1 ? storage_of(n->result()) : nullptr);
    }
  }
  std::vector<const Storage*> outputs;
  for (const Argument* a : flat_outputs(g)) outputs.push_back(a->is_value() ? storage_of(a->value()) : nullptr);
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o] == nullptr) continue;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == outputs[o]) snap.output_input.insert({o, i});
    }
    for (size_t p = o + 1; p < outputs.size(); ++p) {
      if (outputs[p] == outputs[o]) snap.output_output.insert({o, p});
    }
  }
  return snap;
}

Diagnostics check_no_new_aliasing(const AliasSnapshot& before, const Graph& after, const std::string& pass_name) {
  Diagnostics d;
  AliasSnapshot now = alias_snapshot(after);
  std::vector<Node*> inputs;
  for (Node* n : after.nodes()) {
    if (n->kind() == NodeKind::Input || n->kind() == NodeKind::Param) inputs.push_back(n);
  }
  std::vector<const Argument*> outputs = flat_outputs(after);
  const Node* out = after.output_node();
  auto report = [&](std::string message) {
    if (out != nullptr) d.error(out, std::move(message));
    else d.error(after, std::move(message));
  };
  for (const auto& [o, i] : now.output_input) {
    if (before.output_input.contains({o, i})) continue;
    report("pass '" + pass_name + "' made output " + std::to_string(o) + " alias input " + std::to_string(i) + " (" +
           describe_value(inputs[i]->result()) + ")");
  }
  for (const auto& [o, p] : now.output_output) {
    if (before.output_output.contains({o, p})) continue;
    report("pass '" + pass_name + "' made output " + std::to_string(p) + " alias output " + std::to_string(o) + " (" +
           describe_argument(*outputs[o]) + ")");
  }
  return d;
}

}  // namespace toroid
