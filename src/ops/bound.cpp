// Binding a graph call's arguments to its schema (bind_positions, BoundArgs).
#include <algorithm>

#include "toroid/ops/impl.h"
#include "toroid/support/error.h"

namespace toroid::ops {
namespace {

std::string arg_desc(const OpSchema& s, std::string_view name) {
  return "argument '" + std::string(name) + "' of " + s.qualified_name();
}


[[noreturn]] void mismatch(const OpSchema& s, std::string_view name, const char* expected, const Argument& got) {
  user_error(arg_desc(s, name) + " must be " + expected + ", not " + argument_kind_name(got) + " (" + describe_argument(got) +
             ")");
}

// The scalar expression of a number argument (constant or scalar value); null when unknown.
std::optional<SymExpr> number_of(const Argument& a) {
  if (a.is_scalar()) return a.scalar();
  if (a.is_value() && !a.value()->is_tensor()) return a.value()->scalar_value();
  return std::nullopt;
}


}  // namespace

std::vector<int> bind_positions(const OpSchema& schema, size_t num_positional,
                                std::span<const std::string> kwarg_names) {
  const std::string op = schema.qualified_name();
  size_t positional_max = 0;
  while (positional_max < schema.arguments.size() && !schema.arguments[positional_max].kwarg_only) ++positional_max;
  if (num_positional > positional_max)
    user_error(op + " takes at most " + std::to_string(positional_max) + " positional arguments but " +
               std::to_string(num_positional) + " were given");
  std::vector<int> where(schema.arguments.size(), -1);
  for (size_t i = 0; i < num_positional; ++i) where[i] = static_cast<int>(i);
  for (size_t k = 0; k < kwarg_names.size(); ++k) {
    std::optional<size_t> idx = schema.argument_index(kwarg_names[k]);
    if (!idx) user_error("unknown keyword argument '" + kwarg_names[k] + "' for " + op);
    if (where[*idx] != -1) user_error(arg_desc(schema, kwarg_names[k]) + " is given twice");
    where[*idx] = -static_cast<int>(k) - 2;
  }
  for (size_t i = 0; i < schema.arguments.size(); ++i)
    if (where[i] == -1 && !schema.arguments[i].has_default)
      user_error("missing required argument '" + schema.arguments[i].name + "' of " + op);
  return where;
}

BoundArgs::BoundArgs(const OpSchema& schema, std::span<const Argument> args, std::span<const Kwarg> kwargs)
    : schema_(&schema) {
  std::vector<std::string> names;
  names.reserve(kwargs.size());
  for (const Kwarg& k : kwargs) names.push_back(k.name);
  std::vector<int> where = bind_positions(schema, args.size(), names);
  values_.reserve(where.size());
  for (size_t i = 0; i < where.size(); ++i) {
    int w = where[i];
    if (w >= 0) values_.push_back(args[static_cast<size_t>(w)]);
    else if (w == -1) values_.push_back(schema.arguments[i].default_value);
    else values_.push_back(kwargs[static_cast<size_t>(-w - 2)].value);
  }
}

const Argument& BoundArgs::get(std::string_view name) const {
  std::optional<size_t> idx = schema_->argument_index(name);
  if (!idx) TOROID_INTERNAL_ERROR(schema_->qualified_name() + " has no argument '" + std::string(name) + "'");
  return values_[*idx];
}

Value* BoundArgs::tensor(std::string_view name) const {
  const Argument& a = get(name);
  if (a.is_none()) return nullptr;
  if (a.is_value() && a.value()->is_tensor()) return a.value();
  mismatch(*schema_, name, "a Tensor", a);
}

std::vector<Value*> BoundArgs::tensor_list(std::string_view name) const {
  const Argument& a = get(name);
  std::vector<Value*> out;
  if (a.is_none()) return out;
  if (!a.is_list()) mismatch(*schema_, name, "a list of Tensors", a);
  for (const Argument& e : a.list()) {
    if (e.is_none()) out.push_back(nullptr);
    else if (e.is_value() && e.value()->is_tensor()) out.push_back(e.value());
    else mismatch(*schema_, name, "a list of Tensors", a);
  }
  return out;
}

SymExpr BoundArgs::scalar(std::string_view name) const {
  const Argument& a = get(name);
  if (a.is_none()) return {};
  if (std::optional<SymExpr> e = number_of(a)) return *e;
  mismatch(*schema_, name, "a number", a);
}

std::vector<SymExpr> BoundArgs::int_list(std::string_view name) const {
  const Argument& a = get(name);
  std::optional<size_t> idx = schema_->argument_index(name);
  const SchemaType& t = schema_->arguments[*idx].type;
  auto element = [&](const Argument& e, size_t i) {
    std::optional<SymExpr> v = number_of(e);
    if (!v) mismatch(*schema_, name, "a list of ints", a);
    if (v->is_null())
      user_error("element " + std::to_string(i) + " of " + arg_desc(*schema_, name) + " has no known value");
    if (!v->is_int()) mismatch(*schema_, name, "a list of ints", a);
    return *v;
  };
  std::vector<SymExpr> out;
  if (a.is_none()) return out;
  if (a.is_list()) {
    for (size_t i = 0; i < a.list().size(); ++i) out.push_back(element(a.list()[i], i));
    return out;
  }
  SymExpr v = element(a, 0);
  out.assign(static_cast<size_t>(t.list_size.value_or(1)), v);
  return out;
}

bool BoundArgs::is_none(std::string_view name) const { return get(name).is_none(); }

std::optional<DType> BoundArgs::dtype(std::string_view name) const {
  const Argument& a = get(name);
  if (a.is_none()) return std::nullopt;
  if (a.kind() == Argument::Kind::DType) return a.dtype();
  if (a.is_scalar())
    if (std::optional<int64_t> c = a.scalar().as_int())
      if (std::optional<DType> d = dtype_from_scalar_type_code(*c)) return d;
  mismatch(*schema_, name, "a ScalarType", a);
}

std::optional<Device> BoundArgs::device(std::string_view name) const {
  const Argument& a = get(name);
  if (a.is_none()) return std::nullopt;
  if (a.kind() == Argument::Kind::Device) return a.device();
  mismatch(*schema_, name, "a Device", a);
}

std::optional<MemoryFormat> BoundArgs::memory_format(std::string_view name) const {
  const Argument& a = get(name);
  if (a.is_none()) return std::nullopt;
  if (a.kind() == Argument::Kind::MemoryFormat) return a.memory_format();
  mismatch(*schema_, name, "a MemoryFormat", a);
}

std::string BoundArgs::str(std::string_view name) const {
  const Argument& a = get(name);
  if (a.kind() == Argument::Kind::String) return a.str();
  mismatch(*schema_, name, "a str", a);
}

}  // namespace toroid::ops
