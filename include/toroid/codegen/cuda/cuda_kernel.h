// The CUDA kernel emitter: the same scheduled kernels as the C++ emitter, as CUDA C++ for NVRTC.
//
// Two shapes of kernel:
// - Flat: a kernel of inner pointwise members only. Every thread takes groups of V consecutive
//   elements (V * element size = 16 bytes) in a grid-stride loop, with 16-byte loads and stores
//   for the accesses that are contiguous along the last dimension and aligned (checked at run
//   time, once per launch), and a scalar path and tail for the rest.
// - Rows: one block per row of the outer domain (grid-stride over rows). Members run in order;
//   consecutive inner members share one loop over the row (vectorized as above); reductions are
//   per-thread partials combined by warp shuffles and shared memory (Welford for var);
//   reduction and outer-level results stay in registers for the members after them.
//
// Each kernel is a template over its index type, instantiated as NAME_i32 (used when every
// position and size fits in 31 bits, which the executor checks per launch) and NAME_i64.
// Parameters: one pointer per storage in `args`, then one int64 per size symbol in `sym_slots`.
#pragma once

#include <string>
#include <vector>

#include "toroid/codegen/cpu/cpp_kernel.h"

namespace toroid::codegen::cuda {

struct CudaKernel {
  enum class Shape { Flat, Rows };
  std::string name;
  std::string source;              // the kernel's definitions and both entry points (after cuda_prelude())
  std::string definitions;         // the body template and its helpers
  std::string entry_i32, entry_i64;  // the entry points (entry_i32 empty when !has_i32)
  std::vector<loop::Buffer*> args;  // storage owners, the first parameters
  std::vector<size_t> sym_slots;   // then the symbols, by their place in the wrapper's syms
  std::vector<cpu::CppKernel::IndexSite> index_sites;
  Shape shape = Shape::Flat;
  SymExpr rows;      // Rows: rows of the outer domain
  SymExpr elements;  // Flat: the domain's elements; Rows: elements of one row
  int vector_width = 1;
  bool has_i32 = true;  // false when an index literal does not fit 32 bits
};

CudaKernel emit_cuda_kernel(const sched::Kernel& kernel, const cpu::SymbolSlots& slots, const ShapeEnv& env);

// Includes and helpers every kernel's translation unit starts with.
const std::string& cuda_prelude();

// A complete translation unit for one kernel: the prelude and its definitions.
std::string cuda_translation_unit(const CudaKernel& k);
// The same with only one entry point, NAME_i32 or NAME_i64: the 64-bit one is compiled only when
// a launch needs it (ptxas optimizes each instantiation, so two cost about twice one).
std::string cuda_translation_unit(const CudaKernel& k, bool i64);

}  // namespace toroid::codegen::cuda
