// The steps of binding, for the interpreter (which binds subgraph parameters and unbacked
// symbols as it runs): evaluating symbolic metas under a binding, binding symbols with range
// and guard checks, and messages.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/ops/rt_value.h"
#include "toroid/sym/shape_env.h"

namespace toroid::bind {

std::string ints_str(const std::vector<int64_t>& v);  // "[2, 3]"
std::string exprs_str(const std::vector<SymExpr>& v);  // "[s0, 3]"

// The value of an integer expression, or nullopt if a symbol is unbound.
std::optional<int64_t> eval_int(const ShapeEnv& env, SymExpr e, const sym::Binding& b);
// "s0*2 = 6 (s0 = 3)" for symbolic expressions, "6" for constants.
std::string explain(SymExpr e, int64_t value, const sym::Binding& b);
std::string scalar_str(const sym::Scalar& s);

// Binds `symbol` to `value` (found at `where`, for messages), checking its range and divisor,
// then checks every guard that this binding completes. UserError at `loc` on failure.
void bind_symbol(const ShapeEnv& env, sym::Binding& b, SymExpr symbol, sym::Scalar value, const std::string& where,
                 const SourceLoc& loc);
// Checks every guard whose symbols are all bound.
void check_bound_guards(const ShapeEnv& env, const sym::Binding& b, SymExpr only_mentioning = {});

// Binds and checks the values of Input (or Param) nodes: the shared step of bind_inputs and of
// entering a subgraph. With `rebind_unbacked`, a bare unbacked symbol already bound is re-bound
// (a loop body may see new sizes each iteration) instead of checked. Without `check_strides`,
// only dtypes, sizes and scalar values are checked (inputs not laid out yet).
void bind_values(const ShapeEnv& env, sym::Binding& b, const std::vector<const Value*>& values,
                 const std::vector<ops::RtValue>& inputs, bool rebind_unbacked, bool check_strides = true);
// bind_inputs without the stride checks.
sym::Binding bind_input_sizes(const Graph& g, const std::vector<ops::RtValue>& inputs);

// "where" description of a node for messages: "%y (aten.add.Tensor)".
std::string node_what(const Value* v);
// UserError at the node's location (or, when unknown, with the node described).
[[noreturn]] void node_error(const Node* n, const std::string& message);

}  // namespace toroid::bind
