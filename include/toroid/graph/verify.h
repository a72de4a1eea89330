// The verifier: structural checks and the functional-graph invariants.
//
// Structural: every argument is a value defined earlier in the same graph (subgraphs are
// closed: they see only their own inputs), every result used exists, there is exactly one
// output node and it is last, tensor values have metas whose rank matches their strides,
// scalar/tensor types agree, subgraph signatures match their owner (cond branches take the
// operands and return the node's results), and every call passes the installed OpInfoProvider's
// check_call (schema checks, once schemas exist).
//
// Invariants: a graph marked functional mutates nothing except through a trailing copy_ into a
// graph input; and (checked across a pass) a pass creates no new aliasing between graph outputs
// and inputs, or between two outputs.
#pragma once

#include <functional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "toroid/support/error.h"

namespace toroid {

class Graph;
class Node;
class Value;

struct Diagnostic {
  SourceLoc loc;        // the node's location if known
  std::string message;  // includes the node description when there is no location
};

// Where a node has no known location, the diagnostic is located at "<graph @main>" (subgraphs:
// "<graph @main/true_branch>") and the message ends with "; in: <node description>".
struct Diagnostics {
  std::vector<Diagnostic> items;
  void error(const Node* where, std::string message);
  void error(const Graph& where, std::string message);  // graph-level problems
  bool empty() const { return items.empty(); }
  // One "file:line:col: error: message" line per diagnostic.
  std::string str() const;
};

// Runs every check; returns the problems found (empty if none). docs/verifier.md lists the
// messages.
Diagnostics verify(const Graph& g);
// Throws UserError carrying every problem if there is one. `context` prefixes the message
// (e.g. "after pass 'cse'").
void verify_or_throw(const Graph& g, const std::string& context = {});

// Per-operator checks of a node's subgraphs (which subgraphs it must have, and their signatures),
// keyed by operator name ("higher_order.cond"). Built in: higher_order.cond and
// higher_order.while_loop. Registering a name again replaces its checker. Every subgraph is also
// verified recursively whether or not its owner has a checker.
using SubgraphChecker = std::function<void(const Node& owner, Diagnostics& diags)>;
void register_subgraph_checker(const std::string& op, SubgraphChecker checker);
// Helpers for checkers. Each compares by count and type (dtype and rank for tensors) and reports
// at `owner`. `operands` / `results` are values of the owner's graph.
void check_subgraph_inputs(const Node& owner, const std::string& subgraph,
                           std::span<Value* const> operands, Diagnostics& diags);
void check_subgraph_outputs(const Node& owner, const std::string& subgraph,
                            std::span<Value* const> results, Diagnostics& diags);
// Requires the owner's subgraphs to be exactly `names` (in any order).
bool check_subgraph_names(const Node& owner, const std::vector<std::string>& names, Diagnostics& diags);

// Aliasing between graph outputs and inputs, by position: pairs (output index, input index)
// whose storages are the same, and pairs of outputs sharing a storage. Inputs are the Input and
// Param nodes in graph order; outputs are the output node's arguments in order (lists
// flattened; None and scalars keep their position but never alias).
struct AliasSnapshot {
  std::set<std::pair<size_t, size_t>> output_input;
  std::set<std::pair<size_t, size_t>> output_output;
};
AliasSnapshot alias_snapshot(const Graph& g);
// Reports aliasing present in `after` but not in `before`.
Diagnostics check_no_new_aliasing(const AliasSnapshot& before, const Graph& after,
                                  const std::string& pass_name);

}  // namespace toroid
