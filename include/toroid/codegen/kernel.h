// What an executor needs of a generated kernel, C++ or CUDA: its name and source, which slots
// it takes, which symbols it reads, and the sites whose errors it records. Plain data: no IR
// type, so the executors read kernels without the loop IR.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "toroid/support/error.h"
#include "toroid/sym/expr.h"

namespace toroid::codegen {

// Where each size symbol lives in the `syms` array that kernels receive (one table per program).
using SymbolSlots = std::unordered_map<SymExpr, size_t>;

// A check a kernel makes and records on failure: a gathered position out of range for `dim` of
// op `op` (at `loc`), or (dim kZeroDivisorDim) an integer division that met a zero divisor.
struct IndexSite {
  std::string op;  // the ATen op, for the message
  SourceLoc loc;   // its node's place in the source
  int64_t dim = 0;
  const void* key = nullptr;  // identifies the node while emitting (never dereferenced)
};
constexpr int64_t kZeroDivisorDim = -1;
// The user error a kernel's record {site, size, value} describes: "<op>: index 7 is out of
// bounds for dimension 0 with size 4", or "<op>: ZeroDivisionError: ..." (as PyTorch says).
std::string site_error(const IndexSite& site, int64_t size, int64_t value);

// A C++ kernel. Signature: extern "C" void NAME(char* const* bufs, const int64_t* syms).
struct CppKernel {
  std::string name;
  std::string symbol;     // the function's name in the shared object (see CudaKernel::symbol)
  std::string source;     // the function definition, named `name` (kernels.cpp, the debug view)
  std::vector<int> args;  // storage slots, in the order of the `bufs` argument
  std::vector<int> sources;  // the graph nodes it computes (WrapperProgram::sources)
  // The checks the kernel records: toroid_take_index_error() returns k + 1 after
  // index_sites[k] failed.
  std::vector<IndexSite> index_sites;
  std::vector<size_t> sym_slots;  // the entries of `syms` it reads (WrapperProgram::symbols)
};

// A CUDA kernel (cuda/cuda_kernel.h says how it is shaped and launched).
struct CudaKernel {
  enum class Shape { Flat, Rows };
  std::string name;
  // What NVRTC compiles it as (SYMBOL_i32 / SYMBOL_i64): its kind and a hash of its code, comments
  // and name left out, so kernels alike (a layer's, repeated in every layer) are compiled once and
  // share the cubin cache's entry. Set by assign_symbol; empty means `name`.
  std::string symbol;
  std::string source;              // the kernel's definitions and both entry points (after cuda_prelude())
  std::string definitions;         // `comment`, then the body template NAME_body<I>`body`
  std::string comment;             // what it computes: its domain, members and their graph nodes
  std::string body;                // the body template's parameters and code, from "(" on
  std::string entry_i32, entry_i64;  // the entry points (entry_i32 empty when !has_i32)
  std::vector<int> args;           // storage slots, the first parameters
  std::vector<int> sources;        // the graph nodes it computes (WrapperProgram::sources)
  std::vector<size_t> sym_slots;   // then the symbols, by their place in the wrapper's syms
  std::vector<IndexSite> index_sites;
  Shape shape = Shape::Flat;
  SymExpr rows;      // Rows: rows of the outer domain
  SymExpr elements;  // Flat: the domain's elements; Rows: elements of one row
  int vector_width = 1;
  // Rows: the vector groups per thread of its slot path, where a row that fits them is read
  // into registers at once (0: no such path). The executor sizes row blocks to fit it.
  int row_slots = 0;
  // Rows: the block size its code is compiled for (a row of known length that fits the slots;
  // 0: any power of two up to 512, the executor's choice).
  int row_threads = 0;
  // Rows of a warp or less (row_threads <= 32): up to this many rows a block, as a 2-D block of
  // row_threads x R threads (a row's reductions then stay in its warp, or its segment of one:
  // no shared memory, no barrier). 1: a row a block.
  int rows_per_block = 1;
  bool has_i32 = true;  // false when an index literal does not fit 32 bits
  std::vector<std::string> arg_types;  // the CUDA type each `args` pointer points to
  // A combo kernel (cuda/cuda_combo.h): flat kernels launched as one, each part on its own
  // range of blocks, in order. Its parameters then end with one block count per part.
  struct Part {
    std::string name;
    SymExpr elements;
    int vector_width = 1;
  };
  std::vector<Part> parts;
};

// `code` without its comments (and lines left empty), and with `name` spelled `symbol` wherever it starts an
// identifier (kernel3, kernel3_body, kernel3_i32; not kernel31).
std::string renamed_code(const std::string& code, const std::string& name, const std::string& symbol);
// tk_KIND_HASH: KIND and a hash of `code` with its comments and `name` left out.
std::string content_symbol(const std::string& kind, const std::string& code, const std::string& name);

namespace cuda {
// Includes and helpers every kernel's translation unit starts with.
const std::string& cuda_prelude();
// What NVRTC compiles: one entry point, SYMBOL_i32 or SYMBOL_i64 (the 64-bit one is compiled only
// when a launch needs it: ptxas optimizes each instantiation, so two cost about twice one), the
// kernel's name spelled as its symbol, and no comment lines.
std::string cuda_translation_unit(const CudaKernel& k, bool i64);
// Sets k.symbol from k's definitions and entry points (call once they are final).
void assign_symbol(CudaKernel& k);
// The name of k's compiled entry point for 32- or 64-bit indexing.
std::string entry_symbol(const CudaKernel& k, bool i64);
}  // namespace cuda

}  // namespace toroid::codegen
