#pragma once

namespace toroid {
class Graph;

// Common subexpression elimination: merges a call (or constant) into an earlier identical one:
// same target, same arguments (values by identity, scalars by expression), same kwargs, and
// results of the same types and layouts. Calls with side effects, random calls and calls owning
// subgraphs are never merged. A merge that would make two distinct observable storages (graph
// inputs or outputs) one is skipped, since it would create new aliasing: for example
// two clones of an input that are both returned.
void cse(Graph& g);
}  // namespace toroid
