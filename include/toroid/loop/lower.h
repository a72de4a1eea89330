// Lowering: a verified, functional graph (after the compile pipeline's passes) to the loop IR.
#pragma once

#include <memory>

#include "toroid/graph/graph.h"
#include "toroid/loop/ir.h"

namespace toroid::loop {

// Every call becomes a pointwise body (inlined into its readers unless realized), a reduction,
// a view (index arithmetic), an extern library call, or a fallback to the op's reference kernel.
// Unsupported graphs (control flow, in-place ops other than a trailing copy_ into an input,
// scalar results) are UserErrors at the node.
struct LowerOptions {
  // The kernels run on a GPU: bf16 and f16 matmuls are library calls (cuBLASLt) too.
  bool cuda = false;
};
std::unique_ptr<LoopProgram> lower(const Graph& g, const LowerOptions& options = {});

}  // namespace toroid::loop
