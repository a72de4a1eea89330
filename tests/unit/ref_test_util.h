// Helpers for the reference-kernel tests: build tensors, call a kernel by overload name with
// schema defaults filled in, read values back.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "toroid/ops/host_tensor.h"
#include "toroid/ops/registry.h"
#include "toroid/ops/rt_value.h"
#include "toroid/support/error.h"

namespace reftest {

using namespace toroid;
using namespace toroid::ops;

inline HostTensor T(DType d, std::vector<int64_t> sizes, std::vector<double> vals) {
  HostTensor t = HostTensor::zeros(d, std::move(sizes));
  if (static_cast<int64_t>(vals.size()) != t.numel()) ADD_FAILURE() << "T(): wrong number of values";
  for (size_t i = 0; i < vals.size() && static_cast<int64_t>(i) < t.numel(); ++i) t.set_double(static_cast<int64_t>(i), vals[i]);
  return t;
}
inline HostTensor F32(std::vector<int64_t> s, std::vector<double> v) { return T(DType::Float32, std::move(s), std::move(v)); }
inline HostTensor I64(std::vector<int64_t> s, std::vector<double> v) { return T(DType::Int64, std::move(s), std::move(v)); }

inline std::vector<double> vals(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.get_double(i));
  return out;
}
inline std::vector<int64_t> ivals(const HostTensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.get_int(i));
  return out;
}

inline bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

inline RtValue I(int64_t v) { return RtValue::integer(v); }
inline RtValue D(double v) { return RtValue::floating(v); }
inline RtValue B(bool v) { return RtValue::boolean(v); }
inline RtValue S(std::string s) { return RtValue::string(std::move(s)); }
inline RtValue L(std::vector<int64_t> v) {
  RtValue::List l;
  for (int64_t x : v) l.push_back(RtValue::integer(x));
  return RtValue(std::move(l));
}

inline RtValue from_default(const Argument& a) {
  switch (a.kind()) {
    case Argument::Kind::None: return {};
    case Argument::Kind::Scalar: {
      SymExpr e = a.scalar();
      if (e.is_bool()) return RtValue::boolean(e.bool_value());
      if (e.is_float()) return RtValue::floating(e.float_value());
      return RtValue::integer(e.int_value());
    }
    case Argument::Kind::String: return RtValue::string(a.str());
    case Argument::Kind::DType: return RtValue(a.dtype());
    case Argument::Kind::Device: return RtValue(a.device());
    case Argument::Kind::Layout: return RtValue(a.layout());
    case Argument::Kind::MemoryFormat: return RtValue(a.memory_format());
    case Argument::Kind::List: {
      RtValue::List l;
      for (const Argument& e : a.list()) l.push_back(from_default(e));
      return RtValue(std::move(l));
    }
    default: return {};
  }
}

struct Ctx {
  uint64_t offset = 0;
  KernelContext ctx{1234, &offset};
};

inline std::vector<RtValue> call(const std::string& op, std::vector<RtValue> pos,
                                 std::vector<std::pair<std::string, RtValue>> kw = {}, KernelContext* ctx = nullptr) {
  const OpEntry* e = OpRegistry::global().find(op);
  if (!e) throw std::runtime_error("no op " + op);
  if (!e->kernel) throw std::runtime_error("no kernel for " + op);
  std::vector<RtValue> values;
  for (size_t i = 0; i < e->schema.arguments.size(); ++i) {
    const SchemaArgument& sa = e->schema.arguments[i];
    if (i < pos.size()) {
      values.push_back(pos[i]);
      continue;
    }
    bool found = false;
    for (auto& [k, v] : kw)
      if (k == sa.name) {
        values.push_back(v);
        found = true;
      }
    if (!found) values.push_back(from_default(sa.default_value));
  }
  RtArgs args(e->schema, std::move(values));
  Ctx local;
  return run_kernel(*e, args, ctx ? *ctx : local.ctx);
}

inline HostTensor call1(const std::string& op, std::vector<RtValue> pos,
                        std::vector<std::pair<std::string, RtValue>> kw = {}, KernelContext* ctx = nullptr) {
  return call(op, std::move(pos), std::move(kw), ctx).at(0).tensor();
}

// The message of the UserError thrown by fn, or "no error".
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace reftest
