// User kernels in a graph: the two higher-order ops that call a kernel the user wrote (CUDA C++,
// PTX, a cubin, or a C++ function for the CPU), after Inductor's triton_kernel_wrapper_*.
//
//   higher_order.user_kernel_mutation("name", [%t0, %t1, ...], [scalar, ...], kind="cuda",
//       source="...", entry="name", grid=[g0, g1, g2], block=[b0, b1, b2], writes=[1])
//   %c = higher_order.user_kernel_functional("name", [...], [...], kind=..., source=..., ...,
//       writes=[1], tensors_to_clone=[1]) : <the type of each written tensor>
//
// Both name the tensors the kernel writes in `writes` (the mutation analysis of the kernel's IR
// decides them: codegen/cuda/kernel_ir_analysis.h). The mutation form writes them in place and
// has no results; the functional form returns their new values, in `writes` order: those named
// by `tensors_to_clone` are written in clones (their old value is read later), the others in
// place (in_place_hazard says when that is allowed). grid and block are 1 to 3 integer
// expressions of the graph's symbols; `shared` the dynamic shared memory in bytes; `aligned` the
// tensors the kernel assumes 16-byte aligned (Triton's specialization), checked at each launch.
// The kernel's parameters are the tensors, then the scalars; `order` (a permutation of their
// positions in that list) says otherwise: parameter k is entry order[k].
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace toroid {
class Node;
class Value;
}  // namespace toroid

namespace toroid::ops {

inline constexpr const char* kUserKernelMutation = "higher_order.user_kernel_mutation";
inline constexpr const char* kUserKernelFunctional = "higher_order.user_kernel_functional";

// The kernel a user-kernel call launches: its own kind=, source= and entry= (entry defaulting to
// the call's name), or the entry of the graph's kernel table its name refers to (the call gives
// no source=). Null when neither says (the verifier reports it).
struct UserKernelSource {
  std::string name, kind, source, entry;
  std::string ttir;   // a Triton kernel's TTIR (table entries only): analysed instead of the PTX
  std::string cubin;  // the PTX compiled for one architecture (table entries only)
};
std::optional<UserKernelSource> user_kernel_source(const Node& n);

// The positions a user-kernel call's list keyword names (`writes`, `tensors_to_clone`, `aligned`,
// `order`): empty when it has none. The verifier has checked they are integers in range.
std::vector<size_t> user_kernel_positions(const Node& n, const char* kwarg);

// Why user-kernel call `n` may not write its tensor `v` in place (functional form, not in
// tensors_to_clone), or "" when it may: v must be memory the graph owns (no input, param or
// constant), at offset 0, shared with no other value, and read by nothing but `n` (once), so no
// reader of the old value can run after the kernel.
std::string in_place_hazard(const Node& n, const Value* v);

// Registers the verifier's checks of both ops (install_schema_op_info calls it).
void register_user_kernel_checks();

}  // namespace toroid::ops
