#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "toroid/ops/schema.h"

using namespace toroid;
using namespace toroid::ops;

namespace {

struct TsvRow {
  std::string overload, treatment, schema;
};

std::vector<TsvRow> core_ops() {
  std::ifstream in(std::string(TOROID_SOURCE_DIR "/data/core_aten_ops.tsv"));
  std::vector<TsvRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    TsvRow r;
    std::getline(fields, r.overload, '\t');
    std::getline(fields, r.treatment, '\t');
    std::getline(fields, r.schema, '\t');
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST(Schema, ParsesEveryCoreOpAndPrintsItBack) {
  auto rows = core_ops();
  ASSERT_EQ(rows.size(), 193u);
  std::set<std::string> names;
  for (const TsvRow& r : rows) {
    SCOPED_TRACE(r.schema);
    OpSchema s = parse_schema(r.schema);
    EXPECT_EQ(s.qualified_name(), r.overload);
    EXPECT_EQ(s.str(), r.schema);
    names.insert(s.qualified_name());
  }
  EXPECT_EQ(names.size(), 193u);
}

TEST(Schema, ArgumentsDefaultsAndKwargOnly) {
  OpSchema s = parse_schema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.ns, "aten");
  EXPECT_EQ(s.name, "add");
  EXPECT_EQ(s.overload, "Tensor");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_TRUE(s.arguments[2].has_default);
  EXPECT_EQ(s.arguments[2].default_value.scalar(), SymExpr::integer(1));
  EXPECT_EQ(s.argument_index("other"), std::optional<size_t>(1));
  EXPECT_FALSE(s.is_mutable());
}

TEST(Schema, AliasAnnotations) {
  OpSchema out = parse_schema("aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  EXPECT_EQ(out.mutated_arguments(), std::vector<size_t>{2});
  EXPECT_EQ(out.returns[0].type.alias_set, "a");
  OpSchema split = parse_schema("aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  EXPECT_EQ(split.arguments[0].type.alias_after, "*");
  EXPECT_TRUE(split.returns_list);
  EXPECT_TRUE(split.returns[0].type.is_list);
}

TEST(Schema, ListAndOptionalForms) {
  OpSchema s = parse_schema(
      "aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor");
  EXPECT_TRUE(s.arguments[1].type.element_optional);
  EXPECT_FALSE(s.arguments[1].type.optional);
  EXPECT_EQ(s.arguments[3].default_value.scalar(), SymExpr::boolean(false));
  OpSchema p = parse_schema("aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
                            "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)");
  EXPECT_EQ(p.arguments[1].type.list_size, std::optional<int64_t>(2));
  EXPECT_TRUE(p.arguments[2].default_value.is_list());
  EXPECT_EQ(p.returns.size(), 2u);
  OpSchema a = parse_schema("aten::any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor");
  EXPECT_TRUE(a.arguments[1].type.is_list);
  EXPECT_TRUE(a.arguments[1].type.optional);
  EXPECT_TRUE(a.arguments[1].default_value.is_none());
}

TEST(Schema, DefaultsOfEnumTypes) {
  OpSchema s = parse_schema("aten::f(Tensor self, ScalarType dtype=long, MemoryFormat m=contiguous_format, "
                            "str reduce=\"mean\", float eps=1e-05) -> Tensor");
  EXPECT_EQ(s.arguments[1].default_value.dtype(), DType::Int64);
  EXPECT_EQ(s.arguments[2].default_value.memory_format(), MemoryFormat::Contiguous);
  EXPECT_EQ(s.arguments[3].default_value.str(), "mean");
  EXPECT_TRUE(s.arguments[4].default_value.scalar().is_float());
}

TEST(Schema, MalformedSchemasAreLocatedErrors) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"aten::f(Tensor self -> Tensor", "<schema>:1:21: error: in schema 'aten::f(Tensor self -> Tensor': expected ')'"},
      {"aten::f(Tensr self) -> Tensor", "<schema>:1:9: error: in schema 'aten::f(Tensr self) -> Tensor': unknown type 'Tensr'"},
      {"aten::f(Tensor) -> Tensor", "<schema>:1:15: error: in schema 'aten::f(Tensor) -> Tensor': expected an argument name"},
      {"aten::f(int x=--1) -> Tensor", "<schema>:1:15: error: in schema 'aten::f(int x=--1) -> Tensor': expected a number"},
      {"aten f(Tensor x) -> Tensor", "<schema>:1:6: error: in schema 'aten f(Tensor x) -> Tensor': expected '::'"},
      {"aten::f(Tensor x) -> Tensor junk", "<schema>:1:29: error: in schema 'aten::f(Tensor x) -> Tensor junk': unexpected text after the return type"},
  };
  for (const Case& c : cases) {
    try {
      parse_schema(c.text);
      ADD_FAILURE() << "no error for " << c.text;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
}
