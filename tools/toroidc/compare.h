// Comparing compiled results with the reference interpreter's, within each dtype's tolerance.
#pragma once

#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/ops/rt_value.h"

namespace toroidc {

struct Comparison {
  bool match = true;
  double max_abs_err = 0;
  double max_rel_err = 0;
  std::string first_mismatch;  // "out1[3]: got 1.5, expected 1.25" (empty when all match)
};

// Tolerances: |got - want| <= tol * magnitude + tol * |want|, tol per dtype (f64 1e-9, f32 1e-4,
// f16 2e-3, bf16 1.6e-2), the larger of the output's dtype's and `computed_in`'s (the least
// precise floating dtype the graph computes in: an f64 output of an f32 matmul is only as exact
// as f32); integers and bools exactly; NaN where the reference has NaN; infinities equal.
// `magnitude` (at least 1) is the largest |value| among the graph's floating inputs: rounding
// error follows the operands, so a sum of large values that cancels near 0 is held to an
// absolute error in proportion to them, not to its small result.
Comparison compare_outputs(const std::vector<toroid::ops::RtValue>& got, const std::vector<toroid::ops::RtValue>& want,
                           toroid::DType computed_in = toroid::DType::Float64, double magnitude = 1.0);
// The largest finite |element| among the floating tensors of `inputs`, and at least 1.
double input_magnitude(const std::vector<toroid::ops::RtValue>& inputs);
// The least precise floating dtype among a graph's tensor values (Float64 when it has none).
toroid::DType least_precise_float(const toroid::Graph& g);

}  // namespace toroidc
