// max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and their backwards as generated code
// (loop/lower_pool.cpp) against their reference kernels,
// element for element: padding, dilation, ceil mode, 3-d inputs, channels-last, bf16, symbolic
// sizes, and the values PyTorch's kernels treat specially (NaN wins, ties keep the first, an
// all -inf window keeps its first in-bounds position).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "toroid/driver/compile.h"
#include "toroid/graph/inputs.h"
#include "toroid/interp/interpreter.h"
#include "toroid/support/error.h"

namespace {

using toroid::ops::HostTensor;
using toroid::ops::RtValue;
using toroid::SymExpr;

struct Case {
  const char* name;
  const char* graph;
  std::vector<int64_t> input;  // its sizes for the run
};

const Case kCases[] = {
    {"padded stride 2", R"(graph @g functional {
  %x = input : f32[2, 3, 9, 9]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1]) : f32[2, 3, 5, 5], i64[2, 3, 5, 5]
  output %v, %i
})",
     {2, 3, 9, 9}},
    {"stride defaults to the kernel", R"(graph @g functional {
  %x = input : f32[2, 3, 8, 8]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [2, 2]) : f32[2, 3, 4, 4], i64[2, 3, 4, 4]
  output %v, %i
})",
     {2, 3, 8, 8}},
    {"dilated", R"(graph @g functional {
  %x = input : f32[1, 2, 9, 10]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [1, 1], [1, 1], [2, 2]) : f32[1, 2, 7, 8], i64[1, 2, 7, 8]
  output %v, %i
})",
     {1, 2, 9, 10}},
    {"ceil mode", R"(graph @g functional {
  %x = input : f32[2, 2, 8, 8]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1], [1, 1], true) : f32[2, 2, 5, 5], i64[2, 2, 5, 5]
  output %v, %i
})",
     {2, 2, 8, 8}},
    {"3-d input, uneven window", R"(graph @g functional {
  %x = input : f32[3, 7, 6]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [2, 3], [1, 2], [1, 0]) : f32[3, 8, 2], i64[3, 8, 2]
  output %v, %i
})",
     {3, 7, 6}},
    {"channels last", R"(graph @g functional {
  %x = input : f32[2, 3, 8, 8]{strides=[192, 1, 24, 3]}
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1]) : f32[2, 3, 4, 4]{strides=[48, 1, 12, 3]}, i64[2, 3, 4, 4]{strides=[48, 1, 12, 3]}
  output %v, %i
})",
     {2, 3, 8, 8}},
    {"bf16, fused with its producer", R"(graph @g functional {
  %x = input : bf16[2, 3, 8, 8]
  %r = aten.relu.default(%x) : bf16[2, 3, 8, 8]
  %v, %i = aten.max_pool2d_with_indices.default(%r, [3, 3], [2, 2], [1, 1]) : bf16[2, 3, 4, 4], i64[2, 3, 4, 4]
  output %v, %i
})",
     {2, 3, 8, 8}},
    {"symbolic sizes", R"(graph @g functional {
  sym s0 : hint=9, range=[2, inf]
  %x = input : f32[2, 3, s0, s0]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1]) : f32[2, 3, (s0 - 1)//2 + 1, (s0 - 1)//2 + 1], i64[2, 3, (s0 - 1)//2 + 1, (s0 - 1)//2 + 1]
  output %v, %i
})",
     {2, 3, 12, 12}},
};

// Values with ties (few distinct ones), NaNs and infinities scattered through.
HostTensor input_for(const toroid::Graph& g, const std::vector<int64_t>& sizes) {
  const toroid::TensorMeta& m = toroid::graph_inputs(g).at(0)->meta();
  HostTensor x = HostTensor::zeros(m.dtype, sizes);
  bool channels_last = m.strides.size() == 4 && m.strides[1].as_int() == std::optional<int64_t>(1);
  if (channels_last) x = HostTensor::empty_strided(m.dtype, sizes, {sizes[1] * sizes[2] * sizes[3], 1, sizes[1] * sizes[3], sizes[1]});
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = static_cast<double>((i * 7919) % 5) - 2.0;  // -2..2: many ties
    if (i % 37 == 5) v = std::nan("");
    if (i % 29 == 3) v = -inf;
    if (i % 41 == 7) v = inf;
    x.set_double(i, v);
  }
  return x;
}

// Compiles case `c` for the CPU, checks that no reference kernel is left, runs it on an input
// from input_for (its values made finite when `finite`) and, for a graph with a second input, a
// gradient of quarters, and compares every result with the interpreter's: NaN where it has NaN,
// within `tol` (f32) or `tol_bf16` elsewhere (0: exactly).
void expect_matches_reference(const Case& c, bool finite, double tol, double tol_bf16) {
  toroid::driver::CompileOptions o;
  auto m = toroid::driver::CompiledModule::compile(c.graph, "pool.tir", o);
  for (const auto& l : m->current().wrapper.lines)
    EXPECT_NE(l.kind, toroid::codegen::wrapper::Line::Kind::FallbackCall) << c.name << ": still the reference kernel";
  HostTensor x = input_for(m->graph(), c.input);
  if (finite)
    for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(0.3 * static_cast<double>(i)));
  std::vector<RtValue> in = {RtValue(x)};
  std::vector<const toroid::Value*> inputs = toroid::graph_inputs(m->graph());
  if (inputs.size() > 1) {
    std::vector<int64_t> sizes;
    for (SymExpr e : inputs[1]->meta().sizes) sizes.push_back(*e.as_int());
    HostTensor go = HostTensor::zeros(inputs[1]->meta().dtype, sizes);
    for (int64_t i = 0; i < go.numel(); ++i) go.set_double(i, 0.25 * static_cast<double>(i % 13) - 1.0);
    in.push_back(RtValue(go));
  }
  std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
  std::vector<RtValue> got = m->run(in);
  ASSERT_EQ(got.size(), want.size()) << c.name;
  for (size_t r = 0; r < got.size(); ++r) {
    const HostTensor &g = got[r].tensor(), &e = want[r].tensor();
    ASSERT_EQ(g.sizes(), e.sizes()) << c.name;
    double t = g.dtype() == toroid::DType::BFloat16 ? tol_bf16 : tol;
    for (int64_t k = 0; k < g.numel(); ++k) {
      double gv = g.get_double(k), ev = e.get_double(k);
      if (std::isnan(ev)) EXPECT_TRUE(std::isnan(gv)) << c.name << " result " << r << " element " << k;
      else if (t == 0 || std::isinf(ev)) EXPECT_EQ(gv, ev) << c.name << " result " << r << " element " << k;
      else EXPECT_NEAR(gv, ev, t) << c.name << " result " << r << " element " << k;
    }
  }
}

TEST(GeneratedMaxPool, MatchesTheReferenceKernel) {
  for (const Case& c : kCases) expect_matches_reference(c, false, 0, 0);
}

const Case kAvgCases[] = {
    {"avg, padding counted", R"(graph @g functional {
  %x = input : f32[2, 3, 9, 9]
  %y = aten.avg_pool2d.default(%x, [3, 3], [2, 2], [1, 1]) : f32[2, 3, 5, 5]
  output %y
})",
     {2, 3, 9, 9}},
    {"avg, padding not counted, ceil mode", R"(graph @g functional {
  %x = input : f32[2, 2, 8, 8]
  %y = aten.avg_pool2d.default(%x, [3, 3], [2, 2], [1, 1], true, false) : f32[2, 2, 5, 5]
  output %y
})",
     {2, 2, 8, 8}},
    {"avg, divisor override, 3-d, uneven", R"(graph @g functional {
  %x = input : f32[3, 7, 6]
  %y = aten.avg_pool2d.default(%x, [2, 3], [1, 2], [1, 0], false, true, 4) : f32[3, 8, 2]
  output %y
})",
     {3, 7, 6}},
    {"avg, bf16 channels last", R"(graph @g functional {
  %x = input : bf16[2, 3, 8, 8]{strides=[192, 1, 24, 3]}
  %y = aten.avg_pool2d.default(%x, [2, 2]) : bf16[2, 3, 4, 4]{strides=[48, 1, 12, 3]}
  output %y
})",
     {2, 3, 8, 8}},
};

TEST(GeneratedAvgPool, MatchesTheReferenceKernel) {
  // float sums against the reference's double ones
  for (const Case& c : kAvgCases) expect_matches_reference(c, true, 1e-6, 1e-2);
}

const Case kAvgBackwardCases[] = {
    {"avg backward, overlapping, padding counted", R"(graph @g functional {
  %x = input : f32[2, 3, 9, 9]
  %go = input : f32[2, 3, 5, 5]
  %gx = aten.avg_pool2d_backward.default(%go, %x, [3, 3], [2, 2], [1, 1], false, true, None) : f32[2, 3, 9, 9]
  output %gx
})",
     {2, 3, 9, 9}},
    {"avg backward, padding not counted, ceil mode", R"(graph @g functional {
  %x = input : f32[2, 2, 8, 8]
  %go = input : f32[2, 2, 5, 5]
  %gx = aten.avg_pool2d_backward.default(%go, %x, [3, 3], [2, 2], [1, 1], true, false, None) : f32[2, 2, 8, 8]
  output %gx
})",
     {2, 2, 8, 8}},
    {"avg backward, divisor override, 3-d bf16, stride 1", R"(graph @g functional {
  %x = input : bf16[3, 7, 6]
  %go = input : bf16[3, 8, 4]
  %gx = aten.avg_pool2d_backward.default(%go, %x, [2, 3], [1, 1], [1, 0], false, true, 4) : bf16[3, 7, 6]
  output %gx
})",
     {3, 7, 6}},
};

TEST(GeneratedAvgPool, BackwardMatchesTheReferenceKernel) {
  for (const Case& c : kAvgBackwardCases) expect_matches_reference(c, true, 1e-6, 1e-2);
}

const Case kAdaptiveCases[] = {
    {"adaptive, global", R"(graph @g functional {
  %x = input : f32[2, 3, 7, 7]
  %y = aten._adaptive_avg_pool2d.default(%x, [1, 1]) : f32[2, 3, 1, 1]
  output %y
})",
     {2, 3, 7, 7}},
    {"adaptive, uneven windows", R"(graph @g functional {
  %x = input : f32[2, 3, 10, 9]
  %y = aten._adaptive_avg_pool2d.default(%x, [3, 4]) : f32[2, 3, 3, 4]
  output %y
})",
     {2, 3, 10, 9}},
    {"adaptive, 3-d bf16, more outputs than inputs", R"(graph @g functional {
  %x = input : bf16[3, 5, 6]
  %y = aten._adaptive_avg_pool2d.default(%x, [7, 8]) : bf16[3, 7, 8]
  output %y
})",
     {3, 5, 6}},
    {"adaptive backward, uneven windows", R"(graph @g functional {
  %x = input : f32[2, 3, 10, 9]
  %go = input : f32[2, 3, 3, 4]
  %gx = aten._adaptive_avg_pool2d_backward.default(%go, %x) : f32[2, 3, 10, 9]
  output %gx
})",
     {2, 3, 10, 9}},
    {"adaptive backward, more outputs than inputs", R"(graph @g functional {
  %x = input : f32[1, 2, 5, 6]
  %go = input : f32[1, 2, 7, 8]
  %gx = aten._adaptive_avg_pool2d_backward.default(%go, %x) : f32[1, 2, 5, 6]
  output %gx
})",
     {1, 2, 5, 6}},
    {"adaptive backward, global bf16", R"(graph @g functional {
  %x = input : bf16[2, 3, 7, 7]
  %go = input : bf16[2, 3, 1, 1]
  %gx = aten._adaptive_avg_pool2d_backward.default(%go, %x) : bf16[2, 3, 7, 7]
  output %gx
})",
     {2, 3, 7, 7}},
};

TEST(GeneratedAdaptiveAvgPool, MatchesTheReferenceKernel) {
  for (const Case& c : kAdaptiveCases) expect_matches_reference(c, true, 1e-6, 1e-2);
}

TEST(GeneratedAvgPool, AZeroDivisorIsAnErrorAtTheNode) {
  toroid::driver::CompileOptions o;
  try {
    toroid::driver::CompiledModule::compile(R"(graph @g functional {
  %x = input : f32[1, 1, 4, 4]
  %y = aten.avg_pool2d.default(%x, [2, 2], [2, 2], [0, 0], false, true, 0) : f32[1, 1, 2, 2]
  output %y
})",
                                            "zero.tir", o);
    FAIL() << "expected an error";
  } catch (const toroid::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("zero.tir:3:3: error: aten.avg_pool2d.default: divisor must be not zero"),
              std::string::npos)
        << e.what();
  }
}

// The backward from the forward's own indices: overlapping windows (stride under the kernel,
// so an element gathers several gradients), dilation, ceil mode, 3-d inputs, bf16.
const Case kBackwardCases[] = {
    {"backward, overlapping windows", R"(graph @g functional {
  %x = input : f32[2, 3, 9, 9]
  %go = input : f32[2, 3, 5, 5]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1]) : f32[2, 3, 5, 5], i64[2, 3, 5, 5]
  %gx = aten.max_pool2d_with_indices_backward.default(%go, %x, [3, 3], [2, 2], [1, 1], [1, 1], false, %i) : f32[2, 3, 9, 9]
  output %gx
})",
     {2, 3, 9, 9}},
    {"backward, dilated stride 1", R"(graph @g functional {
  %x = input : f32[1, 2, 9, 10]
  %go = input : f32[1, 2, 7, 8]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [1, 1], [1, 1], [2, 2]) : f32[1, 2, 7, 8], i64[1, 2, 7, 8]
  %gx = aten.max_pool2d_with_indices_backward.default(%go, %x, [3, 3], [1, 1], [1, 1], [2, 2], false, %i) : f32[1, 2, 9, 10]
  output %gx
})",
     {1, 2, 9, 10}},
    {"backward, ceil mode", R"(graph @g functional {
  %x = input : f32[2, 2, 8, 8]
  %go = input : f32[2, 2, 5, 5]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [3, 3], [2, 2], [1, 1], [1, 1], true) : f32[2, 2, 5, 5], i64[2, 2, 5, 5]
  %gx = aten.max_pool2d_with_indices_backward.default(%go, %x, [3, 3], [2, 2], [1, 1], [1, 1], true, %i) : f32[2, 2, 8, 8]
  output %gx
})",
     {2, 2, 8, 8}},
    {"backward, 3-d bf16", R"(graph @g functional {
  %x = input : bf16[3, 7, 6]
  %go = input : bf16[3, 8, 2]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [2, 3], [1, 2], [1, 0]) : bf16[3, 8, 2], i64[3, 8, 2]
  %gx = aten.max_pool2d_with_indices_backward.default(%go, %x, [2, 3], [1, 2], [1, 0], [1, 1], false, %i) : bf16[3, 7, 6]
  output %gx
})",
     {3, 7, 6}},
};

TEST(GeneratedMaxPool, BackwardMatchesTheReferenceKernel) {
  // sums of a few quarters: exact in either order
  for (const Case& c : kBackwardCases) expect_matches_reference(c, false, 0, 0);
}

TEST(GeneratedMaxPool, LargeWindowsKeepTheReferenceKernel) {
  toroid::driver::CompileOptions o;
  o.compile = false;
  auto m = toroid::driver::CompiledModule::compile(R"(graph @g functional {
  %x = input : f32[1, 1, 16, 16]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [9, 9]) : f32[1, 1, 1, 1], i64[1, 1, 1, 1]
  output %v, %i
})",
                                                   "big.tir", o);
  bool fallback = false;
  for (const auto& l : m->current().wrapper.lines)
    fallback = fallback || l.kind == toroid::codegen::wrapper::Line::Kind::FallbackCall;
  EXPECT_TRUE(fallback) << "an 81-element window should not be unrolled";
  // Without reference kernels (the Python frontend's setting, which then runs the op in eager)
  // the error says why.
  o.reference_kernels = false;
  try {
    toroid::driver::CompiledModule::compile(R"(graph @g functional {
  %x = input : f32[1, 1, 16, 16]
  %v, %i = aten.max_pool2d_with_indices.default(%x, [9, 9]) : f32[1, 1, 1, 1], i64[1, 1, 1, 1]
  output %v, %i
})",
                                            "big.tir", o);
    FAIL() << "expected an error";
  } catch (const toroid::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("a window of 81 elements (windows of at most 64 are unrolled)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
