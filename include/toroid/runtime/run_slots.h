// The storage of each buffer during one run of a Wrapper IR program, by buffer id (a slot), as
// its Alloc, Reuse and Free lines move memory: shared by the CPU and CUDA executors, which
// differ only in where an Alloc line's memory comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/ops/rt_value.h"

namespace toroid::runtime {

struct RunSlots {
  std::vector<std::shared_ptr<ops::HostStorage>> slots;  // the buffer's memory, while it lives
  std::vector<std::shared_ptr<ops::HostStorage>> freed;  // freed memory a later Reuse takes
  std::vector<std::shared_ptr<ops::HostStorage>> bound;  // the caller's memory for an output
  std::vector<bool> reused;  // a Reuse line takes this buffer's memory (per program)
  int64_t live = 0, peak = 0;  // bytes the program holds, now and at most

  // Once per program: which buffers' memory a Reuse line takes.
  void init(const codegen::wrapper::WrapperProgram& w, int num_slots);
  // A run's start: every slot empty but the inputs' and the constants' (by slot; null where
  // none), and the caller's output memory. Kernels read an input at its graph type's offset
  // (`binding` evaluates it); an input tensor at another offset in its storage (a caller's
  // tensor wrapped from its first element) gets a slot based where that offset finds it.
  void start(const loop::LoopProgram& p, const std::vector<ops::RtValue>& inputs,
             const std::vector<std::shared_ptr<ops::HostStorage>>& constants,
             std::vector<std::shared_ptr<ops::HostStorage>> bound_outputs, const sym::Binding& binding);
  // Memory `nbytes` long was placed in a slot.
  void count(int64_t nbytes);
  // The Reuse and Free lines.
  void reuse(const codegen::wrapper::Line& l);
  void free(const codegen::wrapper::Line& l);
  // The run's end: drops what the slots hold (outputs keep their storages).
  void finish();
};

}  // namespace toroid::runtime
