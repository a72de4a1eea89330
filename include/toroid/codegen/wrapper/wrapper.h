// The Wrapper IR (after Inductor's): the host program that drives the kernels, as a list of lines.
// Every backend is an emitter over these lines: the in-process executor (runtime/), and the
// text dump (--emit=wrapper) that FileCheck tests read.
#pragma once

#include <string>
#include <vector>

#include "toroid/codegen/cpu/cpp_kernel.h"
#include "toroid/codegen/cuda/cuda_kernel.h"
#include "toroid/loop/ir.h"
#include "toroid/sched/schedule.h"

namespace toroid::codegen::wrapper {

// A tensor as a line names it: a view of the memory in storage slot `slot` (the owning
// buffer's id). slot -1: absent (an optional operand given as None).
struct TensorRef {
  int slot = -1;
  DType dtype = DType::Float32;
  std::vector<SymExpr> sizes, strides;
  SymExpr offset = SymExpr::integer(0);
  std::string name;  // the slot's buffer, for printing
};

struct Line {
  enum class Kind { Comment, Alloc, Reuse, Free, KernelCall, ExternCall, FallbackCall };
  Kind kind = Kind::Comment;
  loop::Buffer* buffer = nullptr;  // Alloc, Reuse, Free; ExternCall: the result
  loop::Buffer* from = nullptr;    // Reuse: the freed buffer whose memory `buffer` takes
  SymExpr nbytes;                  // Alloc, Reuse: the buffer's bytes (a reused block may be larger)
  int kernel = -1;                 // KernelCall: index into WrapperProgram::kernels
  std::vector<loop::Buffer*> args;  // KernelCall: storages; ExternCall: operand storages
  const Node* node = nullptr;      // ExternCall, FallbackCall: the graph call
  // ExternCall: the library kernel, its operands in its own order, what it writes, and its
  // scalar arguments (loop/library.h).
  loop::LibraryCall library = loop::LibraryCall::Mm;
  std::vector<TensorRef> operands;
  TensorRef result;
  loop::LibraryParams params;
  std::vector<loop::Buffer*> results;  // FallbackCall: one buffer per tensor result
  std::string text;                // Comment
};

// Which emitter writes the kernels.
enum class Target { Cpu, Cuda };
const char* target_name(Target t);

struct WrapperProgram {
  const loop::LoopProgram* program = nullptr;
  Target target = Target::Cpu;
  std::vector<Line> lines;
  std::vector<cpu::CppKernel> kernels;          // Cpu
  std::vector<cuda::CudaKernel> cuda_kernels;  // Cuda
  std::vector<SymExpr> symbols;  // the kernels' `syms` array: symbol k is syms[k]
  // The most bytes the lines hold at once (memory_estimate.cpp), in the graph's symbols.
  SymExpr planned_peak_bytes = SymExpr::integer(0);
};

// Lines for a schedule: an Alloc before each buffer is first written, a provenance comment and
// a call per step. Emits the kernels (C++ or CUDA); a KernelCall's `kernel` indexes the target's
// kernel list.
WrapperProgram build_wrapper(const loop::LoopProgram& program, const sched::Schedule& schedule,
                             Target target = Target::Cpu);
// The name of a KernelCall's kernel.
const std::string& kernel_name(const WrapperProgram& w, const Line& call);

// Memory planning: frees each intermediate after its last use and turns an Alloc into a Reuse
// of a freed block on the same device: the smallest that is provably large enough and at most
// twice the buffer's size. A buffer is never reused within the step that frees it, so a
// kernel's inputs and outputs never share memory. Sets planned_peak_bytes.
void plan_memory(WrapperProgram& w);

// The most bytes the program holds at once as its lines allocate, reuse and free blocks: an
// Alloc or a fallback's result adds its buffer's bytes, a Reuse adds nothing (its block was
// held since the Free before it), and a Free releases the block unless a later Reuse takes it.
// Inputs and constants are not counted. Symbolic where sizes are, simplified under the
// graph's ShapeEnv; executors measure the same quantity (RunStats::peak_bytes).
SymExpr estimate_peak_bytes(const WrapperProgram& w);

// The lifecycle verifier: replays the lines and checks that every buffer is allocated (or
// reused) once before any call touches it, never touched after its Free, freed at most once,
// that a Reuse takes a freed block no other buffer holds, on the same device, provably large
// enough, and that no input, constant or output is freed. An InternalError names the line.
void verify_wrapper(const WrapperProgram& w);

// The text dump, one line per Wrapper IR line.
std::string print_wrapper(const WrapperProgram& w);
std::string print_line(const WrapperProgram& w, const Line& l);

// The translation unit of every kernel: C++ for the CPU; CUDA C++ for the GPU (the prelude
// once, then every kernel: it compiles on its own with nvcc -c).
std::string kernels_source(const WrapperProgram& w);
// The CPU kernels split into at most `parts` translation units of similar size, to compile in
// parallel and link into one shared object (each holds the prelude; the first defines the
// error record). One part when there is one kernel or the source is small.
std::vector<std::string> kernels_sources(const WrapperProgram& w, size_t parts);

}  // namespace toroid::codegen::wrapper
