// Lowering: a verified, functional graph (after the compile pipeline's passes) to the loop IR.
#pragma once

#include <memory>

#include "toroid/graph/graph.h"
#include "toroid/loop/ir.h"

namespace toroid::loop {

// Every call becomes a pointwise body (inlined into its readers unless realized), a reduction,
// a view (index arithmetic), an extern library call, or a fallback to the op's reference kernel.
// item() reads, asserts and control flow (cond, while_loop: subgraphs lowered on their own) are
// host steps. Unsupported graphs (in-place ops other than a trailing copy_ into an input, scalar
// results of fallbacks) are UserErrors at the node.
struct LowerOptions {
  // What the program is for: its library calls (cuBLASLt on a GPU takes bf16 and f16 matmuls
  // too), where reference kernels run, and the split reductions' parallelism.
  Target target;
  // Run split_reductions (with the target's SplitOptions) at the end.
  bool split_reductions = true;
  // Run verify_program after lowering and after split_reductions (--verify-each).
  bool verify_each = false;
  // Calls with no generated code or library call run their op's reference kernel (on host copies
  // on a GPU). Off: such a call is an error located at its node, so that a frontend can run it
  // elsewhere (PyTorch eager) instead of slowly. Either way each one is logged (TOROID_LOG=fallback).
  bool reference_kernels = true;
  // Results must not vary between runs (torch.use_deterministic_algorithms): device kernels
  // whose order of accumulation varies (loop::order_varies) take their sorted form
  // (Buffer::deterministic).
  bool deterministic = false;
  // f32 convolutions and matmuls that run a library call on CUDA may use TF32 tensor cores
  // (LibraryParams::tf32); CPU libraries have no TF32.
  bool tf32_convolutions = false;
  bool tf32_matmuls = false;
  // A subgraph of cond or while_loop (lower_control.cpp): output i is stored in a buffer of its
  // own, laid out as output_layouts[i] (the owning node's result; null: as it is), which the
  // owner's executor can hand memory for.
  std::vector<const Value*> output_layouts;
};
std::unique_ptr<LoopProgram> lower(const Graph& g, const LowerOptions& options = {});

// Whether calls of `op` lower to generated code or a library call (a lowering rule, or a view of
// its input by its schema's alias annotations), rather than to a fallback to the reference
// kernel (which on a GPU runs on host copies of the operands).
bool has_lowering(const std::string& op);

// Simplifies every index of the computed buffers' bodies under the ranges of their own index
// variables (i<k> in [0, sizes[k]), r<k> in [0, reduction_sizes[k])). Run by lower() before
// split_reductions, whose clamped positions keep those ranges true.
void simplify_indices(LoopProgram& p);
// What the simplifier may assume of a body over `sizes` (and `reduction_sizes`): each i<k>
// (r<k>) in [0, size) where the size is at least 1, and the shape environment's facts.
sym::FactsFn loop_var_facts(const ShapeEnv& env, std::span<const SymExpr> sizes, std::span<const SymExpr> reduction_sizes = {});

// When a reduction's outputs are fewer than half of `parallelism` (the rows a target runs at
// once: GPU blocks or CPU threads) and it reduces at least 2 * min_chunk elements, it becomes
// a partial reduction over pieces of at least min_chunk elements (one output row per piece)
// and a final reduction over the pieces. Sum, prod, max, min, any, all and mean are split;
// var and arg reductions are not.
struct SplitOptions {
  int64_t parallelism = 256;
  int64_t min_chunk = 1024;
  // The same for a body with a gather (an indirect load): each element may miss the cache.
  int64_t min_chunk_indirect = 1024;
};
SplitOptions split_options_for(const LowerOptions& options);
void split_reductions(LoopProgram& p, const SplitOptions& options);

}  // namespace toroid::loop
