// The storage of each buffer during one run of a Wrapper IR program, by buffer id (a slot), as
// its Alloc, Reuse and Free lines move memory: shared by the CPU and CUDA executors, which
// differ only in where an Alloc line's memory comes from.
//
// A call reads a slot through `memory`, which fails with the line that freed it rather than
// touching freed memory. With $TOROID_VERIFY_LIFECYCLE=1 every freed block is also poisoned
// (filled with 0xff bytes: NaN in every float type) and the run's measured peak is checked
// against the plan's estimate.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"

namespace toroid::runtime {

// A symbolic value of the program under one run's binding: an integer (sizes, strides) or a
// real (a library call's alpha and beta). UserError when a symbol is unbound.
int64_t eval_int(const sym::ShapeEnv& env, const sym::Binding& binding, SymExpr e);
std::vector<int64_t> eval_ints(const sym::ShapeEnv& env, const sym::Binding& binding, const std::vector<SymExpr>& v);
double eval_real(const sym::ShapeEnv& env, const sym::Binding& binding, SymExpr e);
// A bound symbol as the kernels' symbol arguments carry it: an int's value, a float's bits.
int64_t symbol_word(const sym::Scalar& value);

// Whether $TOROID_VERIFY_LIFECYCLE asks for the run-time lifecycle checks (read when an
// executor is built).
bool lifecycle_verification();

struct RunSlots {
  std::vector<std::shared_ptr<ops::HostStorage>> slots;  // the buffer's memory, while it lives
  std::vector<std::shared_ptr<ops::HostStorage>> freed;  // freed memory a later Reuse takes
  std::vector<std::shared_ptr<ops::HostStorage>> bound;  // the caller's memory for an output
  std::vector<int64_t> counted;  // bytes counted for the block each slot holds
  std::vector<int> freed_at;     // the line that freed each slot, or -1
  std::vector<bool> reused;  // a Reuse line takes this buffer's memory (per program)
  std::vector<std::string> names;  // each slot's buffer, for messages
  std::vector<std::shared_ptr<ops::HostStorage>> pools;  // by pool, while it lives
  std::vector<int64_t> pool_bytes;                       // each pool's bytes this run
  // The sizes a call's results came out with (by slot), which the SymbolDefs line after it
  // binds; and the symbols the call bound for its own use, which end_call unbinds.
  std::vector<std::vector<int64_t>> produced;
  std::vector<SymExpr> call_symbols;
  int64_t live = 0, peak = 0;  // bytes the program holds, now and at most
  bool verify = false;         // lifecycle_verification() when init ran
  // Fills memory with a byte (the host's memset, or the device's); set by the executor.
  std::function<void(ops::HostStorage&, unsigned char)> fill;

  // Once per program: which buffers' memory a Reuse line takes.
  void init(const codegen::wrapper::WrapperProgram& w);
  // A run's start: every slot empty but the inputs' and the constants' (by slot; null where
  // none), and the caller's output memory. Kernels read an input at its graph type's offset
  // (`binding` evaluates it); an input tensor at another offset in its storage (a caller's
  // tensor wrapped from its first element) gets a slot based where that offset finds it.
  void start(const codegen::wrapper::WrapperProgram& w, const std::vector<ops::RtValue>& inputs,
             const std::vector<std::shared_ptr<ops::HostStorage>>& constants,
             std::vector<std::shared_ptr<ops::HostStorage>> bound_outputs, const sym::Binding& binding);
  // Memory of `nbytes` was placed in `slot`.
  void count(int slot, int64_t nbytes);
  // The Reuse line (`nbytes`: its buffer's size this run) and the Free line (`line`: its index).
  void reuse(const codegen::wrapper::Line& l, int64_t nbytes);
  void free(const codegen::wrapper::Line& l, size_t line);
  // A PoolAlloc line: `memory` (at least `nbytes`) is the pool's. An Alloc line with a pool:
  // its buffer is `nbytes` at `offset` in the pool. A PoolFree line (`line`: its index).
  void pool_alloc(const codegen::wrapper::Line& l, std::shared_ptr<ops::HostStorage> memory, int64_t nbytes);
  void place_in_pool(const codegen::wrapper::Line& l, int64_t offset, int64_t nbytes, size_t line);
  void pool_free(const codegen::wrapper::Line& l, size_t line);
  // A call's result `r` came out with `sizes`: recorded for the SymbolDefs line, and the
  // symbols of its sizes that `binding` lacks bound there until end_call, so that the call can
  // lay out its result. A UserError when the sizes differ from the graph's (`op`: the call's).
  void produced_sizes(const codegen::wrapper::ReferenceCall& call, const codegen::wrapper::ReferenceCall::Result& r,
                      const std::vector<int64_t>& sizes, const sym::ShapeEnv& env, sym::Binding& binding);
  void end_call(sym::Binding& binding);
  // The memory a call on line `line` reads or writes in `slot`: an InternalError naming the
  // line that freed it, or saying it was never allocated, when the slot holds none.
  const std::shared_ptr<ops::HostStorage>& memory(int slot, size_t line) const;
  // A line's tensor operand as a view of its slot's memory, sizes evaluated under `binding`.
  ops::HostTensor view(const codegen::wrapper::TensorRef& r, size_t line, const sym::ShapeEnv& env,
                       const sym::Binding& binding) const;
  // The plan's peak evaluated under `binding` (every symbol bound, after the run); under
  // verification, an InternalError when the measured peak exceeds it.
  int64_t check_peak(const codegen::wrapper::WrapperProgram& w, const sym::Binding& binding) const;
  // The run's end: drops what the slots hold (outputs keep their storages).
  void finish();
};

}  // namespace toroid::runtime
