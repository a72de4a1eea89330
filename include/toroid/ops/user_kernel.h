// User kernels in a graph: the two higher-order ops that call a kernel the user wrote (CUDA C++,
// PTX, a cubin, or a C++ function for the CPU), after Inductor's triton_kernel_wrapper_*.
//
//   higher_order.user_kernel_mutation("name", [%t0, %t1, ...], [scalar, ...], kind="cuda",
//       source="...", entry="name", grid=[g0, g1, g2], block=[b0, b1, b2], writes=[1])
//   %c = higher_order.user_kernel_functional("name", [...], [...], kind=..., source=..., ...,
//       tensors_to_clone=[1]) : <the type of each cloned tensor>
//
// The mutation form writes the tensors `writes` names in place (the mutation analysis of the
// kernel's IR decides them: codegen/cuda/kernel_ir_analysis.h) and has no results; the
// functional form runs the kernel on clones of the tensors `tensors_to_clone` names and returns
// them, in that order. grid and block are 1 to 3 integer expressions of the graph's symbols.
#pragma once

namespace toroid::ops {

inline constexpr const char* kUserKernelMutation = "higher_order.user_kernel_mutation";
inline constexpr const char* kUserKernelFunctional = "higher_order.user_kernel_functional";

// Registers the verifier's checks of both ops (install_schema_op_info calls it).
void register_user_kernel_checks();

}  // namespace toroid::ops
