// Builders shared by the graph-level unit tests.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"
#include "toroid/support/error.h"

namespace toroid::testing {

// The parser's error for `text` (as file "e.tir"), or "<no error>".
inline std::string error_of(std::string_view text) {
  try {
    parse_graph(text, "e.tir");
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

inline std::vector<SymExpr> dims(std::initializer_list<int64_t> ds) {
  std::vector<SymExpr> out;
  for (int64_t d : ds) out.push_back(SymExpr::integer(d));
  return out;
}

// A contiguous tensor meta in a fresh storage of `g` (or in `s`).
inline TensorMeta meta(Graph& g, std::vector<SymExpr> sizes, DType dt = DType::Float32, Storage* s = nullptr) {
  TensorMeta m;
  m.dtype = dt;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  m.storage = s ? s : g.new_storage();
  return m;
}

// How many calls of `op` the graph has.
inline size_t count_calls(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (Node* node : g.nodes())
    if (node->is_call() && node->target() == op) ++n;
  return n;
}

// A call whose one result is a 4-element tensor named `name`.
inline Node* call(Graph& g, const std::string& op, std::vector<Argument> args, const std::string& name,
                  Storage* storage = nullptr, std::vector<Kwarg> kwargs = {}, DType dt = DType::Float32) {
  return g.add_call(op, std::move(args), std::move(kwargs), {ResultSpec::tensor(meta(g, dims({4}), dt, storage), name)});
}

}  // namespace toroid::testing
