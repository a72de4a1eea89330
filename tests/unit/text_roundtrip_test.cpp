// Round trips of every .tir construct: canonical text prints back unchanged, and other text
// reaches a fixed point after one print.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "toroid/graph/graph.h"
#include "toroid/graph/half.h"
#include "toroid/graph/text.h"

namespace toroid {
namespace {

// Parses, prints, and checks that printing is a fixed point; returns the first print.
std::string roundtrip(const std::string& text) {
  auto g = parse_graph(text, "t.tir");
  std::string p1 = print_graph(*g);
  auto g2 = parse_graph(p1, "t2.tir");
  std::string p2 = print_graph(*g2);
  EXPECT_EQ(p1, p2);
  return p1;
}

// `text` must be in canonical form already.
void expect_canonical(const std::string& text) { EXPECT_EQ(roundtrip(text), text); }

std::string wrap(const std::string& body, const std::string& syms = "") {
  return "graph @main functional {\n" + syms + body + "}\n";
}

TEST(TextRoundTrip, DocExample) {
  const char* doc = R"(# A comment runs to the end of the line.
graph @main functional {
  sym s0 : hint=8, range=[2, 1024]
  sym u0 : unbacked, range=[0, inf]
  guard s0 % 2 == 0
  %x = input : f32[s0, 64]
  %w = param "fc.weight" : f32[64, 64]
  %c = constant [1.0, 2.0] : f32[2]
  %mm = aten.mm.default(%x, %w) : f32[s0, 64]
  %t = aten.t.default(%w) : f32[64, 64]{strides=[1, 64], storage=%w}
  %y = aten.add.Tensor(%mm, %x, alpha=2) : f32[s0, 64]
  %vals, %idx = aten.max.dim(%y, 1) : f32[s0], i64[s0]
  %n = aten.sym_size.int(%x, 0) : int{value=s0}
  output %y, %vals, None
}
)";
  EXPECT_EQ(roundtrip(doc), R"(graph @main functional {
  sym s0 : hint=8, range=[2, 1024]
  sym u0 : unbacked, range=[0, inf]
  guard s0%2 == 0
  %x = input : f32[s0, 64]
  %w = param "fc.weight" : f32[64, 64]
  %c = constant [1.0, 2.0] : f32[2]
  %mm = aten.mm.default(%x, %w) : f32[s0, 64]
  %t = aten.t.default(%w) : f32[64, 64]{strides=[1, 64], storage=%w}
  %y = aten.add.Tensor(%mm, %x, alpha=2) : f32[s0, 64]
  %vals, %idx = aten.max.dim(%y, 1) : f32[s0], i64[s0]
  %n = aten.sym_size.int(%x, 0) : int{value=s0}
  output %y, %vals, None
}
)");
}

TEST(TextRoundTrip, ScalarArguments) {
  expect_canonical(wrap(
      "  %x = input : f32[4]\n"
      "  %a = test.op(%x, 0, -3, 9223372036854775807, 2.5, -0.5, 1e-300, 1e+300, inf, -inf, nan, -0.0, true, "
      "false) : f32[4]\n"
      "  output %a\n"));
}

TEST(TextRoundTrip, Int64Extremes) {
  std::string out = roundtrip(wrap("  %a = test.op(-9223372036854775808) : f32[]\n  output %a\n"));
  EXPECT_NE(out.find("test.op((-9223372036854775807 - 1))"), std::string::npos) << out;
}

TEST(TextRoundTrip, AttributeArguments) {
  expect_canonical(wrap(
      "  %a = test.op(torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, "
      "torch.float16, torch.bfloat16, torch.float32, torch.float64) : f32[]\n"
      "  %b = test.op(torch.strided, torch.sparse_coo, torch.sparse_csr, torch.contiguous_format, "
      "torch.channels_last, torch.channels_last_3d, torch.preserve_format) : f32[]\n"
      "  %c = test.op(device(\"cpu\"), device(\"cuda:0\"), device(\"cuda:7\"), None) : f32[]\n"
      "  output %a, %b, %c\n"));
}

TEST(TextRoundTrip, TorchAliasesNormalize) {
  std::string out = roundtrip(wrap(
      "  %a = test.op(torch.float, torch.half, torch.long, torch.int, torch.double, torch.short, "
      "device(\"cuda\")) : f32[]\n  output %a\n"));
  EXPECT_NE(out.find("test.op(torch.float32, torch.float16, torch.int64, torch.int32, torch.float64, "
                     "torch.int16, device(\"cuda:0\"))"),
            std::string::npos)
      << out;
}

TEST(TextRoundTrip, StringsAndEscapes) {
  expect_canonical(wrap(
      "  %a = test.op(\"\", \"plain\", \"q\\\"b\\\\n\\nt\\t\", \"\\x00\\x01\\x7f\\xff\") : f32[]\n"
      "  output %a\n"));
  // \xHH of a printable character prints as the character.
  std::string out = roundtrip(wrap("  %a = test.op(\"\\x41\") : f32[]\n  output %a\n"));
  EXPECT_NE(out.find("test.op(\"A\")"), std::string::npos) << out;
}

TEST(TextRoundTrip, ListsAndKwargs) {
  expect_canonical(wrap(
      "  %x = input : f32[4]\n"
      "  %y = input : f32[4]\n"
      "  %a = test.op([], [1, 2], [[%x, None], [[]], [\"s\", torch.int8, 1.5]], dim=[0, -1], keepdim=true, "
      "out=[%x, %y]) : f32[4]\n"
      "  output %a\n"));
}

TEST(TextRoundTrip, SymbolicExpressions) {
  std::string syms =
      "  sym s0 : hint=8, range=[2, 1024]\n"
      "  sym s1 : hint=3, range=[1, inf]\n"
      "  sym f0 : float, hint=0.5\n";
  expect_canonical(wrap(
      "  %x = input : f32[s0, s1]\n"
      "  %a = test.op(s0 + 1, 2*s0 - 3, s0//4, s0%s1, ToFloat(s0)/ToFloat(s1), s0**2, -s0, Min(s0, s1), "
      "Max(16, s0, s1), ToFloat(s0), 2.0*f0, s0 < s1, s0 <= s1, s0 == s1, s0 != s1, s0 != 1, And(s0 < 8, s1 < 8), "
      "Or(s0 < 8, s1 < 8), (s0 + 1)//2, (s0 + 1)**3) : f32[]\n"
      "  output %a\n",
      syms));
}

TEST(TextRoundTrip, ExpressionsCanonicalize) {
  std::string out = roundtrip(wrap(
      "  %a = test.op(s0 + 1 + s0, 1 + 2 * 3, s0 * 0, (s0), - - s0, s0 > 3, s0 >= 3, 7 // 2, -7 % 3, 2 ** 10) : "
      "f32[]\n  output %a\n",
      "  sym s0 : hint=8, range=[2, 1024]\n"));
  EXPECT_NE(out.find("test.op(2*s0 + 1, 7, 0, s0, s0, 3 < s0, 3 <= s0, 3, 2, 1024)"), std::string::npos) << out;
}

TEST(TextRoundTrip, ModuloNextToValues) {
  // '%' touching an operand is modulo; after a space and before a name it starts a value.
  std::string out = roundtrip(wrap(
      "  %x = input : f32[s0]\n  %y = test.op(%x, s0%4, s0 % 4, (s0 + 1)%s0) : f32[s0]\n  output %y\n",
      "  sym s0 : hint=8, range=[2, 1024]\n"));
  EXPECT_NE(out.find("test.op(%x, s0%4, s0%4, (s0 + 1)%s0)"), std::string::npos) << out;
}

TEST(TextRoundTrip, TensorMetaAttributes) {
  expect_canonical(wrap(
      "  %x = input : f32[s0, 4, 3]{device=cuda:1}\n"
      "  %p = aten.permute.default(%x, [2, 0, 1]) : f32[3, s0, 4]{strides=[1, 12, 3], device=cuda:1, "
      "storage=%x}\n"
      "  %s = aten.slice.Tensor(%x, 0, 1) : f32[s0 - 1, 4, 3]{offset=12, device=cuda:1, storage=%x}\n"
      "  %e = aten.expand.default(%s, [2, s0 - 1, 4, 3]) : f32[2, s0 - 1, 4, 3]{strides=[0, 12, 3, 1], "
      "offset=12, device=cuda:1, storage=%x}\n"
      "  %z = aten.empty.memory_format([0, 2]) : bf16[0, 2]\n"
      "  %d = aten.diagonal.default(%z) : bf16[0]{strides=[3], offset=s0, storage=%z}\n"
      "  output %p, %e, %d\n",
      "  sym s0 : hint=8, range=[2, 1024]\n"));
}

TEST(TextRoundTrip, ContiguousStridesAndDefaultsAreDropped) {
  std::string out = roundtrip(wrap(
      "  %x = input : f32[s0, 4]{strides=[4, 1], offset=0, device=cpu}\n  output %x\n",
      "  sym s0 : hint=8, range=[2, 1024]\n"));
  EXPECT_NE(out.find("  %x = input : f32[s0, 4]\n"), std::string::npos) << out;
}

TEST(TextRoundTrip, StorageNamesFirstValueInPrintOrder) {
  auto g = parse_graph(wrap(
      "  %x = input : f32[4]\n"
      "  %a = aten.view.default(%x, [2, 2]) : f32[2, 2]{storage=%x}\n"
      "  %b = aten.view.default(%a, [4]) : f32[4]{storage=%a}\n"
      "  output %b\n"));
  const std::vector<Node*> nodes = g->node_list();
  EXPECT_EQ(nodes[0]->result()->meta().storage, nodes[2]->result()->meta().storage);
  EXPECT_NE(print_graph(*g).find("%b = aten.view.default(%a, [4]) : f32[4]{storage=%x}"), std::string::npos);
}

TEST(TextRoundTrip, ScalarTypesWithValues) {
  expect_canonical(wrap(
      "  %x = input : f32[s0, 4]\n"
      "  %n = input : int{value=s0}\n"
      "  %f = input : float{value=f0}\n"
      "  %b = input : bool\n"
      "  %i = input : int\n"
      "  %sz = aten.sym_size.int(%x, 0) : int{value=s0}\n"
      "  %item = aten._local_scalar_dense.default(%x) : float{value=f1}\n"
      "  %c, %d = test.op(%x) : bool{value=s0 < 16}, int{value=2*s0 + u0}\n"
      "  output %sz, %item, %n, %f, %b, %i\n",
      "  sym s0 : hint=8, range=[2, 1024]\n"
      "  sym u0 : unbacked, range=[0, inf]\n"
      "  sym f0 : float, hint=0.001\n"
      "  sym f1 : float, unbacked\n"));
}

TEST(TextRoundTrip, MultipleResultsShareStorageWithinNode) {
  expect_canonical(wrap(
      "  %x = input : f32[8]\n"
      "  %a, %b = aten.split.Tensor(%x, 4) : f32[4]{storage=%x}, f32[4]{offset=4, storage=%x}\n"
      "  %u, %v = test.two_views(%a) : f32[4], f32[2, 2]{storage=%u}\n"
      "  output %a, %b, %v\n"));
}

TEST(TextRoundTrip, SymbolsAndGuards) {
  expect_canonical(
      "graph @main {\n"
      "  sym s0 : hint=8, range=[2, 1024]\n"
      "  sym s1 : hint=-3, range=[-inf, inf]\n"
      "  sym s2 : hint=16, range=[8, 64], divisor=8\n"
      "  sym u0 : unbacked, range=[0, inf]\n"
      "  sym u1 : unbacked, range=[-5, 5]\n"
      "  sym f0 : float, hint=-2.5\n"
      "  sym f1 : float, unbacked\n"
      "  guard s0%2 == 0\n"
      "  guard s1 < 0\n"
      "  guard s0 != 1\n"
      "  guard And(s0 < 1024, s2 <= 64)\n"
      "  guard true\n"
      "  %x = input : f32[s0, s2]\n"
      "  output %x\n"
      "}\n");
}

TEST(TextRoundTrip, SubgraphsNestedWithOwnScopes) {
  expect_canonical(
      "graph @main functional {\n"
      "  %p = input : bool[]\n"
      "  %x = input : f32[4]\n"
      "  %r = higher_order.cond(%p, [%x]) : f32[4]\n"
      "    subgraph true_branch functional {\n"
      "      %x = input : f32[4]\n"
      "      %q = input : bool[]\n"
      "      %y = higher_order.cond(%q, [%x]) : f32[4]\n"
      "        subgraph true_branch {\n"
      "          %x = input : f32[4]\n"
      "          output %x\n"
      "        }\n"
      "        subgraph \"odd name\" {\n"
      "          %x = input : f32[4]\n"
      "          %y = aten.neg.default(%x) : f32[4]\n"
      "          output %y\n"
      "        }\n"
      "      output %y\n"
      "    }\n"
      "    subgraph false_branch {\n"
      "      %x = input : f32[4]\n"
      "      output %x\n"
      "    }\n"
      "  output %r\n"
      "}\n");
}

TEST(TextRoundTrip, ConstantsOfEveryDType) {
  expect_canonical(wrap(
      "  %b = constant [true, false] : bool[2]\n"
      "  %u8 = constant [0, 255] : u8[2]\n"
      "  %i8 = constant [-128, 127] : i8[2]\n"
      "  %i16 = constant [-32768, 32767] : i16[2]\n"
      "  %i32 = constant [-2147483648, 2147483647] : i32[2]\n"
      "  %i64 = constant [-9223372036854775808, 9223372036854775807] : i64[2]\n"
      "  %f16 = constant [0.099975586, 65504.0, 5.9604645e-08, -0.0, inf, -inf, nan] : f16[7]\n"
      "  %bf16 = constant [3.140625, 3.3895314e+38, 9.1835e-41, -0.0, inf, nan] : bf16[6]\n"
      "  %f32 = constant [0.1, 3.4028235e+38, 1e-45, -0.0, inf, -inf, nan] : f32[7]\n"
      "  %f64 = constant [0.1, 1.7976931348623157e+308, 5e-324, -0.0, inf, -inf, nan] : f64[7]\n"
      "  %s = constant 2.0 : f32[]\n"
      "  %e = constant [] : f32[0]\n"
      "  output %b\n"));
}

TEST(TextRoundTrip, SixteenBitConstantsRound) {
  // 0.1 is not a half; it reads as the nearest one and prints as that value.
  std::string out = roundtrip(wrap("  %h = constant [0.1, 1, 65519.0] : f16[3]\n"
                                   "  %b = constant [0.1, 1e+38] : bf16[2]\n  output %h, %b\n"));
  EXPECT_NE(out.find("constant [0.099975586, 1.0, 65504.0] : f16[3]"), std::string::npos) << out;
  EXPECT_NE(out.find("constant [0.100097656, 9.96921e+37] : bf16[2]"), std::string::npos) << out;
}

TEST(TextRoundTrip, ScalarConstants) {
  expect_canonical(wrap(
      "  %i = constant -3 : int\n"
      "  %f = constant 2.5 : float\n"
      "  %n = constant nan : float\n"
      "  %b = constant true : bool\n"
      "  %u = constant None : int\n"
      "  output %i, %f, %n, %b, %u\n"));
}

TEST(TextRoundTrip, QuotedNamesAndResultlessCalls) {
  expect_canonical(
      "graph @\"my graph\" {\n"
      "  %x = input : f32[4]\n"
      "  aten._assert_async.msg(%x, \"bad\")\n"
      "  %y = \"input\"(%x) : f32[4]\n"
      "  \"weird op\"(%y)\n"
      "  output\n"
      "}\n");
}

TEST(TextRoundTrip, OneLineGraphAndComments) {
  std::string out = roundtrip(
      "graph @g { %x = input : f32[4] %y = aten.neg.default(%x) : f32[4] output %y }  # trailing\n");
  EXPECT_EQ(out,
            "graph @g {\n  %x = input : f32[4]\n  %y = aten.neg.default(%x) : f32[4]\n  output %y\n}\n");
}

TEST(TextRoundTrip, NodesRecordTheirLocation) {
  auto g = parse_graph("graph @g {\n  %x = input : f32[4]\n    output %x\n}\n", "loc.tir");
  EXPECT_EQ(g->front()->loc().str(), "loc.tir:2:3");
  EXPECT_EQ(g->output_node()->loc().str(), "loc.tir:3:5");
  EXPECT_EQ(g->shape_env().guards().size(), 0u);
}

TEST(TextRoundTrip, NamesAreUniquifiedWhenPrinting) {
  Graph g;
  TensorMeta m;
  m.sizes = {SymExpr::integer(4)};
  m.strides = {SymExpr::integer(1)};
  m.storage = g.new_storage();
  Value* a = g.add_input("x", m);
  m.storage = g.new_storage();
  Value* b = g.add_input("x", m);
  m.storage = g.new_storage();
  Value* c = g.add_input("", m);
  m.storage = g.new_storage();
  Value* d = g.add_input("0", m);
  m.storage = g.new_storage();
  Value* e = g.add_input("bad name!", m);
  g.set_output({Argument(a), Argument(b), Argument(c), Argument(d), Argument(e)});
  std::string out = print_graph(g);
  EXPECT_EQ(out,
            "graph @main {\n"
            "  %x = input : f32[4]\n"
            "  %1 = input : f32[4]\n"
            "  %2 = input : f32[4]\n"
            "  %0 = input : f32[4]\n"
            "  %3 = input : f32[4]\n"
            "  output %x, %1, %2, %0, %3\n"
            "}\n");
  EXPECT_EQ(print_graph(*parse_graph(out)), out);
}

TEST(TextRoundTrip, HalfConversionsAreExact) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    auto h = static_cast<uint16_t>(bits);
    float f = f16_to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(f))));
    } else {
      ASSERT_EQ(float_to_f16(f), h) << bits;
    }
    float b = bf16_to_float(h);
    if (!std::isnan(b)) {
      ASSERT_EQ(float_to_bf16(b), h) << bits;
    }
  }
  // Round to nearest, ties to even.
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f), 0x3c00);            // tie, even stays
  EXPECT_EQ(float_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);        // tie, odd rounds up
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);                   // overflows to inf
  EXPECT_EQ(float_to_f16(0x1p-25f), 0x0000);                   // tie with zero goes to zero
  EXPECT_EQ(float_to_f16(0x1.8p-25f), 0x0001);                 // above the tie: smallest subnormal
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);            // tie, even stays
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
}

TEST(TextRoundTrip, ExampleFiles) {
  namespace fs = std::filesystem;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TOROID_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".tir") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    // The files are canonical apart from comment lines.
    std::string expected;
    std::istringstream lines(ss.str());
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line[0] != '#') expected += line + "\n";
    }
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(roundtrip(ss.str()), expected);
    ++count;
  }
  EXPECT_GE(count, 5);
}

}  // namespace
}  // namespace toroid
