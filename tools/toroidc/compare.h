// Comparing compiled results with the reference interpreter's, within each dtype's tolerance.
#pragma once

#include <string>
#include <vector>

#include "toroid/ops/rt_value.h"

namespace toroidc {

struct Comparison {
  bool match = true;
  double max_abs_err = 0;
  double max_rel_err = 0;
  std::string first_mismatch;  // "out1[3]: got 1.5, expected 1.25" (empty when all match)
};

// Tolerances: |got - want| <= atol + rtol * |want|, per dtype (f64 1e-9, f32 1e-4, f16 2e-3,
// bf16 1.6e-2); integers and bools exactly; NaN where the reference has NaN; infinities equal.
Comparison compare_outputs(const std::vector<toroid::ops::RtValue>& got, const std::vector<toroid::ops::RtValue>& want);

}  // namespace toroidc
