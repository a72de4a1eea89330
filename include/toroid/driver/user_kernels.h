// User kernels as the driver offers them to the C ABI and tools: the mutation analysis of a
// kernel's IR (codegen/cuda/kernel_ir_analysis.h), compiling CUDA C++ to PTX first.
#pragma once

#include <string>

namespace toroid::driver {

// The analysis of `text` as JSON: `kind` "cuda" (CUDA C++, compiled for compute_`arch` with
// NVRTC), "ptx" or "ttir"; an array with one {"kernel", "params": [{"name", "type", "written",
// "read"}], "notes"} per kernel. UserError on an unknown kind or text that does not compile or
// parse; "cuda" needs a build with the CUDA toolkit.
std::string analyze_kernel_json(const std::string& text, const std::string& kind, int arch);

}  // namespace toroid::driver
