// Symbols bound from inputs and results; guard, range and input checks.
#include "interp_test_util.h"
#include "toroid/bind/inputs.h"

namespace interptest {
namespace {

SymExpr symbol(const Graph& g, const char* name) { return g.shape_env().lookup(name); }

TEST(InterpBinding, BindsSymbolFromInputSize) {
  auto g = parse(R"(graph @g {
  sym s0 : hint=4, range=[1, inf]
  %x = input : f32[s0, 2]
  %y = aten.relu.default(%x) : f32[s0, 2]
  output %y
})");
  interp::Interpreter in(*g);
  std::vector<RtValue> out = in.run({iota({5, 2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor().sizes(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(in.binding().at(symbol(*g, "s0")).i, 5);
}

TEST(InterpBinding, SizeExpressionMismatchNamesTheBinding) {
  auto g = parse(R"(graph @g {
  sym s0 : hint=4
  %x = input : f32[s0]
  %y = input : f32[2*s0]
  output %x, %y
})");
  std::string msg = user_error_of([&] { interp::interpret(*g, {iota({3}), iota({5})}); });
  EXPECT_TRUE(contains(msg, "t.tir:4:3: error: input %y: size 0 is 5 but the graph expects 2*s0 = 6 (s0 = 3)"));
}

TEST(InterpBinding, DtypeRankAndCountMismatches) {
  auto g = parse(R"(graph @g {
  %x = input : f32[3]
  output %x
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {tensor(DType::Int64, {3}, {1, 2, 3})}); }),
                       "input %x: dtype is i64 but the graph expects f32"));
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {iota({3, 1})}); }),
                       "input %x: has 2 dims [3, 1] but the graph expects 1 [3]"));
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {}); }), "takes 1 inputs"));
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {RtValue::integer(3)}); }),
                       "input %x: expected a tensor f32[3], got an int"));
}

TEST(InterpBinding, GuardFailureNamesTheGuard) {
  auto g = parse(R"(graph @g {
  sym s0 : hint=4
  guard s0%2 == 0
  %x = input : f32[s0]
  output %x
})");
  EXPECT_NO_THROW(interp::interpret(*g, {iota({6})}));
  std::string msg = user_error_of([&] { interp::interpret(*g, {iota({3})}); });
  EXPECT_TRUE(contains(msg, "t.tir:3:3: error: guard s0%2 == 0 failed (s0 = 3)")) << msg;
}

TEST(InterpBinding, RangeAndDivisorChecked) {
  auto g = parse(R"(graph @g {
  sym s0 : hint=4, range=[2, 1024], divisor=2
  %x = input : f32[s0]
  output %x
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {iota({1})}); }),
                       "s0 = 1 (size 0 of input %x) is outside its range [2, 1024]"));
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {iota({5})}); }),
                       "s0 = 5 (size 0 of input %x) is not a multiple of 2"));
}

TEST(InterpBinding, StridesOfInputsAreChecked) {
  auto g = parse(R"(graph @g {
  %x = input : f32[2, 3]{strides=[1, 2]}
  output %x
})");
  std::string msg = user_error_of([&] { interp::interpret(*g, {iota({2, 3})}); });
  EXPECT_TRUE(contains(msg, "input %x: stride 0 is 3 but the graph expects 1")) << msg;
  // materialize_inputs lays the same logical values out as the graph says.
  std::vector<RtValue> in = toroid::bind::materialize_inputs(*g, {iota({2, 3})});
  EXPECT_EQ(in[0].tensor().strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values(in[0].tensor()), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  std::vector<RtValue> out = interp::interpret(*g, in);
  EXPECT_TRUE(out[0].tensor().shares_storage(in[0].tensor()));
}

TEST(InterpBinding, ScalarInputsBindSymbols) {
  auto g = parse(R"(graph @g {
  sym s0 : hint=4
  sym f0 : float, hint=0.5
  %n = input : int{value=s0}
  %a = input : float{value=f0}
  %x = input : f32[s0]
  %y = aten.mul.Tensor(%x, %a) : f32[s0]
  output %y, %n
})");
  interp::Interpreter in(*g);
  std::vector<RtValue> out = in.run({RtValue::integer(3), RtValue::floating(2.0), iota({3})});
  EXPECT_EQ(values(out[0].tensor()), (std::vector<double>{0, 2, 4}));
  EXPECT_EQ(out[1].to_int(), 3);
  EXPECT_EQ(in.binding().at(symbol(*g, "f0")).f, 2.0);
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {RtValue::integer(4), RtValue::floating(2.0), iota({3})}); }),
                       "input %x: size 0 is 3 but the graph expects s0 = 4"));
}

TEST(InterpBinding, UnbackedSymbolFromScalarResult) {
  auto g = parse(R"(graph @g {
  sym u0 : unbacked, range=[0, inf]
  %t = input : i64[]
  %n = aten._local_scalar_dense.default(%t) : int{value=u0}
  output %n
})");
  interp::Interpreter in(*g);
  std::vector<RtValue> out = in.run({tensor(DType::Int64, {}, {7})});
  EXPECT_EQ(out[0].to_int(), 7);
  EXPECT_EQ(in.binding().at(symbol(*g, "u0")).i, 7);
  // A value outside the unbacked symbol's range is reported at the node.
  std::string msg = user_error_of([&] { in.run({tensor(DType::Int64, {}, {-1})}); });
  EXPECT_TRUE(contains(msg, "t.tir:4:3: error: u0 = -1 (the result of %n (aten._local_scalar_dense.default)) is outside "
                            "its range [0, inf]")) << msg;
}

TEST(InterpBinding, UnbackedSymbolFromResultSizes) {
  auto g = parse(R"(graph @g {
  sym u0 : unbacked, range=[0, inf]
  %x = input : f32[5]
  %nz = aten.nonzero.default(%x) : i64[u0, 1]
  output %nz
})");
  interp::Interpreter in(*g);
  std::vector<RtValue> out = in.run({f32({5}, {0, 1, 0, 2, 3})});
  EXPECT_EQ(out[0].tensor().sizes(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(in.binding().at(symbol(*g, "u0")).i, 3);
}

TEST(InterpBinding, RandomInputsFollowHintsAndSeed) {
  auto g = parse(R"(graph @g {
  sym s0 : hint=3
  %x = input : f32[s0, 4]{strides=[1, s0]}
  %i = input : i64[s0]
  %b = input : bool[2]
  output %x
})");
  std::vector<RtValue> a = toroid::bind::random_inputs(*g, 7);
  std::vector<RtValue> b = toroid::bind::random_inputs(*g, 7);
  std::vector<RtValue> c = toroid::bind::random_inputs(*g, 8);
  EXPECT_EQ(a[0].tensor().sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(a[0].tensor().strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(a[0].tensor()), values(b[0].tensor()));
  EXPECT_NE(values(a[0].tensor()), values(c[0].tensor()));
  for (double v : values(a[0].tensor())) EXPECT_TRUE(v >= -1 && v < 1);
  for (double v : values(a[1].tensor())) EXPECT_TRUE(v >= -8 && v < 8);
  EXPECT_NO_THROW(interp::interpret(*g, a));
  // A given input fixes the symbols it determines.
  std::vector<RtValue> given(3);
  given[1] = tensor(DType::Int64, {5}, {1, 2, 3, 4, 5});
  std::vector<RtValue> d = toroid::bind::random_inputs(*g, 7, toroid::bind::RandomDist::Normal, given);
  EXPECT_EQ(d[0].tensor().sizes(), (std::vector<int64_t>{5, 4}));
  EXPECT_NO_THROW(interp::interpret(*g, d));
}

}  // namespace
}  // namespace interptest
