// The scheduler: groups the loop program's computed buffers into kernels (fusion) and orders
// them with the library and fallback calls.
//
// A kernel has an outer domain (run in parallel) and an inner domain. Its members run in order
// inside one outer iteration: a reduction over the inner domain, a pointwise buffer over the
// inner domain (inner-level), or a pointwise buffer of the outer domain alone (outer-level).
// So softmax is one kernel: per row, a max loop, a sum loop and the division loop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "toroid/loop/ir.h"

namespace toroid::sched {

struct Member {
  loop::Buffer* buffer = nullptr;
  bool inner = false;  // pointwise over outer ++ inner (else reductions and outer-level pointwise)
  // The buffer's index and reduction variables in terms of the kernel's variables.
  std::vector<SymExpr> index;
  std::vector<SymExpr> reduction_index;
  // A reduction that only later members of its kernel read (keep_local_reductions): the kernel
  // keeps it in a register and stores it nowhere; it has no memory.
  bool local = false;
};

struct Kernel {
  int id = 0;
  std::string name;  // "kernel0"
  std::vector<SymExpr> outer, inner;  // sizes
  std::vector<Member> members;
  bool closed = false;  // takes no more members (a later write into an input follows)
  bool epilogues = false;  // its members all write into graph inputs (trailing copy_)
  int ops = 0;          // loop ops in its members' bodies (bounded, as the member count)
  bool emulate_precision_casts = false;  // ScheduleOptions::emulate_precision_casts
};

// Kernel variables: o<k> for the outer domain, q<k> for the inner.
SymExpr outer_var(size_t k);
SymExpr inner_var(size_t k);

struct Step {
  enum class Kind { Kernel, Combo, Extern, Fallback, Scalar, Control, UserKernel } kind;
  Kernel* kernel = nullptr;      // Kernel
  loop::Buffer* buffer = nullptr;  // the others (the first buffer of the node)
  std::vector<Kernel*> parts;    // Combo: independent flat kernels, launched as one (combine.cpp)
};

struct ScheduleOptions {
  // Combo kernels (combine_kernels): consecutive independent flat kernels share one launch, each
  // on blocks of its own. Then writes into inputs (an optimizer step's updates) share a kernel
  // only with the kernel computing from the same tensors, not with every one of their iteration
  // space: each parameter's update is a part with its own blocks, instead of one thread running
  // the updates of many small tensors in turn. For CUDA; the CPU runs a kernel's parallel loop
  // over every tensor of an iteration space either way.
  bool combo_kernels = false;
  // A bf16/f16 value inside a kernel rounds where the graph casts to it (each op's result, as
  // eager rounds), not only when stored. Off (Inductor's default, its emulate_precision_casts):
  // values between a kernel's ops keep float precision, and only stores round.
  bool emulate_precision_casts = false;
};

struct Schedule {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<Step> steps;
  ScheduleOptions options;  // what it was made with (nested programs are scheduled alike)
};

// Fusion decisions are logged under TOROID_LOG=fusion.
Schedule schedule(const loop::LoopProgram& program, const ScheduleOptions& options = {});

// Marks each reduction that nothing outside its kernel reads (no other kernel, call, host step
// or output; no buffer writing into its memory) as local. For CUDA, whose row kernels read their
// reductions from registers; the C++ kernels read theirs back from memory. Logged under
// TOROID_LOG=fusion.
void keep_local_reductions(Schedule& schedule, const loop::LoopProgram& program);

// Combo kernels: groups runs of consecutive Kernel steps into Combo steps (at most
// kMaxComboParts each) when every kernel of the run is flat (inner pointwise members only) and
// none reads or writes a storage an earlier kernel of the run writes, nor writes one it reads.
// Logged under TOROID_LOG=fusion.
constexpr size_t kMaxComboParts = 64;
void combine_kernels(Schedule& schedule);
// A kernel of inner pointwise members only (CUDA's Flat shape).
bool is_flat(const Kernel& k);

// A member's body in kernel variables (reduction variables included).
loop::Expr member_body(const Member& m);
// The flat position a member stores its element at, in kernel variables.
SymExpr member_store_position(const Member& m);

}  // namespace toroid::sched
