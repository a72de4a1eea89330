// A program's outputs as its Return line plans them (wrapper/ir.h OutputPlan), shared by the
// CPU and CUDA executors and the C ABI: which outputs may be computed in the caller's memory
// (toroid_run_into), the outputs' layouts and aliasing for given sizes, and the values a run
// returns.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"

namespace toroid::runtime {

// Elements from a strided view's first element to one past its last (0 when empty), for sizes
// and strides already checked non-negative; values whose extent overflows int64 (a caller's
// hostile header) are a UserError naming `what`, never a wrapped extent.
int64_t view_extent(std::span<const int64_t> sizes, std::span<const int64_t> strides, const std::string& what);

// By slot: the caller's storage for each bindable output (OutputPlan::bindable) whose memory
// holds the slot's bytes under `binding` (data-dependent sizes are not bound); null elsewhere.
// `outputs` is indexed like the program's outputs (null entries: no caller memory).
std::vector<std::shared_ptr<ops::HostStorage>> bind_outputs(const codegen::wrapper::WrapperProgram& w,
                                                            const std::vector<std::shared_ptr<ops::HostStorage>>& outputs,
                                                            const sym::Binding& binding);

// By slot: whether a run given caller memory for every output, laid out as describe_outputs
// says (toroid_run_into), computes the slot there: bind_outputs binds it.
std::vector<bool> slots_in_caller_memory(const codegen::wrapper::WrapperProgram& w, const sym::Binding& binding);

// One output's layout for given sizes, and what it aliases: a view of graph input
// `alias_input`, or of earlier output `alias_output` (starting its buffer, inside its span), at
// element `offset` from that tensor's first element. The caller allocates the others.
struct OutputLayout {
  bool is_scalar = false;  // a scalar or None output: its value exists only after a run
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int alias_input = -1, alias_output = -1;
};
// UserError naming the output when a size depends on data.
std::vector<OutputLayout> describe_outputs(const codegen::wrapper::WrapperProgram& w, const sym::Binding& binding);

// The program's outputs after a run: each tensor output as `view` makes it (a view of its
// slot's storage), scalars evaluated under `binding` (or the scalar input returned as it
// came), None where the graph returns None.
std::vector<ops::RtValue> collect_outputs(const codegen::wrapper::WrapperProgram& w, const sym::Binding& binding,
                                          const std::vector<ops::RtValue>& inputs,
                                          const std::function<ops::RtValue(const codegen::wrapper::TensorRef&)>& view);

}  // namespace toroid::runtime
