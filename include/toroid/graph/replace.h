// replace_by_example (Inductor's pattern replacement): replace a matched set of nodes by a copy of a replacement
// graph, and return the inserted nodes so the caller can attach metadata to them.
#pragma once

#include <span>
#include <vector>

namespace toroid {

class Graph;
class Node;
class Value;

// `replacement` is a graph whose inputs are bound, in order, to `args` (values of `g`) and whose
// outputs, in order, replace `replaced` (results of matched nodes). Its call nodes are copied into
// `g` (with their metas; storages of the replacement's inputs map to the args' storages, others
// get fresh storages) at the position of the last matched node; every use of `replaced` is then
// redirected and the matched nodes are erased.
//
// Preconditions (UserError if violated, graph unchanged): args are defined before the insertion
// point; the replacement's input and output counts and types match; no result of a matched node
// other than those in `replaced` is used outside the matched set; no user of `replaced` outside
// the set comes before the insertion point. Returns the inserted nodes in order.
std::vector<Node*> replace_by_example(Graph& g, std::span<Node* const> matched,
                                      const Graph& replacement, std::span<Value* const> args,
                                      std::span<Value* const> replaced);

}  // namespace toroid
