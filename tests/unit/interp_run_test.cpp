// Running graphs: aliasing and mutation, constants, control flow, result checks, errors.
#include "interp_test_util.h"

namespace interptest {
namespace {

TEST(InterpRun, PointwiseWithScalarArguments) {
  auto g = parse(R"(graph @g functional {
  %x = input : f32[2, 2]
  %y = input : f32[2]
  %z = aten.add.Tensor(%x, %y, alpha=2) : f32[2, 2]
  output %z
})");
  std::vector<RtValue> out = interp::interpret(*g, {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {10, 20})});
  EXPECT_EQ(values(out[0].tensor()), (std::vector<double>{21, 42, 23, 44}));
}

TEST(InterpRun, SymbolicArgumentsEvaluatedUnderTheBinding) {
  auto g = parse(R"(graph @g functional {
  sym s0 : hint=4
  %x = input : f32[s0, 2]
  %v = aten.view.default(%x, [2*s0]) : f32[2*s0]{storage=%x}
  output %v
})");
  std::vector<RtValue> in = {iota({3, 2})};
  std::vector<RtValue> out = interp::interpret(*g, in);
  EXPECT_EQ(out[0].tensor().sizes(), (std::vector<int64_t>{6}));
  EXPECT_TRUE(out[0].tensor().shares_storage(in[0].tensor()));
}

TEST(InterpRun, ViewsShareStorage) {
  auto g = parse(R"(graph @g {
  %x = input : f32[2, 3]
  %t = aten.transpose.int(%x, 0, 1) : f32[3, 2]{strides=[1, 3], storage=%x}
  %r = aten.relu_.default(%t) : f32[3, 2]{strides=[1, 3], storage=%x}
  output %t
})");
  HostTensor x = f32({2, 3}, {-1, 2, -3, 4, -5, 6});
  std::vector<RtValue> out = interp::interpret(*g, {x});
  EXPECT_TRUE(out[0].tensor().shares_storage(x));
  EXPECT_EQ(out[0].tensor().strides(), (std::vector<int64_t>{1, 3}));
  // relu_ wrote through the view into the caller's tensor.
  EXPECT_EQ(values(x), (std::vector<double>{0, 2, 0, 4, 0, 6}));
}

TEST(InterpRun, CopyEpilogueMutatesTheCallersInput) {
  auto g = parse(R"(graph @sgd functional {
  sym s0 : hint=4, range=[1, inf]
  sym f0 : float, hint=0.01
  %param = input : f32[s0]
  %grad = input : f32[s0]
  %lr = input : float{value=f0}
  %step = aten.mul.Tensor(%grad, %lr) : f32[s0]
  %new = aten.sub.Tensor(%param, %step) : f32[s0]
  %copy = aten.copy_.default(%param, %new) : f32[s0]{storage=%param}
  output %new
})");
  HostTensor param = f32({3}, {1, 2, 3});
  std::vector<RtValue> out = interp::interpret(*g, {param, f32({3}, {10, 20, 30}), RtValue::floating(0.5)});
  EXPECT_EQ(values(param), (std::vector<double>{-4, -8, -12}));
  EXPECT_EQ(values(out[0].tensor()), (std::vector<double>{-4, -8, -12}));
  EXPECT_FALSE(out[0].tensor().shares_storage(param));
}

TEST(InterpRun, ConstantsAndNoneOutputs) {
  auto g = parse(R"(graph @g functional {
  %x = input : f32[4]
  %scale = constant [1.0, 0.5, 0.25, 0.125] : f32[4]
  %h = constant [0.099975586, 65504.0, -inf, nan] : f16[4]
  %k = constant 3 : int
  %m = aten.mul.Tensor(%x, %scale) : f32[4]
  output %m, %h, None, %k
})");
  std::vector<RtValue> out = interp::interpret(*g, {f32({4}, {8, 8, 8, 8})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(values(out[0].tensor()), (std::vector<double>{8, 4, 2, 1}));
  EXPECT_EQ(out[1].tensor().dtype(), DType::Float16);
  EXPECT_EQ(out[1].tensor().get_double(1), 65504.0);
  EXPECT_TRUE(std::isnan(out[1].tensor().get_double(3)));
  EXPECT_TRUE(out[2].is_none());
  EXPECT_EQ(out[3].to_int(), 3);
}

TEST(InterpRun, CondRunsTheChosenBranch) {
  auto g = parse(R"(graph @cond functional {
  sym s0 : hint=16, range=[1, inf]
  %p = input : bool[]
  %x = input : f32[s0]
  %y = input : f32[s0]
  %r = higher_order.cond(%p, [%x, %y]) : f32[s0]
    subgraph true_branch functional {
      %a = input : f32[s0]
      %b = input : f32[s0]
      %c = aten.mul.Tensor(%a, %b) : f32[s0]
      output %c
    }
    subgraph false_branch functional {
      %a = input : f32[s0]
      %b = input : f32[s0]
      %c = aten.sub.Tensor(%a, %b) : f32[s0]
      output %c
    }
  output %r
})");
  HostTensor x = f32({2}, {3, 4}), y = f32({2}, {1, 2});
  EXPECT_EQ(values(interp::interpret(*g, {tensor(DType::Bool, {}, {1}), x, y})[0].tensor()),
            (std::vector<double>{3, 8}));
  EXPECT_EQ(values(interp::interpret(*g, {tensor(DType::Bool, {}, {0}), x, y})[0].tensor()),
            (std::vector<double>{2, 2}));
}

TEST(InterpRun, WhileLoopCarriesValues) {
  auto g = parse(R"(graph @w {
  %i = input : i64[]
  %lim = input : i64[]
  %r = higher_order.while_loop(%i, %lim) : i64[]
    subgraph cond_fn {
      %a = input : i64[]
      %l = input : i64[]
      %c = aten.lt.Tensor(%a, %l) : bool[]
      output %c
    }
    subgraph body_fn {
      %a = input : i64[]
      %l = input : i64[]
      %b = aten.add.Scalar(%a, 2) : i64[]
      output %b
    }
  output %r
})");
  std::vector<RtValue> out =
      interp::interpret(*g, {tensor(DType::Int64, {}, {1}), tensor(DType::Int64, {}, {8})});
  EXPECT_EQ(out[0].tensor().get_int(0), 9);
  interp::InterpreterOptions opts;
  opts.max_loop_iterations = 2;
  EXPECT_TRUE(contains(user_error_of([&] {
                         interp::interpret(*g, {tensor(DType::Int64, {}, {1}), tensor(DType::Int64, {}, {8})}, opts);
                       }),
                       "ran more than 2 iterations"));
}

TEST(InterpRun, ResultSizeMismatchWithMeta) {
  auto g = parse(R"(graph @g {
  %x = input : f32[4, 4]
  %y = aten.add.Tensor(%x, %x) : f32[4, 3]
  output %y
})");
  std::string msg = user_error_of([&] { interp::interpret(*g, {iota({4, 4})}); });
  EXPECT_TRUE(contains(msg, "t.tir:3:3: error: result of %y (aten.add.Tensor): sizes [4, 4] but meta says [4, 3]"))
      << msg;
  interp::InterpreterOptions lax;
  lax.check_results = false;
  EXPECT_NO_THROW(interp::interpret(*g, {iota({4, 4})}, lax));
}

TEST(InterpRun, ResultDtypeStridesAndAliasingMismatches) {
  auto dtype = parse(R"(graph @g {
  %x = input : f32[2]
  %y = aten.relu.default(%x) : f64[2]
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*dtype, {iota({2})}); }),
                       "result of %y (aten.relu.default): dtype f32 but meta says f64"));
  auto strides = parse(R"(graph @g {
  %x = input : f32[2, 3]
  %y = aten.transpose.int(%x, 0, 1) : f32[3, 2]{storage=%x}
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*strides, {iota({2, 3})}); }),
                       "result of %y (aten.transpose.int): strides [1, 3] but meta says [2, 1]"));
  auto alias = parse(R"(graph @g {
  %x = input : f32[2]
  %y = aten.relu.default(%x) : f32[2]{storage=%x}
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*alias, {iota({2})}); }),
                       "meta says it shares storage with %x but the kernel returned a tensor with storage of its own"));
  auto fresh = parse(R"(graph @g {
  %x = input : f32[2, 3]
  %y = aten.transpose.int(%x, 0, 1) : f32[3, 2]{strides=[1, 3]}
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*fresh, {iota({2, 3})}); }),
                       "meta says it has storage of its own but the kernel returned a tensor sharing %x's storage"));
}

TEST(InterpRun, UnknownOperator) {
  auto u = parse(R"(graph @g {
  %x = input : f32[4]
  %y = aten.frobnicate.default(%x) : f32[4]
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*u, {iota({4})}); }),
                       "unknown operator aten.frobnicate.default"));
}

TEST(InterpRun, KernelErrorsAreLocatedAtTheNode) {
  auto g = parse(R"(graph @g {
  %x = input : f32[2, 3]
  %y = aten.sum.dim_IntList(%x, [5]) : f32[2]
  output %y
})");
  std::string msg = user_error_of([&] { interp::interpret(*g, {iota({2, 3})}); });
  EXPECT_TRUE(contains(msg, "t.tir:3:3: error: ")) << msg;
  EXPECT_TRUE(contains(msg, "aten.sum.dim_IntList")) << msg;
}

TEST(InterpRun, BadArgumentsAreUserErrors) {
  auto g = parse(R"(graph @g {
  %x = input : f32[2]
  %y = aten.relu.default(%x, 3) : f32[2]
  output %y
})");
  EXPECT_TRUE(contains(user_error_of([&] { interp::interpret(*g, {iota({2})}); }),
                       "t.tir:3:3: error: aten.relu.default takes at most 1 positional arguments but 2 were given"));
}

}  // namespace
}  // namespace interptest
