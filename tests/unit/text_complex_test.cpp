// Complex dtypes in the graph layer: names, sizes, the .tir type and constant forms, and errors.
#include <gtest/gtest.h>

#include <string>

#include "toroid/graph/graph.h"
#include "graph_test_util.h"
#include "toroid/graph/text.h"
#include "toroid/graph/types.h"

namespace toroid {
namespace {

using testing::error_of;

void expect_prints_back(const std::string& text) {
  auto g = parse_graph(text, "t.tir");
  EXPECT_EQ(print_graph(*g), text);
}

TEST(TextComplex, NamesSizesAndCategories) {
  EXPECT_STREQ(dtype_short_name(DType::Complex64), "c64");
  EXPECT_STREQ(dtype_torch_name(DType::Complex128), "torch.complex128");
  EXPECT_EQ(dtype_size(DType::Complex64), 8);
  EXPECT_EQ(dtype_size(DType::Complex128), 16);
  EXPECT_EQ(parse_dtype("c128"), DType::Complex128);
  EXPECT_EQ(parse_dtype("torch.cfloat"), DType::Complex64);
  EXPECT_EQ(parse_dtype("torch.cdouble"), DType::Complex128);
  EXPECT_EQ(parse_dtype("torch.complex32"), std::nullopt);
  EXPECT_EQ(dtype_from_scalar_type_code(9), DType::Complex64);
  EXPECT_EQ(dtype_from_scalar_type_code(10), DType::Complex128);
  EXPECT_EQ(dtype_from_scalar_type_code(8), std::nullopt);  // complex32
  EXPECT_TRUE(is_complex(DType::Complex64));
  EXPECT_FALSE(is_floating(DType::Complex64));  // as torch.is_floating_point
  EXPECT_FALSE(is_integral(DType::Complex128, true));
  EXPECT_EQ(complex_value_type(DType::Complex64), DType::Float32);
  EXPECT_EQ(complex_value_type(DType::Complex128), DType::Float64);
  EXPECT_EQ(complex_of(DType::Float32), DType::Complex64);
  EXPECT_EQ(complex_of(DType::Float64), DType::Complex128);
  EXPECT_EQ(complex_of(DType::Float16), std::nullopt);
  EXPECT_EQ(complex_of(DType::Int64), std::nullopt);
}

TEST(TextComplex, TypesArgumentsAndConstantsRoundTrip) {
  expect_prints_back(R"(graph @main functional {
  %x = input : c64[3, 4]{strides=[1, 3]}
  %y = input : c128[2]
  %c = constant [1.0, -2.0, 0.5, 0.0] : c64[2]
  %d = constant [0.1, inf] : c128[]
  %e = constant [] : c64[0]
  %r = aten._to_copy.default(%x, dtype=torch.complex128) : c128[3, 4]{strides=[1, 3]}
  output %r, %y, %c, %d, %e
}
)");
  // Aliases print as the full names; c64 parts are read at f32 precision.
  auto g = parse_graph(R"(graph @main {
  %x = input : f32[2]
  %c = constant [0.1, 2] : c64[]
  %r = aten._to_copy.default(%x, dtype=torch.cfloat) : c64[2]
  output %r, %c
}
)", "t.tir");
  std::string p = print_graph(*g);
  EXPECT_NE(p.find("dtype=torch.complex64"), std::string::npos) << p;
  EXPECT_NE(p.find("constant [0.1, 2.0] : c64[]"), std::string::npos) << p;
  for (Node* n : g->nodes())
    if (n->kind() == NodeKind::Constant) {
      EXPECT_EQ(n->constant_data().size(), 8u);
    }
}

TEST(TextComplex, ConstantErrors) {
  EXPECT_EQ(error_of("graph @g {\n  %c = constant [1.0, 2.0, 3.0] : c64[2]\n}\n"),
            "e.tir:2:17: error: complex constant has 3 numbers but its type needs 4 (real and imaginary part of each "
            "element)");
  EXPECT_EQ(error_of("graph @g {\n  %c = constant 1.0 : c64[]\n}\n"),
            "e.tir:2:17: error: a complex constant is written as a list [real, imag, ...]");
  EXPECT_NE(error_of("graph @g {\n  %c = constant [true, 1.0] : c128[]\n}\n").find("expected a number for c128"),
            std::string::npos);
  EXPECT_NE(error_of("graph @g {\n  %x = input : c32[2]\n}\n").find("unknown type 'c32'"), std::string::npos);
}

}  // namespace
}  // namespace toroid
