// User kernels as the driver offers them to the C ABI and tools: the mutation analysis of a
// kernel's IR (codegen/cuda/kernel_ir_analysis.h), compiling CUDA C++ to PTX first.
#pragma once

#include <string>
#include <vector>

namespace toroid {
class Graph;
class Node;
}  // namespace toroid

namespace toroid::codegen::wrapper {
struct WrapperProgram;
}

namespace toroid::driver {

// The analysis of `text` as JSON: `kind` "cuda" (CUDA C++, compiled for compute_`arch` with
// NVRTC), "ptx" or "ttir"; an array with one {"kernel", "params": [{"name", "type", "written",
// "read"}], "notes"} per kernel. UserError on an unknown kind or text that does not compile or
// parse; "cuda" needs a build with the CUDA toolkit.
std::string analyze_kernel_json(const std::string& text, const std::string& kind, int arch);

// A user-kernel call of a graph with its kernel's analysis mapped onto the call's tensors: the
// kernel's parameters are the call's tensors, then its scalars, in order.
struct UserKernelCall {
  const Node* node = nullptr;
  std::vector<size_t> written, read;  // positions in the call's tensor list
  std::vector<std::string> notes;     // where the analysis was conservative
};

// Every higher_order.user_kernel_* call of `g` and of its subgraphs, analysed (kind "cuda" is
// compiled for compute_`arch`; "cubin" and "cpp" cannot be analysed: every tensor counts as
// written, with a note). UserError at the node when the kernel's parameters do not match the
// call's tensors and scalars, or when it writes a tensor that the call's `writes` does not name:
// the compiler would believe it unchanged.
std::vector<UserKernelCall> check_user_kernels(const Graph& g, int arch);

// Fills each user kernel of `program` (and its nested programs) with its PTX (CUDA C++ compiled
// for compute_`arch` by NVRTC, once per process and source) and parameter types, and checks each
// launch against them: as many parameters as tensors and scalars, a 64-bit one for each tensor.
// UserError at the call otherwise.
void prepare_user_kernels(codegen::wrapper::WrapperProgram& program, int arch);

}  // namespace toroid::driver
