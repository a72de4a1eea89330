// Creating call nodes through meta functions, and checking existing nodes against them.
//
// infer_meta runs an op's meta function on a call's arguments; build_call also inserts the node
// at the graph's insertion point. This is how passes and frontends create nodes, so every node's
// result metadata is what PyTorch would produce. check_node_meta is the verifier's re-derivation.
#pragma once

#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/verify.h"

namespace toroid::ops {

// The results of `op` called with these arguments. UserError (at `loc`) for an op without a
// schema or meta function ("no meta function for aten.xxx"), or for a bad call. May record
// guards in the graph's ShapeEnv and create storages and unbacked symbols.
std::vector<ResultSpec> infer_meta(Graph& g, const std::string& op, const std::vector<Argument>& args,
                                   const std::vector<Kwarg>& kwargs, SourceLoc loc = {});

// Infers the results and inserts the call at the insertion point.
Node* build_call(Graph& g, std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs = {});

// True if `op` has a meta function.
bool has_meta(const std::string& op);

// Re-derives a call's results with its meta function (a dry run: no guards, storages or symbols
// are recorded) and reports to `diags` every difference in type, dtype, device, sizes, strides,
// offset, scalar value and aliasing. Does nothing for ops without a meta function.
void check_node_meta(const Node& call, Diagnostics& diags);

// "f32[4, 3]", with "{strides=[...], offset=..., device=...}" where not the default.
std::string describe_meta(const TensorMeta& m);

}  // namespace toroid::ops
