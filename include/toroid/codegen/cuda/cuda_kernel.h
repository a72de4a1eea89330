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

using codegen::CudaKernel;

CudaKernel emit_cuda_kernel(const sched::Kernel& kernel, const SymbolSlots& slots, const ShapeEnv& env);

// Combo kernels (cuda_combo.cpp). A part is a flat kernel that records no index error (the
// site numbers are the kernel's own). The combo holds the parts' definitions and one entry point
// per index type: parameters are the union of the parts' storages and symbols, then one block
// count per part; part j runs on the blocks after those of parts 0..j-1, as if alone on them.
bool combinable(const CudaKernel& k);
// The bytes of a combo's parameters: kept under 4 KiB, what every driver takes.
size_t combo_param_bytes(const std::vector<const CudaKernel*>& parts);
constexpr size_t kMaxComboParamBytes = 4000;
// `parts`: two or more combinable kernels, of storages no part writes that another reads.
CudaKernel combine_cuda_kernels(const std::vector<const CudaKernel*>& parts, const std::string& name);

// cuda_prelude and cuda_translation_unit: codegen/kernel.h (the executor compiles entry points
// on demand).

}  // namespace toroid::codegen::cuda
