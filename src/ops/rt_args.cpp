// RtArgs: a kernel's arguments in schema order, with typed accessors whose errors name the op
// and the argument.
#include "toroid/support/error.h"
#include "toroid/ops/impl.h"

namespace toroid::ops {

namespace {
const char* kind_name(RtValue::Kind k) {
  switch (k) {
    case RtValue::Kind::None: return "None";
    case RtValue::Kind::Tensor: return "a Tensor";
    case RtValue::Kind::Int: return "an int";
    case RtValue::Kind::Float: return "a float";
    case RtValue::Kind::Bool: return "a bool";
    case RtValue::Kind::String: return "a string";
    case RtValue::Kind::DType: return "a dtype";
    case RtValue::Kind::Device: return "a device";
    case RtValue::Kind::Layout: return "a layout";
    case RtValue::Kind::MemoryFormat: return "a memory format";
    case RtValue::Kind::List: return "a list";
  }
  return "?";
}

}  // namespace

RtArgs::RtArgs(const OpSchema& schema, std::vector<RtValue> values) : schema_(&schema), values_(std::move(values)) {
  if (values_.size() != schema.arguments.size())
    TOROID_INTERNAL_ERROR(schema.qualified_name() + ": " + std::to_string(values_.size()) + " values for " +
                          std::to_string(schema.arguments.size()) + " arguments");
}

const RtValue& RtArgs::get(std::string_view name) const {
  auto i = schema_->argument_index(name);
  if (!i) TOROID_INTERNAL_ERROR(schema_->qualified_name() + " has no argument '" + std::string(name) + "'");
  return values_[*i];
}

namespace {
[[noreturn]] void bad(const OpSchema& s, std::string_view name, const char* expected, const RtValue& v) {
  user_error(s.qualified_name() + ": argument '" + std::string(name) + "': expected " + expected + ", got " +
             kind_name(v.kind()));
}
}  // namespace

const HostTensor& RtArgs::tensor(std::string_view name) const {
  const RtValue& v = get(name);
  if (!v.is_tensor() || !v.tensor().defined()) bad(*schema_, name, "a Tensor", v);
  return v.tensor();
}

const HostTensor* RtArgs::opt_tensor(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.is_none()) return nullptr;
  if (!v.is_tensor()) bad(*schema_, name, "a Tensor or None", v);
  return v.tensor().defined() ? &v.tensor() : nullptr;
}

std::vector<HostTensor> RtArgs::tensor_list(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.kind() != RtValue::Kind::List) bad(*schema_, name, "a list of Tensors", v);
  std::vector<HostTensor> out;
  for (const RtValue& e : v.list()) {
    if (e.is_none()) out.emplace_back();
    else if (e.is_tensor()) out.push_back(e.tensor());
    else bad(*schema_, name, "a list of Tensors", e);
  }
  return out;
}

int64_t RtArgs::to_int(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.kind() != RtValue::Kind::Int && v.kind() != RtValue::Kind::Bool) bad(*schema_, name, "an int", v);
  return v.to_int();
}

std::optional<int64_t> RtArgs::opt_int(std::string_view name) const {
  if (get(name).is_none()) return std::nullopt;
  return to_int(name);
}

double RtArgs::to_double(std::string_view name) const {
  const RtValue& v = get(name);
  if (!v.is_number()) bad(*schema_, name, "a number", v);
  return v.to_double();
}

bool RtArgs::to_bool(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.kind() == RtValue::Kind::Bool) return v.to_bool();
  if (v.kind() == RtValue::Kind::Int) return v.to_int() != 0;
  bad(*schema_, name, "a bool", v);
}

std::vector<int64_t> RtArgs::int_list(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.kind() == RtValue::Kind::Int) {
    auto i = schema_->argument_index(name);
    const auto& ty = schema_->arguments[*i].type;
    size_t n = ty.list_size ? static_cast<size_t>(*ty.list_size) : 1;
    return std::vector<int64_t>(n, v.to_int());
  }
  if (v.kind() != RtValue::Kind::List) bad(*schema_, name, "a list of ints", v);
  std::vector<int64_t> out;
  for (const RtValue& e : v.list()) {
    if (e.kind() != RtValue::Kind::Int && e.kind() != RtValue::Kind::Bool) bad(*schema_, name, "a list of ints", e);
    out.push_back(e.to_int());
  }
  return out;
}

std::optional<std::vector<int64_t>> RtArgs::opt_int_list(std::string_view name) const {
  if (get(name).is_none()) return std::nullopt;
  return int_list(name);
}

bool RtArgs::is_none(std::string_view name) const { return get(name).is_none(); }

std::optional<DType> RtArgs::dtype(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.is_none()) return std::nullopt;
  if (v.kind() == RtValue::Kind::DType) return v.dtype();
  if (v.kind() == RtValue::Kind::Int) {
    if (auto d = dtype_from_scalar_type_code(v.to_int())) return d;
  }
  bad(*schema_, name, "a dtype", v);
}

std::optional<MemoryFormat> RtArgs::memory_format(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.is_none()) return std::nullopt;
  if (v.kind() != RtValue::Kind::MemoryFormat) bad(*schema_, name, "a memory format", v);
  return v.memory_format();
}

std::string RtArgs::str(std::string_view name) const {
  const RtValue& v = get(name);
  if (v.kind() != RtValue::Kind::String) bad(*schema_, name, "a string", v);
  return v.str();
}

}  // namespace toroid::ops
