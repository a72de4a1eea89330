// The graph passes of the compiler, in order: what a graph goes through before lowering.
#pragma once

#include <span>

#include "toroid/graph/target.h"
#include "toroid/passes/pass_manager.h"

namespace toroid {

// The passes run_compile_pipeline runs, in order (decompose, remove_noops, constant_fold, cse, dce);
// for CUDA, fuse_addmm_activation follows cse.
std::span<const PassInfo* const> compile_pipeline(const Target& target = Target::cpu());

// Runs them on `g` (with the manager's verify_each / print_after_all options). The result is a
// functional graph of lowerable ops (see decompose.h) with every result's meta kept right.
void run_compile_pipeline(Graph& g, const PassManagerOptions& options, const Target& target = Target::cpu());

}  // namespace toroid
