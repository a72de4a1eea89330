#include "toroid/passes/constant_fold.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/op_info.h"
#include "toroid/ops/impl.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

using ops::HostTensor;
using ops::RtValue;

std::optional<std::vector<int64_t>> static_sizes(const TensorMeta& m) {
  std::vector<int64_t> out;
  for (SymExpr s : m.sizes) {
    std::optional<int64_t> v = s.as_int();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::optional<RtValue> constant_scalar(SymExpr e) {
  if (e.is_null()) return std::nullopt;
  switch (e.kind()) {
    case sym::Kind::IntConst: return RtValue::integer(e.int_value());
    case sym::Kind::FloatConst: return RtValue::floating(e.float_value());
    case sym::Kind::BoolConst: return RtValue::boolean(e.bool_value());
    default: return std::nullopt;
  }
}

// The run-time value of a constant node's result; nullopt for anything else.
std::optional<RtValue> constant_value(const Value* v) {
  if (v->node()->kind() != NodeKind::Constant) return std::nullopt;
  if (!v->is_tensor()) return constant_scalar(v->scalar_value());
  const TensorMeta& m = v->meta();
  std::optional<std::vector<int64_t>> sizes = static_sizes(m);
  if (!sizes) return std::nullopt;
  HostTensor t = HostTensor::zeros(m.dtype, *sizes);
  size_t nbytes = static_cast<size_t>(t.numel()) * static_cast<size_t>(t.element_size());
  if (v->node()->constant_data().size() != nbytes) return std::nullopt;
  if (nbytes) std::memcpy(t.data(), v->node()->constant_data().data(), nbytes);
  return RtValue(t);
}

bool foldable_results(const Node& n) {
  if (n.num_results() == 0) return false;
  for (const Value* r : n.results()) {
    if (!r->is_tensor() || !r->has_meta()) return false;
    const TensorMeta& m = r->meta();
    std::optional<std::vector<int64_t>> sizes = static_sizes(m);
    if (!sizes || !m.is_contiguous() || m.offset != SymExpr::integer(0)) return false;
    int64_t numel = 1;
    for (int64_t s : *sizes)
      if (__builtin_mul_overflow(numel, s, &numel)) return false;  // hostile sizes: far too large anyway
    if (numel > kConstantFoldMaxElements) return false;
  }
  return true;
}

// The kernel's results, or nullopt when the call cannot be folded.
std::optional<std::vector<RtValue>> evaluate(const Node& n) {
  const ops::OpEntry* op = ops::OpRegistry::global().find(n.target());
  if (op == nullptr || op->kernel == nullptr) return std::nullopt;
  bool any_value = false;
  for (const Argument& a : n.args()) a.for_each_value([&](Value*) { any_value = true; });
  for (const Kwarg& k : n.kwargs()) k.value.for_each_value([&](Value*) { any_value = true; });
  if (!any_value) return std::nullopt;  // creation ops (full, arange) stay: lowering handles them
  std::optional<ops::RtArgs> args = ops::evaluate_call_args(*op, n, {constant_scalar, constant_value});
  if (!args) return std::nullopt;
  uint64_t philox_offset = 0;
  ops::KernelContext ctx{0, &philox_offset};
  return ops::run_kernel(*op, *args, ctx);
}

void fold_graph(Graph& g) {
  for (Node* n : g.nodes())
    for (const NamedSubgraph& s : n->subgraphs()) fold_graph(*s.graph);
  for (Node* n : g.node_list()) {
    if (!n->is_call() || !n->subgraphs().empty() || op_info().has_side_effects(*n) || !op_info().is_deterministic(*n))
      continue;
    if (!foldable_results(*n)) continue;
    std::optional<std::vector<RtValue>> results;
    try {
      results = evaluate(*n);
    } catch (const UserError& e) {
      // The call fails on these constants; leave it to fail where it would have.
      TOROID_LOG("passes", "constant_fold: keeping " + n->describe() + ": " + e.message());
      continue;
    }
    if (!results || results->size() != n->num_results()) continue;
    bool ok = true;
    for (size_t i = 0; i < results->size() && ok; ++i) {
      const RtValue& r = (*results)[i];
      const TensorMeta& m = n->result(i)->meta();
      ok = r.is_tensor() && r.tensor().defined() && r.tensor().dtype() == m.dtype &&
           static_sizes(m) == std::optional<std::vector<int64_t>>(r.tensor().sizes());
    }
    if (!ok) continue;
    TOROID_LOG("passes", "constant_fold: " + n->describe());
    g.set_insertion_point_before(n);
    for (size_t i = 0; i < results->size(); ++i) {
      HostTensor t = (*results)[i].tensor().clone();
      std::vector<uint8_t> bytes(static_cast<size_t>(t.numel()) * static_cast<size_t>(t.element_size()));
      if (!bytes.empty()) std::memcpy(bytes.data(), t.data(), bytes.size());
      TensorMeta m = n->result(i)->meta();
      m.storage = g.new_storage();
      Node* c = g.create_node(NodeKind::Constant, "", {}, {}, {ResultSpec::tensor(m, n->result(i)->name())});
      c->set_constant_data(std::move(bytes));
      c->set_loc(n->loc());
      c->set_origin(n->origin());
      n->result(i)->replace_all_uses_with(c->result());
    }
    g.set_insertion_point_to_end();
    g.erase(n);
  }
}

}  // namespace

void constant_fold(Graph& g) { fold_graph(g); }

}  // namespace toroid
