// The per-output summary `toroidc run` prints (text or JSON).
#pragma once

#include <string>

#include "toroid/ops/rt_value.h"

namespace toroidc {

struct OutputInfo {
  std::string name;   // "out0"
  std::string value;  // the graph's value name, "%y" (or empty)
  std::string file;   // written .npy path (empty if none)
};

// "out0 %y f32[2, 3] min=-1 max=2.5 mean=0.25 nan=0 first=[...]"
std::string summary_line(const OutputInfo& o, const toroid::ops::RtValue& v);
// One JSON object (no trailing newline).
std::string summary_json(const OutputInfo& o, const toroid::ops::RtValue& v);

}  // namespace toroidc
