// The .tir text format: a printer and a parser. print(parse(print(g))) == print(g).
// docs/tir.md is the reference for the syntax.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "toroid/graph/graph.h"

namespace toroid {

std::string print_graph(const Graph& g);
// The names print_graph gives the values of `g`'s own scope (without the '%'): their names
// where valid and unique, else numbers.
std::unordered_map<const Value*, std::string> printed_value_names(const Graph& g);

// Parses one graph. Errors are UserErrors located at "filename:line:col". Never crashes or
// hangs on any input (nesting depth and sizes are bounded).
std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename = "<input>");

}  // namespace toroid
