// The .tir text format: a printer and a parser. print(parse(print(g))) == print(g).
// docs/tir.md is the reference for the syntax.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "toroid/graph/graph.h"

namespace toroid {

std::string print_graph(const Graph& g);

// Parses one graph. Errors are UserErrors located at "filename:line:col". Never crashes or
// hangs on any input (nesting depth and sizes are bounded).
std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename = "<input>");

}  // namespace toroid
