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
};

struct Kernel {
  int id = 0;
  std::string name;  // "kernel0"
  std::vector<SymExpr> outer, inner;  // sizes
  std::vector<Member> members;
  bool closed = false;  // takes no more members (a later write into an input follows)
  bool epilogues = false;  // its members all write into graph inputs (trailing copy_)
  int ops = 0;          // loop ops in its members' bodies (bounded, as the member count)
};

// Kernel variables: o<k> for the outer domain, q<k> for the inner.
SymExpr outer_var(size_t k);
SymExpr inner_var(size_t k);

struct Step {
  enum class Kind { Kernel, Extern, Fallback, Scalar, Control, UserKernel } kind;
  Kernel* kernel = nullptr;      // Kernel
  loop::Buffer* buffer = nullptr;  // the others (the first buffer of the node)
};

struct Schedule {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<Step> steps;
};

// Fusion decisions are logged under TOROID_LOG=fusion.
Schedule schedule(const loop::LoopProgram& program);

// A member's body in kernel variables (reduction variables included).
loop::Expr member_body(const Member& m);
// The flat position a member stores its element at, in kernel variables.
SymExpr member_store_position(const Member& m);

}  // namespace toroid::sched
