// The decomposition tables, one per family file; decompose.cpp joins them.
#pragma once

#include <vector>

#include "rewriter.h"

namespace toroid::passes {

// Builds the replacement of rw.node() and commits it; false leaves the node as it is (an
// argument the decomposition does not handle, or strides it cannot reproduce).
using DecompFn = bool (*)(Rewriter& rw);

struct Decomposition {
  const char* op;
  DecompFn fn;
};

std::vector<Decomposition> activation_decompositions();  // decompose_activation.cpp
std::vector<Decomposition> norm_decompositions();        // decompose_norm.cpp
std::vector<Decomposition> linalg_decompositions();      // decompose_linalg.cpp
std::vector<Decomposition> misc_decompositions();        // decompose_misc.cpp

}  // namespace toroid::passes
