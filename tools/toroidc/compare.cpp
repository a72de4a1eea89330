#include "compare.h"

#include <algorithm>
#include <cmath>

namespace toroidc {

using toroid::DType;
using toroid::ops::HostTensor;
using toroid::ops::RtValue;

namespace {

double tolerance(DType d) {
  switch (d) {
    case DType::Float64: return 1e-9;
    case DType::Float32: return 1e-4;
    case DType::Float16: return 2e-3;
    case DType::BFloat16: return 1.6e-2;
    default: return 0;
  }
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void fail(Comparison& c, const std::string& what) {
  if (c.match) c.first_mismatch = what;
  c.match = false;
}

void compare_tensor(Comparison& c, const std::string& name, const HostTensor& got, const HostTensor& want,
                    DType computed_in, double magnitude) {
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    fail(c, name + ": got " + got.describe() + ", expected " + want.describe());
    return;
  }
  bool floating = toroid::is_floating(want.dtype());
  double tol = std::max(tolerance(want.dtype()), floating ? tolerance(computed_in) : 0.0);
  for (int64_t i = 0; i < want.numel(); ++i) {
    std::string at = name + "[" + std::to_string(i) + "]";
    if (!floating) {
      int64_t g = got.get_int(i), w = want.get_int(i);
      if (g != w) fail(c, at + ": got " + std::to_string(g) + ", expected " + std::to_string(w));
      continue;
    }
    double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) fail(c, at + ": got " + num(g) + ", expected " + num(w));
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) fail(c, at + ": got " + num(g) + ", expected " + num(w));
      continue;
    }
    double abs_err = std::fabs(g - w);
    double rel_err = abs_err / std::max(std::fabs(w), 1e-30);
    c.max_abs_err = std::max(c.max_abs_err, abs_err);
    if (std::fabs(w) > tol) c.max_rel_err = std::max(c.max_rel_err, rel_err);
    if (abs_err > tol * magnitude + tol * std::fabs(w)) fail(c, at + ": got " + num(g) + ", expected " + num(w));
  }
}

}  // namespace

DType least_precise_float(const toroid::Graph& g) {
  DType least = DType::Float64;
  for (const toroid::Node* n : g.nodes())
    for (const toroid::Value* v : n->results())
      if (v->is_tensor() && v->has_meta() && toroid::is_floating(v->meta().dtype) &&
          tolerance(v->meta().dtype) > tolerance(least))
        least = v->meta().dtype;
  return least;
}

double input_magnitude(const std::vector<RtValue>& inputs) {
  double m = 1.0;
  for (const RtValue& v : inputs) {
    if (!v.is_tensor() || !toroid::is_floating(v.tensor().dtype())) continue;
    const HostTensor& t = v.tensor();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (double x = std::fabs(t.get_double(i)); std::isfinite(x)) m = std::max(m, x);
  }
  return m;
}

Comparison compare_outputs(const std::vector<RtValue>& got, const std::vector<RtValue>& want, DType computed_in,
                           double magnitude) {
  Comparison c;
  if (got.size() != want.size()) {
    fail(c, std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size()));
    return c;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    std::string name = "out" + std::to_string(i);
    const RtValue& g = got[i];
    const RtValue& w = want[i];
    if (w.is_tensor() != g.is_tensor()) {
      fail(c, name + ": tensor and non-tensor");
    } else if (w.is_tensor()) {
      compare_tensor(c, name, g.tensor(), w.tensor(), computed_in, std::max(magnitude, 1.0));
    } else if (w.is_number() != g.is_number() || w.is_none() != g.is_none()) {
      fail(c, name + ": got " + (g.is_number() ? num(g.to_double()) : "a non-number") + ", expected " +
                  (w.is_number() ? num(w.to_double()) : "a non-number"));
    } else if (w.is_number() && g.is_number() && w.to_double() != g.to_double()) {
      fail(c, name + ": got " + num(g.to_double()) + ", expected " + num(w.to_double()));
    }
  }
  return c;
}

}  // namespace toroidc
