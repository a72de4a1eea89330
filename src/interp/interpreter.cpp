// The reference interpreter: walks a graph in order, calling each op's reference kernel, and
// checks every result against the node's meta.
#include "toroid/interp/interpreter.h"

#include <cstring>
#include <unordered_map>

#include "toroid/bind/binding.h"
#include "toroid/bind/inputs.h"
#include "toroid/ops/impl.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/registry.h"
#include "toroid/ops/user_kernel.h"

namespace toroid::interp {

using bind::bind_inputs;
using bind::eval_int;
using bind::exprs_str;
using bind::ints_str;
using bind::node_error;
using bind::node_what;
using ops::HostTensor;
using ops::RtValue;

namespace {

// One activation of a graph (the root, or one run of a subgraph). Storages map the meta's
// storage identity to the host storage that realizes it in this activation, for alias checks.
struct Frame {
  const Graph* graph;
  sym::Binding binding;
  std::unordered_map<const Value*, RtValue> env;
  std::unordered_map<const Storage*, std::pair<const ops::HostStorage*, const Value*>> storages;
  std::unordered_map<const ops::HostStorage*, const Value*> host_owner;
};

void flatten_into(const RtValue& v, std::vector<RtValue>& out) {
  if (v.kind() == RtValue::Kind::List) {
    for (const RtValue& e : v.list()) flatten_into(e, out);
  } else {
    out.push_back(v);
  }
}

// Truth of a cond/while predicate: a bool (or int) scalar, or a one-element tensor.
bool truth(const Node* n, const RtValue& v) {
  if (v.is_tensor()) {
    const HostTensor& t = v.tensor();
    if (t.numel() != 1)
      node_error(n, n->target() + ": the predicate must have one element, got " + t.describe());
    return t.get_double(0) != 0;
  }
  if (v.kind() == RtValue::Kind::Bool || v.kind() == RtValue::Kind::Int) return v.to_int() != 0;
  node_error(n, n->target() + ": the predicate must be a bool or a tensor");
}

}  // namespace

struct Interpreter::Impl {
  const Graph& graph;
  InterpreterOptions opts;
  uint64_t philox_offset = 0;
  sym::Binding last_binding;

  Impl(const Graph& g, InterpreterOptions o) : graph(g), opts(o) {}
  const ShapeEnv& env() const { return graph.shape_env(); }

  std::vector<RtValue> run_graph(const Graph& g, Frame& f);
  void run_node(const Node* n, Frame& f);
  void run_call(const Node* n, Frame& f);
  std::vector<RtValue> run_subgraph(const Node* owner, const char* name, const std::vector<RtValue>& operands,
                                    const Frame& parent);
  std::vector<RtValue> run_cond(const Node* n, Frame& f);
  std::vector<RtValue> run_while(const Node* n, Frame& f);
  RtValue to_rt(const Argument& a, const Frame& f, const Node* n) const;
  ops::ArgumentEvaluator evaluator(const Frame& f, const Node* n) const;
  void record(const Node* n, const std::vector<RtValue>& results, Frame& f, bool check_aliasing);
  void check_tensor(const Value* v, const HostTensor& t, Frame& f, bool check_aliasing);
  void check_scalar(const Value* v, const RtValue& x, Frame& f);
  void note_storage(const Value* v, const HostTensor& t, Frame& f);
};

Interpreter::Interpreter(const Graph& g, InterpreterOptions opts) : impl_(std::make_unique<Impl>(g, opts)) {}
Interpreter::~Interpreter() = default;
const sym::Binding& Interpreter::binding() const { return impl_->last_binding; }

std::vector<RtValue> Interpreter::run(const std::vector<RtValue>& inputs) {
  Frame f{&impl_->graph, bind_inputs(impl_->graph, inputs), {}, {}, {}};
  std::vector<const Value*> values = graph_inputs(impl_->graph);
  for (size_t i = 0; i < values.size(); ++i) {
    f.env[values[i]] = inputs[i];
    if (inputs[i].is_tensor()) impl_->note_storage(values[i], inputs[i].tensor(), f);
  }
  std::vector<RtValue> out = impl_->run_graph(impl_->graph, f);
  bind::check_bound_guards(impl_->env(), f.binding);
  impl_->last_binding = std::move(f.binding);
  return out;
}

std::vector<RtValue> interpret(const Graph& g, const std::vector<RtValue>& inputs, const InterpreterOptions& opts) {
  return Interpreter(g, opts).run(inputs);
}

void Interpreter::Impl::note_storage(const Value* v, const HostTensor& t, Frame& f) {
  if (!v->has_meta() || v->meta().storage == nullptr) return;
  f.storages.emplace(v->meta().storage, std::make_pair(t.storage().get(), v));
  f.host_owner.emplace(t.storage().get(), v);
}

// Runs the non-input nodes of `g` (inputs are already in f.env) and returns its outputs.
std::vector<RtValue> Interpreter::Impl::run_graph(const Graph& g, Frame& f) {
  std::vector<RtValue> outputs;
  for (Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Input || n->kind() == NodeKind::Param) {
      if (!f.env.count(n->result(0))) node_error(n, "no value for " + describe_input(n->result(0)));
      continue;
    }
    if (n->kind() == NodeKind::Output) {
      for (const Argument& a : n->args()) flatten_into(to_rt(a, f, n), outputs);
      continue;
    }
    run_node(n, f);
  }
  return outputs;
}

void Interpreter::Impl::run_node(const Node* n, Frame& f) {
  if (n->kind() == NodeKind::Constant) {
    const Value* v = n->result(0);
    if (!v->is_tensor()) {
      SymExpr e = v->scalar_value();
      RtValue x;
      if (!e.is_null()) {
        std::optional<sym::Scalar> s = env().evaluate(e, f.binding);
        if (!s) node_error(n, "cannot evaluate the constant " + e.str());
        x = s->type == sym::Type::Float ? RtValue::floating(s->f)
            : s->type == sym::Type::Bool ? RtValue::boolean(s->i != 0)
                                         : RtValue::integer(s->i);
      }
      f.env[v] = x;
      return;
    }
    const TensorMeta& m = v->meta();
    std::vector<int64_t> sizes;
    for (SymExpr s : m.sizes) {
      std::optional<int64_t> x = eval_int(env(), s, f.binding);
      if (!x) node_error(n, "constant " + describe_value(v) + " has a symbolic size " + s.str());
      sizes.push_back(*x);
    }
    HostTensor t = HostTensor::zeros(m.dtype, sizes);
    size_t nbytes = static_cast<size_t>(t.numel()) * static_cast<size_t>(t.element_size());
    if (n->constant_data().size() != nbytes)
      node_error(n, "constant " + describe_value(v) + " has " + std::to_string(n->constant_data().size()) +
                        " bytes of data but " + ops::describe_meta(m) + " needs " + std::to_string(nbytes));
    if (nbytes) std::memcpy(t.data(), n->constant_data().data(), nbytes);
    f.env[v] = t;
    note_storage(v, t, f);
    return;
  }
  if (n->kind() != NodeKind::Call) node_error(n, std::string("cannot interpret a ") + node_kind_name(n->kind()) + " node");
  if (n->target() == "higher_order.cond") return record(n, run_cond(n, f), f, false);
  if (n->target() == "higher_order.while_loop") return record(n, run_while(n, f), f, false);
  run_call(n, f);
}

ops::ArgumentEvaluator Interpreter::Impl::evaluator(const Frame& f, const Node* n) const {
  return {[this, &f, n](SymExpr e) -> std::optional<RtValue> {
            std::optional<sym::Scalar> s = env().evaluate(e, f.binding);
            if (!s) node_error(n, "cannot evaluate the argument " + e.str() + " (unbound symbols)");
            return ops::rt_scalar(*s);
          },
          [&f, n](const Value* v) -> std::optional<RtValue> {
            auto it = f.env.find(v);
            if (it == f.env.end()) node_error(n, describe_value(v) + " is used before it has a value");
            return it->second;
          }};
}

RtValue Interpreter::Impl::to_rt(const Argument& a, const Frame& f, const Node* n) const {
  return *ops::evaluate_argument(a, evaluator(f, n));
}

void Interpreter::Impl::run_call(const Node* n, Frame& f) {
  const ops::OpEntry* op = ops::OpRegistry::global().find(n->target());
  if (n->target() == ops::kUserKernelMutation || n->target() == ops::kUserKernelFunctional)
    node_error(n, "the reference interpreter does not run user kernels (" + n->target() + ")");
  if (op == nullptr) node_error(n, "unknown operator " + n->target());
  if (op->kernel == nullptr) node_error(n, "no reference kernel for " + n->target() + " yet");
  std::optional<ops::RtArgs> bound;
  try {
    bound = ops::evaluate_call_args(*op, *n, evaluator(f, n));
  } catch (const UserError& e) {
    if (e.loc().known()) throw;
    node_error(n, e.message());
  }
  const ops::RtArgs& args = *bound;
  ops::KernelContext ctx{opts.seed, &philox_offset};
  std::vector<RtValue> results;
  try {
    results = ops::run_kernel(*op, args, ctx);
  } catch (const UserError& e) {
    if (e.loc().known()) throw;
    node_error(n, e.message());
  }
  record(n, results, f, true);
}

// Binds unbacked symbols from the results, checks them against the metas, and stores them.
void Interpreter::Impl::record(const Node* n, const std::vector<RtValue>& results, Frame& f, bool check_aliasing) {
  if (results.size() != n->num_results())
    node_error(n, n->target() + " returned " + std::to_string(results.size()) + " values but the node has " +
                      std::to_string(n->num_results()) + " results");
  for (size_t i = 0; i < results.size(); ++i) {
    const Value* v = n->result(i);
    const RtValue& x = results[i];
    if (v->is_tensor()) {
      if (!x.is_tensor() || !x.tensor().defined())
        node_error(n, "result of " + node_what(v) + " is not a tensor but its meta says " +
                          ops::describe_meta(v->meta()));
      check_tensor(v, x.tensor(), f, check_aliasing);
    } else {
      check_scalar(v, x, f);
    }
    f.env[v] = x;
  }
}

void Interpreter::Impl::check_tensor(const Value* v, const HostTensor& t, Frame& f, bool check_aliasing) {
  const Node* n = v->node();
  const TensorMeta& m = v->meta();
  std::string what = "result of " + node_what(v);
  // Unbacked sizes (nonzero, unique) are bound here, before the other checks need them.
  if (t.dim() == m.rank()) {
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      SymExpr s = m.sizes[d];
      const sym::SymbolInfo* info = s.is_symbol() ? env().info(s) : nullptr;
      if (info != nullptr && info->unbacked && !f.binding.count(s)) {
        try {
          bind::bind_symbol(env(), f.binding, s, sym::Scalar{sym::Type::Int, t.sizes()[d], 0},
                              "size " + std::to_string(d) + " of the " + what, n->loc());
        } catch (const UserError& e) {
          if (e.loc().known()) throw;
          node_error(n, e.message());
        }
      }
    }
  }
  if (!opts.check_results) {
    note_storage(v, t, f);
    return;
  }
  if (t.dtype() != m.dtype)
    node_error(n, what + ": dtype " + dtype_short_name(t.dtype()) + " but meta says " + dtype_short_name(m.dtype));
  std::vector<int64_t> want;
  bool known = true;
  for (SymExpr s : m.sizes) {
    std::optional<int64_t> x = eval_int(env(), s, f.binding);
    known = known && x.has_value();
    want.push_back(x.value_or(-1));
  }
  bool symbolic = false;
  for (SymExpr s : m.sizes) symbolic = symbolic || s.has_symbols();
  std::string shown = known ? ints_str(want) + (symbolic ? " (" + exprs_str(m.sizes) + ")" : "") : exprs_str(m.sizes);
  if (!known || want != t.sizes())
    node_error(n, what + ": sizes " + ints_str(t.sizes()) + " but meta says " + shown);
  // Strides address nothing in a dim of size 1, or in a tensor with no elements.
  for (size_t d = 0; d < m.strides.size() && t.numel() > 0; ++d) {
    if (t.sizes()[d] <= 1) continue;
    std::optional<int64_t> x = eval_int(env(), m.strides[d], f.binding);
    if (x && *x != t.strides()[d])
      node_error(n, what + ": strides " + ints_str(t.strides()) + " but meta says " + exprs_str(m.strides) +
                        " (dim " + std::to_string(d) + ": " + std::to_string(t.strides()[d]) + " vs " +
                        std::to_string(*x) + ")");
  }
  if (check_aliasing && t.numel() > 0 && m.storage != nullptr) {
    auto it = f.storages.find(m.storage);
    if (it != f.storages.end()) {
      if (it->second.first != t.storage().get())
        node_error(n, what + ": meta says it shares storage with " + describe_value(it->second.second) +
                          " but the kernel returned a tensor with storage of its own");
    } else {
      auto owner = f.host_owner.find(t.storage().get());
      if (owner != f.host_owner.end())
        node_error(n, what + ": meta says it has storage of its own but the kernel returned a tensor sharing " +
                          describe_value(owner->second) + "'s storage");
    }
  }
  note_storage(v, t, f);
}

void Interpreter::Impl::check_scalar(const Value* v, const RtValue& x, Frame& f) {
  const Node* n = v->node();
  std::string what = "result of " + node_what(v);
  bool ok = v->type() == ValueType::Float ? x.is_number()
            : v->type() == ValueType::Bool ? (x.kind() == RtValue::Kind::Bool || x.kind() == RtValue::Kind::Int)
                                           : (x.kind() == RtValue::Kind::Int || x.kind() == RtValue::Kind::Bool);
  if (!ok) node_error(n, what + " is not " + (v->type() == ValueType::Int ? "an " : "a ") + value_type_name(v->type()));
  SymExpr e = v->scalar_value();
  if (e.is_null()) return;
  sym::Scalar got;
  if (v->type() == ValueType::Float) {
    got.type = sym::Type::Float;
    got.f = x.to_double();
  } else {
    got.type = v->type() == ValueType::Bool ? sym::Type::Bool : sym::Type::Int;
    got.i = x.to_int();
  }
  if (e.is_symbol() && !f.binding.count(e)) {
    try {
      bind::bind_symbol(env(), f.binding, e, got, "the " + what, n->loc());
    } catch (const UserError& err) {
      if (err.loc().known()) throw;
      node_error(n, err.message());
    }
    return;
  }
  if (!opts.check_results) return;
  std::optional<sym::Scalar> want = env().evaluate(e, f.binding);
  if (!want) return;
  bool same = got.type == sym::Type::Float ? (got.f == (want->type == sym::Type::Float ? want->f : double(want->i)) ||
                                              (got.f != got.f && want->f != want->f))
                                           : got.i == want->i;
  if (!same)
    node_error(n, what + ": value " + bind::scalar_str(got) + " but meta says " + e.str() + " = " +
                      bind::scalar_str(*want));
}

std::vector<RtValue> Interpreter::Impl::run_subgraph(const Node* owner, const char* name,
                                                     const std::vector<RtValue>& operands, const Frame& parent) {
  const Graph* g = owner->subgraph(name);
  if (g == nullptr) node_error(owner, owner->target() + " has no subgraph " + name);
  std::vector<const Value*> ins;
  for (Node* in : g->inputs()) ins.push_back(in->result(0));
  if (!g->params().empty()) node_error(owner, std::string("subgraph ") + name + " has params");
  if (ins.size() != operands.size())
    node_error(owner, std::string("subgraph ") + name + " takes " + std::to_string(ins.size()) + " inputs but " +
                          std::to_string(operands.size()) + " operands were given");
  Frame f{g, parent.binding, {}, {}, {}};
  try {
    bind::bind_values(env(), f.binding, ins, operands, true);
  } catch (const UserError& e) {
    node_error(owner, std::string("entering subgraph ") + name + ": " + e.message());
  }
  for (size_t i = 0; i < ins.size(); ++i) {
    f.env[ins[i]] = operands[i];
    if (operands[i].is_tensor()) note_storage(ins[i], operands[i].tensor(), f);
  }
  return run_graph(*g, f);
}

namespace {
// The operand values of a higher-order op from argument `first` on (lists flattened).
std::vector<RtValue> operands_from(const std::vector<RtValue>& args, size_t first) {
  std::vector<RtValue> out;
  for (size_t i = first; i < args.size(); ++i) flatten_into(args[i], out);
  return out;
}
}  // namespace

std::vector<RtValue> Interpreter::Impl::run_cond(const Node* n, Frame& f) {
  if (n->args().empty()) node_error(n, "higher_order.cond needs a predicate");
  std::vector<RtValue> args;
  for (const Argument& a : n->args()) args.push_back(to_rt(a, f, n));
  bool p = truth(n, args[0]);
  return run_subgraph(n, p ? "true_branch" : "false_branch", operands_from(args, 1), f);
}

std::vector<RtValue> Interpreter::Impl::run_while(const Node* n, Frame& f) {
  std::vector<RtValue> args;
  for (const Argument& a : n->args()) args.push_back(to_rt(a, f, n));
  std::vector<RtValue> operands = operands_from(args, 0);
  size_t carried = n->num_results();
  if (carried > operands.size()) node_error(n, "higher_order.while_loop has more results than operands");
  for (int64_t iter = 0;; ++iter) {
    std::vector<RtValue> c = run_subgraph(n, "cond_fn", operands, f);
    if (c.size() != 1) node_error(n, "cond_fn of higher_order.while_loop must return one value");
    if (!truth(n, c[0])) break;
    if (iter >= opts.max_loop_iterations)
      node_error(n, "higher_order.while_loop ran more than " + std::to_string(opts.max_loop_iterations) +
                        " iterations");
    std::vector<RtValue> next = run_subgraph(n, "body_fn", operands, f);
    if (next.size() != carried)
      node_error(n, "body_fn of higher_order.while_loop returned " + std::to_string(next.size()) + " values, expected " +
                        std::to_string(carried));
    for (size_t i = 0; i < carried; ++i) operands[i] = next[i];
  }
  operands.resize(carried);
  return operands;
}

}  // namespace toroid::interp
