#pragma once

namespace toroid {
class Graph;

// Dead code elimination: erases calls and constants whose results are unused and that have no
// side effects (per op_info()), in the graph and in every subgraph. Inputs, params and the
// output are the graph's signature and stay.
void dce(Graph& g);
}  // namespace toroid
