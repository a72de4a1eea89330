// The reference interpreter: runs a Graph on the CPU with real tensors, through the reference
// kernels of the op registry. It is the oracle that compiled code is compared against.
//
// Semantics: views share storage with their base, in-place ops write into it (a copy_ into a graph
// input mutates the caller's tensor), symbols are bound from the inputs' sizes and from results
// (unbacked symbols: item(), nonzero), ShapeEnv guards and symbol ranges are checked as soon as
// their symbols are bound, and every result is checked against its node's meta. docs/toroidc.md.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/inputs.h"
#include "toroid/ops/rt_value.h"
#include "toroid/sym/shape_env.h"

namespace toroid::interp {

struct InterpreterOptions {
  uint64_t seed = 0;  // Philox key of the random ops
  // Compare every call result with its node's meta (dtype, sizes, strides where the size is > 1,
  // scalar values, and storage sharing); a difference is a UserError.
  bool check_results = true;
  // A higher_order.while_loop running longer than this is a UserError (never a hang).
  int64_t max_loop_iterations = int64_t{1} << 24;
};

class Interpreter {
 public:
  explicit Interpreter(const Graph& g, InterpreterOptions opts = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs the graph. `inputs` are the values of the Input nodes, then the Param nodes, in graph
  // order (graph_inputs()). Returns the output node's arguments (lists flattened; None and
  // scalars keep their position). Bad inputs and failed checks are UserErrors.
  std::vector<ops::RtValue> run(const std::vector<ops::RtValue>& inputs);
  // The symbols bound by the last run (backed from inputs, unbacked from results).
  const sym::Binding& binding() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::vector<ops::RtValue> interpret(const Graph& g, const std::vector<ops::RtValue>& inputs,
                                    const InterpreterOptions& opts = {});
}  // namespace toroid::interp
