// RtValue: a run-time value passed to and returned by reference kernels (the role of c10's
// IValue): a tensor, a number, a string, a dtype/device/layout/memory-format constant, a list,
// or None.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "toroid/graph/types.h"
#include "toroid/ops/host_tensor.h"
#include "toroid/sym/expr.h"

namespace toroid::ops {

class RtValue {
 public:
  using List = std::vector<RtValue>;
  enum class Kind : uint8_t { None, Tensor, Int, Float, Bool, String, DType, Device, Layout, MemoryFormat, List };

  RtValue() = default;
  RtValue(HostTensor t) : data_(std::move(t)) {}
  static RtValue integer(int64_t v) { RtValue r; r.data_ = v; return r; }
  static RtValue floating(double v) { RtValue r; r.data_ = v; return r; }
  static RtValue boolean(bool v) { RtValue r; r.data_ = v; return r; }
  static RtValue string(std::string s) { RtValue r; r.data_ = std::move(s); return r; }
  RtValue(DType d) : data_(d) {}
  RtValue(Device d) : data_(d) {}
  RtValue(Layout l) : data_(l) {}
  RtValue(MemoryFormat m) : data_(m) {}
  RtValue(List l) : data_(std::move(l)) {}

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_none() const { return kind() == Kind::None; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_number() const { return kind() == Kind::Int || kind() == Kind::Float || kind() == Kind::Bool; }

  const HostTensor& tensor() const { return std::get<HostTensor>(data_); }
  int64_t to_int() const;      // Int or Bool
  double to_double() const;    // Int, Float or Bool
  bool to_bool() const;        // Bool (or Int 0/1)
  const std::string& str() const { return std::get<std::string>(data_); }
  DType dtype() const { return std::get<DType>(data_); }
  Device device() const { return std::get<Device>(data_); }
  Layout layout() const { return std::get<Layout>(data_); }
  MemoryFormat memory_format() const { return std::get<MemoryFormat>(data_); }
  const List& list() const { return std::get<List>(data_); }

 private:
  std::variant<std::monostate, HostTensor, int64_t, double, bool, std::string, DType, Device, Layout, MemoryFormat, List>
      data_;
};

// A concrete scalar (an evaluated SymExpr) as a run-time number.
RtValue rt_scalar(const sym::Scalar& s);

}  // namespace toroid::ops
