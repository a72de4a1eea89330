// Building and checking Wrapper IR programs (wrapper/ir.h): lines from a loop program's
// schedule, the memory plan, its peak estimate, the lifecycle verifier and the text dump.
#pragma once

#include <string>
#include <vector>

#include "toroid/codegen/cpu/cpp_kernel.h"
#include "toroid/codegen/cuda/cuda_kernel.h"
#include "toroid/codegen/wrapper/ir.h"
#include "toroid/loop/ir.h"
#include "toroid/sched/schedule.h"

namespace toroid::codegen::wrapper {

// Lines for a schedule: an Alloc before each buffer is first written, a provenance comment and
// a call per step, and the Return line. Emits the kernels for the program's target (C++ or
// CUDA); a KernelCall's `kernel` indexes that target's kernel list. `program` must outlive the
// result (constants' data, the ShapeEnv).
WrapperProgram build_wrapper(const loop::LoopProgram& program, const sched::Schedule& schedule);

// Memory planning: frees each intermediate after its last use and turns an Alloc into a Reuse
// of a freed block on the same device: the smallest that is provably large enough and at most
// twice the buffer's size. A buffer is never reused within the step that frees it, so a
// kernel's inputs and outputs never share memory. A buffer whose size holds an unbacked symbol
// the program binds goes into a pool instead: one per device and binding point, allocated by a
// PoolAlloc line before its first block (so after the lines that bind its symbols) and freed
// after its last; blocks are 64-byte aligned, at symbolic offsets, and a freed block is reused
// within its pool as above. Returned buffers are never pooled. Sets planned_peak_bytes.
void plan_memory(WrapperProgram& w);
// The bytes a buffer of `nbytes` takes in a pool: `nbytes` rounded up to a multiple of 64.
SymExpr pool_block_bytes(const ShapeEnv& env, SymExpr nbytes);

// Graph partitions (after plan_memory): the maximal runs of lines with no capture_barrier that
// launch at least one kernel, in `w` and its nested programs. One memory plan covers them all,
// so buffers are reused across partitions.
void partition_program(WrapperProgram& w);

// The most bytes the program holds at once as its lines allocate, reuse and free blocks: an
// Alloc or a fallback's result adds its buffer's bytes, a Reuse adds nothing (its block was
// held since the Free before it), and a Free releases the block unless a later Reuse takes it;
// a pool counts whole from its PoolAlloc to its PoolFree (its buffers add nothing).
// Inputs and constants are not counted. Symbolic where sizes are, simplified under the
// graph's ShapeEnv; executors measure the same quantity (RunStats::peak_bytes).
SymExpr estimate_peak_bytes(const WrapperProgram& w);
// The bytes held after each line of `w`, as estimate_peak_bytes counts them (entry i: after
// line i; a nested program's own peak is not in its line's entry).
std::vector<SymExpr> live_bytes_by_line(const WrapperProgram& w);

// The lifecycle verifier: replays the lines and checks that every buffer is allocated (or
// reused) once before any call touches it, never touched after its Free, freed at most once,
// that a Reuse takes a freed block no other buffer holds, on the same device, provably large
// enough, and that no input, constant or output is freed; that a pooled buffer lies provably
// inside its pool while the pool is live, each pool allocated and freed once with none of its
// buffers live; and that no line reads an unbacked symbol before the line that binds it (an
// item() read, a SymbolDefs line, or the owner's, for a nested program). An InternalError names
// the line.
void verify_wrapper(const WrapperProgram& w);

// The provenance map as JSON (toroidc --emit=provenance): "calls", each kernel, library or
// fallback line (its 1-based line number, as lifecycle messages count) with the graph nodes it
// computes; "nodes", each node of the graph after the passes with its op, .tir line, origin in
// the user's program, what runs it and on which lines.
std::string print_provenance(const WrapperProgram& w);

// The text dump, one line per Wrapper IR line: with the kernels' source, enough to run the
// program by hand.
std::string print_wrapper(const WrapperProgram& w);
std::string print_line(const WrapperProgram& w, const Line& l);

// Every kernel under its name, as --emit and debug directories show them: C++ for the CPU;
// CUDA C++ for the GPU (the prelude once, then every kernel: it compiles on its own with nvcc -c).
std::string kernels_source(const WrapperProgram& w);
// What g++ compiles: each distinct CPU kernel once, under its symbol, split into at most `parts`
// translation units of similar size, to compile in parallel and link into one shared object
// (each holds the prelude; the first defines the error record). One part when there is one
// kernel or the source is small.
std::vector<std::string> kernels_sources(const WrapperProgram& w, size_t parts);

}  // namespace toroid::codegen::wrapper
