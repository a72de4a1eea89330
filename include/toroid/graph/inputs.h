// A graph's inputs in calling order: what every caller (the interpreter, the compiled module,
// the C ABI, toroidc) passes values for.
#pragma once

#include <string>
#include <vector>

#include "toroid/graph/graph.h"

namespace toroid {

// The values a graph is called with, in order: its Input nodes, then its Param nodes.
std::vector<const Value*> graph_inputs(const Graph& g);
// "%x", or for a parameter its qualified name in quotes: "%w (param \"fc.weight\")".
std::string describe_input(const Value* v);

}  // namespace toroid
