// ATen operator schemas, parsed from the strings PyTorch prints, e.g.
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//   aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
//   aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/graph/graph.h"

namespace toroid::ops {

struct SchemaType {
  enum class Base : uint8_t {
    Tensor, Int, SymInt, Float, Bool, Str, Scalar, ScalarType, Layout, Device, MemoryFormat,
    Generator, Dimname, Storage, Stream, Complex, Any, SymFloat, SymBool,
  };
  Base base = Base::Tensor;
  bool optional = false;               // T? (or T[]? for the list as a whole)
  bool is_list = false;                // T[] or T[N]
  std::optional<int64_t> list_size;    // T[N]
  bool element_optional = false;       // T?[] (for example Tensor?[] indices)
  // Alias annotation: Tensor(a) -> alias_set "a"; Tensor(a!) also alias_write; Tensor(a -> *)
  // has alias_set "a" and alias_after "*".
  std::string alias_set;
  bool alias_write = false;
  std::string alias_after;

  bool is_tensor_like() const { return base == Base::Tensor; }
  // Prints back in schema syntax: "Tensor(a!)", "int[2]", "Tensor?[]", "SymInt[]?".
  std::string str() const;
};

const char* schema_base_name(SchemaType::Base b);
// The schema-syntax kind of a graph argument, for messages: "Tensor", "int", "str", "list", "None"...
const char* argument_kind_name(const Argument& a);

struct SchemaArgument {
  std::string name;  // empty for unnamed returns
  SchemaType type;
  bool kwarg_only = false;
  bool has_default = false;
  std::string default_text;  // as written in the schema, e.g. "1", "[0, 0]", "None", "long"
  Argument default_value;    // parsed default (None when has_default is false)
};

struct OpSchema {
  std::string ns;        // "aten"
  std::string name;      // "add"
  std::string overload;  // "Tensor"; "default" when the schema has none
  std::vector<SchemaArgument> arguments;
  std::vector<SchemaArgument> returns;
  bool returns_list = false;  // a single list return such as Tensor[] (one graph result per element)

  // "aten.add.Tensor": the overload name the graph IR uses.
  std::string qualified_name() const;
  // Indices of arguments annotated as written (Tensor(a!)).
  std::vector<size_t> mutated_arguments() const;
  bool is_mutable() const { return !mutated_arguments().empty(); }
  // Index of the argument named `name`, or nullopt.
  std::optional<size_t> argument_index(std::string_view name) const;
  // The schema in PyTorch's syntax (normalized spacing).
  std::string str() const;
};

// Parses one schema. A malformed string is a UserError whose location column points into it.
OpSchema parse_schema(std::string_view text, const std::string& origin = "<schema>");

}  // namespace toroid::ops
