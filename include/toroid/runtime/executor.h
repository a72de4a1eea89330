// The executor interface over Wrapper IR programs (the CPU one here, the CUDA one in
// runtime/cuda/executor.h), and what a run reports.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/sym/shape_env.h"

namespace toroid::runtime {

struct RunStats {
  int64_t peak_bytes = 0;  // most bytes of buffers the program allocated that were live at once
  int64_t planned_peak_bytes = 0;  // the plan's estimate of the same, for this run's sizes
};

// How one run is made. Everything but `outputs` is for device programs; a CPU executor rejects
// a workspace.
struct RunOptions {
  void* stream = nullptr;  // a CUstream; nullptr: toroid's own
  // Workspace mode: every buffer the program allocates is carved out of this memory, as the
  // memory plan lays it out (workspace_bytes() says how much). Outputs not given memory in
  // `outputs` then live in it too. The
  // programs of cond and while lines (and a loop's second set of carried values) take their
  // memory from the caching allocator.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // Gather-position checks on a device: false waits for the run and reports an out of range
  // position as a UserError from this run; true queues an asynchronous copy of the kernels'
  // error records and reports an error found in them at a later run or check_errors() (as CUDA
  // reports device-side asserts), so the host never waits for the GPU.
  bool deferred_checks = false;
  // Caller memory for the outputs (indexed like the graph's outputs, entries may be null): an
  // output's buffer is placed in it where output_binding.h allows; the returned views show
  // where each output ended up.
  std::vector<std::shared_ptr<ops::HostStorage>> outputs;
  // CUDA graphs over the program's partitions (codegen/wrapper/partition.cpp), in workspace mode
  // (or a program that allocates nothing): each call with the same stream, addresses and sizes
  // as an earlier one replays what that call captured (docs/runtime.md).
  bool cuda_graphs = false;
};

// Runs the lines of one Wrapper IR program, and nothing else: the program is all an executor
// reads. One per compiled specialization; runs are not concurrent (the driver serializes them).
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs with `binding` (every backed symbol bound from the inputs; the caller checked the
  // guards). Inputs as graph_inputs orders them, laid out as the graph's inputs are, on the
  // executor's device. Returns the outputs as interpret() does.
  virtual std::vector<ops::RtValue> run(const std::vector<ops::RtValue>& inputs, sym::Binding binding,
                                        RunStats* stats = nullptr, const RunOptions& options = {}) = 0;
  // Waits for the deferred checks of earlier runs and reports the first error they found.
  virtual void check_errors() {}
  // The bytes a workspace needs for these sizes (0: this executor takes none): with
  // `outputs_given`, for a run given caller memory (RunOptions::outputs) for every output
  // output_binding.h can place there, which then takes no room in the workspace.
  virtual size_t workspace_bytes(const sym::Binding&, bool outputs_given = true) const {
    (void)outputs_given;
    return 0;
  }
};

// The in-process CPU executor: runs the program's lines against the kernels of a loaded shared
// object. Everything that does not depend on the inputs' sizes (kernel symbols, buffer slots,
// constants) is resolved once, here.
std::unique_ptr<Executor> make_cpu_executor(const codegen::wrapper::WrapperProgram& program, const SharedObject& so);

}  // namespace toroid::runtime
