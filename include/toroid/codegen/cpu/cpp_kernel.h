// The C++ kernel emitter: one `extern "C"` function per scheduled kernel, with OpenMP over the
// outer domain and `#pragma omp simd` inner loops. Sizes are read from the symbol array at run
// time, so one compiled kernel serves every size its guards allow.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "toroid/codegen/scalar.h"
#include "toroid/sched/schedule.h"

namespace toroid::codegen::cpu {

// Where each size symbol lives in the `syms` array that kernels receive.
using SymbolSlots = std::unordered_map<SymExpr, size_t>;

struct CppKernel {
  std::string name;
  std::string source;                // the function definition
  std::vector<loop::Buffer*> args;   // storage owners, in the order of the `bufs` argument
  // The indexing ops whose positions the kernel checks: toroid_take_index_error() returns
  // k + 1 after a position of index_sites[k] was out of range.
  using IndexSite = codegen::IndexSite;
  std::vector<IndexSite> index_sites;
  std::vector<size_t> sym_slots;  // the entries of `syms` it reads (WrapperProgram::symbols)
};

// Signature: extern "C" void NAME(char* const* bufs, const int64_t* syms).
CppKernel emit_cpp_kernel(const sched::Kernel& kernel, const SymbolSlots& slots, const ShapeEnv& env);

// Includes and helpers every translation unit starts with, and its exported
// `extern "C" int64_t toroid_take_index_error(int64_t* size)`: the site (see CppKernel) of an out
// of range position since the last call, or 0, and that dim's size; clears it.
const std::string& cpp_prelude();

// An index expression as C++ (int64 arithmetic, Python floor division and modulo).
std::string cpp_index(SymExpr e, const std::function<std::string(SymExpr)>& symbol_name);

}  // namespace toroid::codegen::cpu
