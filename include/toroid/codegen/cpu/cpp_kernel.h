// The C++ kernel emitter: one `extern "C"` function per scheduled kernel, with OpenMP over the
// outer domain and `#pragma omp simd` inner loops. Sizes are read from the symbol array at run
// time, so one compiled kernel serves every size its guards allow.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "toroid/codegen/scalar.h"
#include "toroid/sched/schedule.h"

namespace toroid::codegen::cpu {

using codegen::CppKernel;

// The kernel's record (codegen/kernel.h): its arguments are the storages of `kernel`, by slot.
CppKernel emit_cpp_kernel(const sched::Kernel& kernel, const SymbolSlots& slots, const ShapeEnv& env);

// Includes and helpers every translation unit starts with, and its exported
// `extern "C" int64_t toroid_take_index_error(int64_t* size)`: the site (see CppKernel in codegen/kernel.h) of an out
// of range position since the last call, or 0, and that dim's size; clears it.
const std::string& cpp_prelude();
// The prelude's opening lines up to its last #include (the standard headers): what the kernel
// cache precompiles once per compiler and flags (runtime::CompileFlags::precompiled_prefix).
// Every source of wrapper::kernels_sources begins with it.
const std::string& cpp_prelude_headers();

// The kernel that runs scaled_dot_product_attention lines of `dtype` (f32, f64, bf16, f16; else
// none): `toroid_attention_<dtype>(bufs, params)`, its template (attention_kernel.h) guarded so
// that several dtypes share one translation unit. The executor builds its arguments.
std::optional<CppKernel> attention_kernel(DType dtype);
const std::string& cpp_attention_template();

// An index expression as C++ (int64 arithmetic, Python floor division and modulo).
std::string cpp_index(SymExpr e, const std::function<std::string(SymExpr)>& symbol_name);

}  // namespace toroid::codegen::cpu
