// The CPU's kernels for the library calls of fallback lines (loop/library.h's table, its cpu
// column): nonzero, cumsum / cumprod, index_put, the scatters, index_add, sort and topk, on host
// memory with typed pointers instead of the reference kernels' per-element index arithmetic.
// Each runs in index order on one thread, so its results never vary between runs.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/host_tensor.h"

namespace toroid::runtime {

// What a kernel needs of the executor running its line.
struct CpuCallHooks {
  std::function<ops::HostTensor(const codegen::wrapper::TensorRef&)> view;  // an operand
  std::function<int64_t(SymExpr)> eval_int;
  std::function<double(SymExpr)> eval_real;
  // Result `r` with the sizes the kernel found: checked against the graph (and binding its
  // data-dependent sizes for the call), allocated unless a line did, as a view.
  std::function<ops::HostTensor(const codegen::wrapper::ReferenceCall::Result& r, const std::vector<int64_t>& sizes)>
      result;
};

// Runs fallback line `l` (a library call of the CPU's table); false when its operands are not
// ones the kernel takes (before it touched any result: the reference kernel runs it then).
// An index out of range is a UserError at the node.
bool run_cpu_library(const codegen::wrapper::Line& l, const CpuCallHooks& h);

}  // namespace toroid::runtime
