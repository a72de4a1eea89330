// The verifier: structural checks and the seed 002 invariants.
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

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "toroid/support/error.h"

namespace toroid {

class Graph;
class Node;

struct Diagnostic {
  SourceLoc loc;        // the node's location if known
  std::string message;  // includes the node description when there is no location
};

struct Diagnostics {
  std::vector<Diagnostic> items;
  void error(const Node* where, std::string message);
  bool empty() const { return items.empty(); }
  // One "file:line:col: error: message" line per diagnostic.
  std::string str() const;
};

// Runs every check; returns the problems found (empty if none).
Diagnostics verify(const Graph& g);
// Throws UserError carrying every problem if there is one. `context` prefixes the message
// (e.g. "after pass 'cse'").
void verify_or_throw(const Graph& g, const std::string& context = {});

// Aliasing between graph outputs and inputs, by position: pairs (output index, input index)
// whose storages are the same, and pairs of outputs sharing a storage. Inputs include params.
struct AliasSnapshot {
  std::set<std::pair<size_t, size_t>> output_input;
  std::set<std::pair<size_t, size_t>> output_output;
};
AliasSnapshot alias_snapshot(const Graph& g);
// Reports aliasing present in `after` but not in `before`.
Diagnostics check_no_new_aliasing(const AliasSnapshot& before, const Graph& after,
                                  const std::string& pass_name);

}  // namespace toroid
