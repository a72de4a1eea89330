// The host steps of a Wrapper IR program that both executors run alike: item() reads, asserts,
// and cond / while_loop lines. An executor supplies what differs between devices (reading one
// element, allocating, copying, running a nested program) as hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/host_tensor.h"
#include "toroid/ops/rt_value.h"
#include "toroid/sym/shape_env.h"

namespace toroid::runtime {

// A ScalarRead line: `value` (read from the tensor) binds the line's unbacked symbol, checked
// against its range, or must equal the line's expression. UserErrors name the op's node.
void bind_scalar_read(const codegen::wrapper::Line& l, sym::Scalar value, const sym::ShapeEnv& env,
                      sym::Binding& binding);
// A SymbolDefs line: binds each symbol to its dim of the sizes the call before produced (by
// slot), checked against its range, or checks a bound one. UserErrors name the op's node.
void bind_symbol_defs(const codegen::wrapper::Line& l, const std::vector<std::vector<int64_t>>& produced,
                      const sym::ShapeEnv& env, sym::Binding& binding);
// An Assert line: a UserError with its message unless its condition holds under `binding`.
void check_assert(const codegen::wrapper::Line& l, const sym::ShapeEnv& env, const sym::Binding& binding);

// The value of a one-element tensor in host memory.
sym::Scalar element_value(const ops::HostTensor& t);

struct ControlHooks {
  // A line operand as a view of its slot (line-level lifecycle checks included).
  std::function<ops::HostTensor(const codegen::wrapper::TensorRef&)> view;
  // The one element of a tensor the executor's kernels wrote (a device read waits for them).
  std::function<sym::Scalar(const ops::HostTensor&)> read;
  // Runs program `index` of the line on `inputs`, its outputs placed in `outputs` where its
  // plan allows, with the caller's binding; `merge`: the symbols it bound join the caller's.
  // Adds the bytes it held at most to `*peak`.
  std::function<std::vector<ops::RtValue>(size_t index, const std::vector<ops::RtValue>& inputs,
                                          const std::vector<std::shared_ptr<ops::HostStorage>>& outputs, bool merge,
                                          int64_t* peak)>
      run;
  // Memory of `nbytes` on the executor's device, and a copy between two same-layout views.
  std::function<std::shared_ptr<ops::HostStorage>(size_t nbytes)> allocate;
  std::function<void(const ops::HostTensor& dst, const ops::HostTensor& src)> copy;
};

// Runs a Cond or While line of `w`. Returns the most bytes it held beyond what `w` had allocated
// before it: a program's peak less the results it wrote (`w` holds those), and a loop's second
// set of carried values; as estimate_peak_bytes plans it.
int64_t run_control(const codegen::wrapper::WrapperProgram& w, const codegen::wrapper::Line& l,
                    const ControlHooks& hooks, const sym::Binding& binding);

}  // namespace toroid::runtime
