// Parser errors: exact "file:line:col: error: message" text for malformed input, and the
// limits (nesting depth, input size) that keep the parser safe on any input.
#include <gtest/gtest.h>

#include <string>

#include "toroid/graph/graph.h"
#include "graph_test_util.h"
#include "toroid/graph/text.h"

namespace toroid {
namespace {

using testing::error_of;

// The body goes on lines 2.. of a graph; symbol s0 is declared on line 2.
std::string in_graph(const std::string& body) {
  return "graph @main {\n  sym s0 : hint=4, range=[1, inf]\n" + body + "}\n";
}

struct ErrorCase {
  const char* name;
  std::string text;
  std::string error;
};

TEST(TextErrors, ExactMessages) {
  const ErrorCase cases[] = {
      {"unknown character", in_graph("  %x = input : f32[4] $\n"),
       "e.tir:3:23: error: unexpected character '$'"},
      {"unknown dtype", in_graph("  %x = input : f33[4]\n"), "e.tir:3:16: error: unknown type 'f33'"},
      {"unexpected token", in_graph("  %x = input : f32[4 foo\n"),
       "e.tir:3:22: error: expected ']' but found 'foo'"},
      {"undefined value", in_graph("  %y = aten.neg.default(%x) : f32[4]\n"),
       "e.tir:3:25: error: use of undefined value %x"},
      {"redefinition", in_graph("  %x = input : f32[4]\n  %x = input : f32[4]\n"),
       "e.tir:4:3: error: redefinition of value %x (first defined at 3:3)"},
      {"undefined symbol", in_graph("  %x = input : f32[s1]\n"),
       "e.tir:3:20: error: use of undefined symbol 's1'"},
      {"too few types", in_graph("  %a, %b = aten.max.dim(%a, 0) : f32[4]\n"),
       "e.tir:3:25: error: use of undefined value %a"},
      {"types vs results", in_graph("  %x = input : f32[4]\n  %a, %b = aten.max.dim(%x, 0) : f32[4]\n"),
       "e.tir:4:34: error: expected 2 types for 2 results but found 1"},
      {"too many types", in_graph("  %x = input : f32[4]\n  %a = aten.neg.default(%x) : f32[4], f32[4]\n"),
       "e.tir:4:39: error: expected 1 type for 1 result but found more"},
      {"int overflow", in_graph("  %a = test.op(9223372036854775808) : f32[]\n"),
       "e.tir:3:16: error: integer literal '9223372036854775808' is out of range for int64"},
      {"unterminated string", in_graph("  %a = test.op(\"abc\n"), "e.tir:3:16: error: unterminated string"},
      {"bad escape", in_graph("  %a = test.op(\"a\\qb\") : f32[]\n"),
       "e.tir:3:18: error: invalid escape '\\q' in string"},
      {"division by zero", in_graph("  %x = input : f32[s0//0]\n"),
       "e.tir:3:22: error: division by zero in symbolic expression s0//0"},
      {"strides count", in_graph("  %x = input : f32[4, 4]{strides=[1]}\n"),
       "e.tir:3:34: error: expected 2 strides for 2 sizes but found 1"},
      {"bool arithmetic", in_graph("  %a = test.op(true + 1) : f32[]\n"),
       "e.tir:3:21: error: operator '+' needs a number but got the boolean 'true'"},
      {"float floordiv", in_graph("  %a = test.op(2.5 // 2) : f32[]\n"),
       "e.tir:3:20: error: operator '//' needs an integer but got '2.5'"},
      {"constant count", in_graph("  %c = constant [1.0, 2.0] : f32[3]\n"),
       "e.tir:3:17: error: constant has 2 elements but its type has 3"},
      {"constant range", in_graph("  %c = constant [1, 256] : u8[2]\n"),
       "e.tir:3:21: error: value 256 is out of range for u8"},
      {"constant symbolic", in_graph("  %c = constant [1.0] : f32[s0]\n"),
       "e.tir:3:25: error: a constant must have a static shape"},
      {"output not last", in_graph("  %x = input : f32[4]\n  output %x\n  %y = input : f32[4]\n"),
       "e.tir:5:3: error: 'output' must be the last item of a graph, but found '%y'"},
      {"closed subgraph",
       in_graph("  %x = input : f32[4]\n  %r = test.op(%x) : f32[4]\n    subgraph body {\n"
                "      %y = aten.neg.default(%x) : f32[4]\n      output %y\n    }\n"),
       "e.tir:6:29: error: use of undefined value %x"},
      {"sym in subgraph",
       in_graph("  %r = test.op() : f32[4]\n    subgraph body {\n      sym s9 : hint=1\n    }\n"),
       "e.tir:5:7: error: 'sym' is only allowed in the root graph"},
      {"hint outside range", in_graph("  sym s1 : hint=0, range=[1, 8]\n"),
       "e.tir:3:7: error: hint 0 of symbol 's1' is outside its range [1, 8]"},
      {"symbol redefinition", in_graph("  sym s0 : unbacked\n"),
       "e.tir:3:7: error: redefinition of symbol 's0'"},
      {"reserved symbol", in_graph("  sym inf : unbacked\n"), "e.tir:3:7: error: 'inf' cannot be a symbol name"},
      {"guard not bool", in_graph("  guard s0 + 1\n"),
       "e.tir:3:9: error: a guard must be a boolean expression but got 's0 + 1'"},
      {"chained comparison", in_graph("  guard 1 < s0 < 3\n"),
       "e.tir:3:16: error: comparisons cannot be chained; use parentheses"},
      {"negative exponent", in_graph("  guard s0**-1 == 1\n"),
       "e.tir:3:13: error: the exponent of '**' must be a non-negative integer constant"},
      {"kwarg order", in_graph("  %a = test.op(x=1, 2) : f32[]\n"),
       "e.tir:3:21: error: positional argument after keyword arguments"},
      {"unknown torch name", in_graph("  %a = test.op(torch.float8) : f32[]\n"),
       "e.tir:3:16: error: unknown torch constant 'torch.float8'"},
      {"bad device", in_graph("  %a = test.op(device(\"tpu\")) : f32[]\n"),
       "e.tir:3:23: error: invalid device \"tpu\""},
      {"missing brace", "graph @main {\n  %x = input : f32[4]\n",
       "e.tir:3:1: error: expected '}' but found end of file"},
      {"trailing garbage", "graph @main {\n}\n}\n", "e.tir:3:1: error: expected end of file but found '}'"},
      {"not a graph", "grph @main {}", "e.tir:1:1: error: expected 'graph' but found 'grph'"},
      {"storage of scalar", in_graph("  %n = input : int\n  %x = input : f32[4]{storage=%n}\n"),
       "e.tir:4:31: error: storage=%n must name a tensor value"},
      {"param scalar", in_graph("  %w = param \"w\" : int\n"), "e.tir:3:20: error: a param must have a tensor type"},
  };
  for (const ErrorCase& c : cases) EXPECT_EQ(error_of(c.text), c.error) << c.name;
}

TEST(TextErrors, StdinStyleLocation) {
  try {
    parse_graph("graph @main { %x = input : f33[4] }", "<stdin>");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().str(), "<stdin>:1:28");
    EXPECT_EQ(e.message(), "unknown type 'f33'");
  }
}

TEST(TextErrors, NestingDepthIsBounded) {
  auto parens = [](int n) {
    return in_graph("  %a = test.op(" + std::string(static_cast<size_t>(n), '(') + "1" +
                    std::string(static_cast<size_t>(n), ')') + ") : f32[]\n");
  };
  EXPECT_EQ(error_of(parens(200)), "<no error>");
  EXPECT_EQ(error_of(parens(100000)), "e.tir:3:272: error: nesting is deeper than 256 levels");
  auto lists = [](int n) {
    return in_graph("  %a = test.op(" + std::string(static_cast<size_t>(n), '[') +
                    std::string(static_cast<size_t>(n), ']') + ") : f32[]\n");
  };
  EXPECT_EQ(error_of(lists(200)), "<no error>");
  EXPECT_NE(error_of(lists(300)).find("nesting is deeper than 256 levels"), std::string::npos);
  EXPECT_NE(error_of(in_graph("  guard " + std::string(300, '-') + "s0 == 1\n")).find("nesting is deeper"),
            std::string::npos);
  std::string powers;
  for (int i = 0; i < 300; ++i) powers += "**1";
  EXPECT_NE(error_of(in_graph("  guard 2" + powers + " == 2\n")).find("nesting is deeper"), std::string::npos);
  std::string sub = "graph @main {\n";
  for (int i = 0; i < 300; ++i) sub += "%r = test.op() : f32[] subgraph s {\n";
  EXPECT_NE(error_of(sub).find("nesting is deeper than 256 levels"), std::string::npos);
}

TEST(TextErrors, InputSizeIsBounded) {
  std::string big(size_t{64} << 20, ' ');
  big += "x";
  EXPECT_EQ(error_of(big), "e.tir:1:1: error: input is larger than 64 MiB");
}

TEST(TextErrors, EveryPrefixOfAValidFileFailsCleanly) {
  std::string text = in_graph(
      "  sym u0 : unbacked, range=[-3, 7], divisor=1\n"
      "  guard s0%2 == 0\n"
      "  %x = input : f32[s0, 4]{device=cuda:0}\n"
      "  %c = constant [1.5, -inf] : bf16[2]\n"
      "  %a, %b = test.op(%x, [1, \"s\\n\", torch.int8], k=device(\"cpu\")) : f32[4]{storage=%x}, int{value=s0}\n"
      "    subgraph g {\n      %y = input : f32[]\n      output %y\n    }\n"
      "  output %a, None\n");
  ASSERT_EQ(error_of(text), "<no error>");
  for (size_t n = 0; n + 1 < text.size(); ++n) {  // the last byte is a newline
    std::string prefix = text.substr(0, n);
    std::string err = error_of(prefix);
    EXPECT_EQ(err.rfind("e.tir:", 0), 0u) << "prefix of length " << n << ": " << err;
  }
}

}  // namespace
}  // namespace toroid
