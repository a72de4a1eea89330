// Mutation analysis of a user kernel's IR: which parameters a kernel writes through, from its PTX
// (CUDA C++, PTX) or its TTIR (Triton).
//
// PTX (kernel_ir_analysis.cpp). Each
// `.entry` is analysed on its own: registers carry the set of parameters their value may point
// into (from ld.param, through arithmetic, moves, conversions and selects, over the whole body
// until nothing changes, so loops are covered); a store, atomic or reduction through an address
// derived from a parameter writes it. Device functions (`.func`) are analysed the same way and
// their written parameters mapped back through each call's arguments.
//
// Conservative, with the reason recorded: a store through a pointer loaded from memory (it may
// alias any parameter), a call to a function without a body or through a register, an inline
// PTX block (NVRTC's `// begin inline asm` markers) reading a parameter-derived register, surface
// and tensor-map (TMA) stores: the parameters concerned are marked written.
//
// TTIR (ttir_analysis.cpp), the same questions over Triton's SSA values: pointers flow from the
// `tt.func`'s arguments through tt.splat, tt.addptr, tt.broadcast and every other op to tt.store,
// tt.atomic_rmw, tt.atomic_cas and descriptor stores; scf.for / scf.if / scf.while carry them
// through iter_args, yields and block arguments (a fixpoint); tt.call maps a callee's written
// arguments back. Conservative, with the reason: inline assembly (tt.elementwise_inline_asm)
// given a pointer, a store through a pointer loaded from memory or made from an integer
// (tt.int_to_ptr), a call to a function not in the module.
#pragma once

#include <string>
#include <vector>

namespace toroid::codegen::cuda {

struct KernelParam {
  std::string name;  // "add_one_param_1" (PTX), "out_ptr" (TTIR)
  std::string type;  // ".u64", ".u32", ".b8[16]" ... (PTX); "!tt.ptr<f32>", "i32" (TTIR)
  bool written = false;
  bool read = false;  // loaded through (a pointer parameter the kernel reads)
};

struct KernelMutations {
  std::string entry;
  std::vector<KernelParam> params;
  std::vector<std::string> conservative;  // "param 2 treated as written: used by inline PTX (line 31)"
};

// Every `.entry` of the module, in order. UserError (at `file`'s line) on PTX it cannot parse.
std::vector<KernelMutations> analyze_ptx_mutations(const std::string& ptx, const std::string& file = "");

// Every public `tt.func` of a TTIR module, in order. UserError (at `file`'s line) on text it
// cannot read.
std::vector<KernelMutations> analyze_ttir_mutations(const std::string& ttir, const std::string& file = "");

// The analysis as text, one block per kernel (toroid-kernel-ir's output):
//   kernel add_one: writes 1; reads 0
//     note: ...
std::string print_kernel_mutations(const std::vector<KernelMutations>& kernels);

}  // namespace toroid::codegen::cuda
