// Host steps and control flow: item() reads, asserts on unbacked values, cond and while_loop.
// None of them is a kernel: each becomes one step (a Scalar or Control buffer) that the
// Wrapper IR runs on the host, a cond's or loop's subgraphs lowered on their own.
#include <unordered_set>

#include "lowering.h"
#include "toroid/graph/inputs.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"

namespace toroid::loop {

bool is_assert(const std::string& op) {
  return op == "aten._assert_scalar.default" || op == "aten.sym_constrain_range.default" ||
         op == "aten.sym_constrain_range_for_size.default";
}

void lower_scalar_read(Lowering& L, const Node* n) {
  const Value* x = n->args().at(0).value();
  const Value* r = n->result(0);
  SymExpr value = r->scalar_value();
  if (value.is_null()) {
    if (!r->has_users()) return;  // read for nothing
    L.fail(n, "its " + std::string(value_type_name(r->type())) +
                  " result has no symbol to bind (only int and float item() values feed later code)");
  }
  std::unique_ptr<Buffer> b = L.new_step(n, BufferKind::Scalar);
  b->dtype = x->meta().dtype;
  b->device = x->meta().device;
  b->library_operands = {x};
  b->extern_inputs = {L.realize(x)};
  b->scalar = value;
  L.prog.add(std::move(b));
}

void lower_assert(Lowering& L, const Node* n) {
  const ops::OpEntry* op = ops::OpRegistry::global().find(n->target());
  if (op == nullptr) L.fail(n, "unknown operator");
  ops::BoundArgs args(op->schema, n->args(), n->kwargs());
  std::unique_ptr<Buffer> b = L.new_step(n, BufferKind::Scalar);
  if (n->target() == "aten._assert_scalar.default") {
    b->scalar = args.scalar("self");
    const Argument& msg = args.get("assert_msg");
    b->message = msg.kind() == Argument::Kind::String ? msg.str() : "assertion failed";
  } else {
    SymExpr size = args.scalar("size");
    if (!size) L.fail(n, "the constrained value has no known expression");
    SymExpr lo = args.scalar("min"), hi = args.scalar("max");
    bool for_size = n->target() == "aten.sym_constrain_range_for_size.default";
    if (!lo && for_size) lo = SymExpr::integer(0);
    std::vector<SymExpr> terms;
    if (lo) terms.push_back(sym::le(lo, size));
    if (hi) terms.push_back(sym::le(size, hi));
    if (terms.empty()) return;  // no bound: nothing to check
    b->scalar = terms.size() == 1 ? terms[0] : sym::logical_and(terms);
    b->message = size.str() + " must lie in [" + (lo ? lo.str() : "-inf") + ", " + (hi ? hi.str() : "inf") + "]";
  }
  if (b->scalar.is_null()) L.fail(n, "the asserted condition has no known expression");
  if (b->scalar.is_constant()) {
    if (b->scalar.bool_value()) return;  // proved when compiled
    L.fail(n, "the asserted condition is false: " + b->message);
  }
  L.prog.add(std::move(b));
}

namespace {

// The values of a higher-order op's arguments from `first` on, lists flattened.
std::vector<const Value*> operand_values(const Node* n, size_t first) {
  std::vector<const Value*> out;
  for (size_t i = first; i < n->args().size(); ++i) n->args()[i].for_each_value([&](const Value* v) { out.push_back(v); });
  return out;
}

bool same_layout(const ShapeEnv& env, const TensorMeta& a, const TensorMeta& b) {
  if (a.dtype != b.dtype || a.rank() != b.rank() || env.simplify(a.offset) != env.simplify(b.offset)) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    if (env.simplify(a.sizes[d]) != env.simplify(b.sizes[d])) return false;
    if (a.sizes[d].as_int() != std::optional<int64_t>(1) && env.simplify(a.strides[d]) != env.simplify(b.strides[d]))
      return false;
  }
  return true;
}

// Subgraph `name` lowered on its own; its outputs in buffers laid out as `layouts`.
std::shared_ptr<LoopProgram> lower_subgraph(Lowering& L, const Node* n, const char* name,
                                            const std::vector<const Value*>& operands,
                                            std::vector<const Value*> layouts) {
  const Graph* g = n->subgraph(name);
  if (g == nullptr) L.fail(n, std::string("no subgraph ") + name);
  std::vector<const Value*> ins = graph_inputs(*g);
  const ShapeEnv& env = L.graph.shape_env();
  for (size_t i = 0; i < ins.size() && i < operands.size(); ++i) {
    const Value* in = ins[i];
    const Value* op = operands[i];
    if (!in->is_tensor() || !op->is_tensor())
      L.fail(n, std::string("operand ") + std::to_string(i) + " of " + name + " is a scalar (" + describe_value(op) +
                    "); compiled control flow passes tensors");
    if (!same_layout(env, in->meta(), op->meta()))
      L.fail(n, std::string("input ") + std::to_string(i) + " of " + name + " is laid out as " +
                    ops::describe_meta(in->meta()) + " but its operand " + describe_value(op) + " is " +
                    ops::describe_meta(op->meta()));
  }
  LowerOptions o = L.options;
  o.output_layouts = std::move(layouts);
  return std::shared_ptr<LoopProgram>(lower(*g, o));
}

}  // namespace

void lower_control(Lowering& L, const Node* n) {
  bool is_cond = n->target() == "higher_order.cond";
  if (!is_cond && n->target() != "higher_order.while_loop")
    L.fail(n, "no compiled form of the higher-order op " + n->target());
  std::vector<const Value*> results;
  for (const Value* r : n->results()) {
    if (!r->is_tensor())
      L.fail(n, "its result " + describe_value(r) + " is a scalar; compiled control flow returns tensors");
    results.push_back(r);
  }
  if (results.empty()) L.fail(n, "it returns nothing, so it computes nothing");
  std::vector<const Value*> operands = operand_values(n, is_cond ? 1 : 0);
  std::vector<const Value*> shown;  // what the step reads: the predicate tensor, then the operands
  SymExpr predicate;
  if (is_cond) {
    const Argument& p = n->args().at(0);
    if (p.is_value() && p.value()->is_tensor()) {
      SymExpr numel = L.graph.shape_env().simplify(p.value()->meta().numel());
      if (numel.as_int() != std::optional<int64_t>(1))
        L.fail(n, "its predicate " + describe_value(p.value()) + " has " + numel.str() + " elements, not one");
      shown.push_back(p.value());
    } else {
      predicate = p.is_value() ? p.value()->scalar_value() : p.scalar();
      if (predicate.is_null()) L.fail(n, "its predicate has no known value");
    }
  }
  const ShapeEnv& env = L.graph.shape_env();
  std::vector<std::shared_ptr<LoopProgram>> subs;
  if (is_cond) {
    subs.push_back(lower_subgraph(L, n, "true_branch", operands, results));
    subs.push_back(lower_subgraph(L, n, "false_branch", operands, results));
  } else {
    // Carried values go around the loop in the results' memory: every iteration must see them
    // laid out as the first did.
    for (size_t i = 0; i < results.size(); ++i)
      if (i >= operands.size() || !same_layout(env, results[i]->meta(), operands[i]->meta()))
        L.fail(n, "carried value " + std::to_string(i) + " changes its layout around the loop (" +
                      (i < operands.size() ? ops::describe_meta(operands[i]->meta()) : std::string("missing")) + " to " +
                      ops::describe_meta(results[i]->meta()) + ")");
    subs.push_back(lower_subgraph(L, n, "cond_fn", operands, {}));
    subs.push_back(lower_subgraph(L, n, "body_fn", operands, results));
    const LoopProgram& c = *subs[0];
    if (c.outputs.size() != 1 || (c.outputs[0].value == nullptr && c.outputs[0].scalar.is_null()))
      L.fail(n, "cond_fn must return one bool value");
  }
  for (const Value* v : operands) shown.push_back(v);
  std::vector<Buffer*> reads;
  for (const Value* v : shown) reads.push_back(L.realize(v));
  bool first = true;
  for (const Value* r : results) {
    std::unique_ptr<Buffer> b = L.new_buffer(r, BufferKind::Control);
    b->node = n;
    b->result_index = r->index();
    if (first) {
      b->subprograms = subs;
      b->library_operands = shown;
      b->extern_inputs = reads;
      b->scalar = predicate;
    }
    first = false;
    L.define_buffer(r, std::move(b));
  }
}

}  // namespace toroid::loop
