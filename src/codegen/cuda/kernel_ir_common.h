// What the PTX and TTIR mutation analyses share (kernel_ir_analysis.h): the parameter sets a
// value may point into, a function's summary, and the per-kernel result.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "toroid/codegen/cuda/kernel_ir_analysis.h"

namespace toroid::codegen::cuda::detail {

// The parameters a value may point into; `loaded`: read from memory (or made from an integer),
// so it may point anywhere.
struct Taint {
  std::set<int> params;
  bool loaded = false;
  bool merge(const Taint& o) {
    size_t n = params.size();
    bool was = loaded;
    params.insert(o.params.begin(), o.params.end());
    loaded = loaded || o.loaded;
    return params.size() != n || loaded != was;
  }
};

// One function's parameters written and read through (by index), whether some store went
// through a pointer of unknown origin, and why the analysis was conservative.
struct Summary {
  std::vector<bool> written, read;
  bool any_pointer_written = false;
  std::vector<std::string> notes;
};

// A function that calls itself: every parameter treated as written.
inline Summary recursive_summary(size_t params) {
  Summary s;
  s.written.assign(params, true);
  s.read.assign(params, true);
  s.notes = {"calls itself (recursion): every parameter treated as written"};
  return s;
}

// A kernel's result: only parameters that can hold a pointer (`pointer[i]`) are written or read.
inline KernelMutations kernel_result(const std::string& name, std::vector<KernelParam> params,
                                     const std::vector<bool>& pointer, const Summary& s) {
  KernelMutations k;
  k.entry = name;
  k.params = std::move(params);
  for (size_t i = 0; i < k.params.size(); ++i) {
    k.params[i].written = pointer[i] && (s.written[i] || s.any_pointer_written);
    k.params[i].read = pointer[i] && s.read[i];
  }
  k.conservative = s.notes;
  return k;
}

}  // namespace toroid::codegen::cuda::detail
