// Writing a program's outputs into memory the caller allocated (the C ABI's toroid_run_into):
// which storage slots may take a caller's buffer, shared by the CPU and CUDA executors.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "toroid/loop/ir.h"
#include "toroid/ops/rt_value.h"
#include "toroid/sym/shape_env.h"

namespace toroid::runtime {

// Per output, the storage slot (buffer id) that may be placed in the caller's memory, or -1.
// A slot qualifies when the program allocates it (not an input or constant), the output starts
// at its offset 0, and no earlier output uses it. Whether the caller's memory is large enough
// is checked per run (bind_outputs).
std::vector<int> bindable_output_slots(const loop::LoopProgram& p);

// By slot id: the caller's storage for each bindable output whose memory holds the slot's
// `storage_numel` elements under `binding` (data-dependent sizes are not bound); null
// elsewhere. `outputs` is indexed like p.outputs (null entries: no caller memory).
std::vector<std::shared_ptr<ops::HostStorage>> bind_outputs(const loop::LoopProgram& p, const std::vector<int>& slots,
                                                            const std::vector<std::shared_ptr<ops::HostStorage>>& outputs,
                                                            size_t num_slots, const sym::Binding& binding);

// The program's outputs after a run: each tensor output as `view` makes it (a view of its
// buffer's storage), scalars evaluated under `binding` (or the scalar input returned as it came),
// None where the graph returns None.
std::vector<ops::RtValue> collect_outputs(const loop::LoopProgram& p, const sym::ShapeEnv& env,
                                          const sym::Binding& binding, const std::vector<ops::RtValue>& inputs,
                                          const std::function<ops::RtValue(const Value*)>& view);

}  // namespace toroid::runtime
