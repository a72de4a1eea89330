// Running a Wrapper IR ReferenceCall (an op's reference kernel) for one run, shared by the CPU
// executor and the CUDA executor's host path.
#pragma once

#include <functional>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"

namespace toroid::runtime {

// The call's arguments evaluated under `binding` (each tensor as `tensor` makes it), then its
// op's reference kernel; a UserError that names no place gets the call's.
std::vector<ops::RtValue> run_reference(const codegen::wrapper::ReferenceCall& call, const sym::ShapeEnv& env,
                                        const sym::Binding& binding,
                                        const std::function<ops::RtValue(const codegen::wrapper::TensorRef&)>& tensor);

}  // namespace toroid::runtime
