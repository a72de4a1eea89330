// Mutation analysis of a user kernel's PTX: which parameters a kernel writes through. Each
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
#pragma once

#include <string>
#include <vector>

namespace toroid::codegen::cuda {

struct PtxParam {
  std::string name;  // "add_one_param_1"
  std::string type;  // ".u64", ".u32", ".b8[16]" ...
  bool written = false;
  bool read = false;  // loaded through (a pointer parameter the kernel reads)
};

struct PtxKernelMutations {
  std::string entry;
  std::vector<PtxParam> params;
  std::vector<std::string> conservative;  // "param 2 treated as written: used by inline PTX (line 31)"
};

// Every `.entry` of the module, in order. UserError (at `file`'s line) on PTX it cannot parse.
std::vector<PtxKernelMutations> analyze_ptx_mutations(const std::string& ptx, const std::string& file = "");

// The analysis as text, one block per kernel (toroid-kernel-ir's output):
//   kernel add_one: writes 1; reads 0
//     note: ...
std::string print_ptx_mutations(const std::vector<PtxKernelMutations>& kernels);

}  // namespace toroid::codegen::cuda
