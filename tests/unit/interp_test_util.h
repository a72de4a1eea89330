// Helpers for the interpreter tests: parse a graph, build tensors, expect a UserError.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "toroid/graph/text.h"
#include "toroid/interp/interpreter.h"
#include "toroid/ops/host_tensor.h"
#include "toroid/ops/rt_value.h"
#include "toroid/support/error.h"

namespace interptest {

using namespace toroid;
using ops::HostTensor;
using ops::RtValue;

inline std::unique_ptr<Graph> parse(const std::string& text) { return parse_graph(text, "t.tir"); }

inline HostTensor tensor(DType d, std::vector<int64_t> sizes, std::vector<double> vals) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  EXPECT_EQ(static_cast<int64_t>(vals.size()), t.numel());
  for (size_t i = 0; i < vals.size() && static_cast<int64_t>(i) < t.numel(); ++i)
    t.set_double(static_cast<int64_t>(i), vals[i]);
  return t;
}
inline HostTensor f32(std::vector<int64_t> sizes, std::vector<double> vals) {
  return tensor(DType::Float32, std::move(sizes), std::move(vals));
}
// 0, 1, 2, ... as f32.
inline HostTensor iota(std::vector<int64_t> sizes) {
  HostTensor t = HostTensor::zeros(DType::Float32, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, static_cast<double>(i));
  return t;
}
inline std::vector<double> values(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.get_double(i));
  return out;
}

// The message of the UserError that fn throws ("" and a test failure if none).
template <class F>
std::string user_error_of(F&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace interptest
