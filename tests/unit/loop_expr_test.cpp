// Loop-IR expressions: hash-consing, index substitution, and the lowering of a small graph.
#include <gtest/gtest.h>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/graph/text.h"
#include "toroid/loop/expr.h"
#include "toroid/loop/ir.h"
#include "toroid/loop/lower.h"
#include "toroid/ops/registry.h"
#include "toroid/sched/schedule.h"

namespace toroid::loop {
namespace {

Buffer make_buffer(DType d) {
  Buffer b;
  b.name = "b";
  b.dtype = d;
  return b;
}

TEST(LoopExpr, EqualExpressionsAreTheSameObject) {
  Buffer b = make_buffer(DType::Float32);
  Expr a1 = binary(Op::Add, load(&b, index_var(0)), constant(1.0, DType::Float32));
  Expr a2 = binary(Op::Add, load(&b, index_var(0)), constant(1.0, DType::Float32));
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, binary(Op::Add, load(&b, index_var(1)), constant(1.0, DType::Float32)));
  EXPECT_NE(constant(0.0, DType::Float32), constant(-0.0, DType::Float32));
}

TEST(LoopExpr, ComparisonsAreBoolAndCastsFoldOnlyWhenExact) {
  Buffer b = make_buffer(DType::Float32);
  Expr x = load(&b, index_var(0));
  EXPECT_EQ(binary(Op::Lt, x, x).dtype(), DType::Bool);
  EXPECT_EQ(cast(x, DType::Float32), x);
  EXPECT_EQ(cast(x, DType::BFloat16).op(), Op::Cast);
}

TEST(LoopExpr, SubstituteRewritesEveryIndex) {
  Buffer b = make_buffer(DType::Float32);
  Expr e = binary(Op::Mul, load(&b, index_var(0) * 4 + index_var(1)), cast(index_value(index_var(1)), DType::Float32));
  Expr r = substitute(e, [](SymExpr s) { return s == index_var(1) ? SymExpr::integer(2) : s; });
  EXPECT_EQ(to_string(r), "mul(load(b, 4*i0 + 2), cast_f32(index(2)))");
  EXPECT_EQ(op_count(r), 2);
  EXPECT_EQ(loads(r).size(), 1u);
}

TEST(LoopExpr, IndirectLoadsAreInternedAndSubstituted) {
  Buffer b = make_buffer(DType::Float32);
  Buffer ix = make_buffer(DType::Int64);
  Expr pos = load(&ix, index_var(0));
  IndirectIndex at[] = {{pos, SymExpr::integer(1), SymExpr::integer(10), 1}};
  Expr e = indirect_load(&b, index_var(0) * 10, at, nullptr, false);
  EXPECT_EQ(e, indirect_load(&b, index_var(0) * 10, at, nullptr, false));
  EXPECT_NE(e, indirect_load(&b, index_var(0) * 10, at, nullptr, true));
  Expr r = substitute(e, [](SymExpr s) { return s == index_var(0) ? SymExpr::integer(3) : s; });
  EXPECT_EQ(to_string(r), "indirect_load(b, 30 + [load(b, 3)]*1<10>)");
  EXPECT_EQ(loads(r).size(), 2u);  // the position's load and the indirect one
}

// The facts of a loop over [0, 14) in i0 and [0, 70000) in i1 (no shape environment symbols).
sym::FactsFn loop_facts() {
  return [](SymExpr s) {
    if (s == index_var(0)) return sym::SymbolFacts{sym::ValueRange{0, 13}, 1};
    if (s == index_var(1)) return sym::SymbolFacts{sym::ValueRange{0, 69999}, 1};
    return sym::SymbolFacts{};
  };
}

TEST(LoopExpr, IndexArithmeticIsASymExprWhereItCannotWrapOrTruncateNegatives) {
  sym::FactsFn facts = loop_facts();
  Expr i = index_value(index_var(0));
  Expr k = int_constant(11, DType::Int64);
  Expr fourteen = int_constant(14, DType::Int64);
  // torch.roll's positions: (i + 11) fmod 14, never negative, so fmod is mod.
  SymExpr roll = index_arithmetic(binary(Op::Fmod, binary(Op::Add, i, k), fourteen), facts);
  ASSERT_TRUE(roll);
  EXPECT_EQ(roll, sym::mod(index_var(0) + 11, 14));
  // (i - 11) fmod 14 can be negative: C's fmod and Python's mod differ there.
  EXPECT_FALSE(index_arithmetic(binary(Op::Fmod, binary(Op::Sub, i, k), fourteen), facts));
  // ... but its floor form (remainder) is a mod for every value.
  EXPECT_TRUE(index_arithmetic(binary(Op::Remainder, binary(Op::Sub, i, k), fourteen), facts));
  // A division by a value that is not a positive constant, or a load, is not index arithmetic.
  EXPECT_FALSE(index_arithmetic(binary(Op::FloorDiv, i, i), facts));
  Buffer b = make_buffer(DType::Int64);
  EXPECT_FALSE(index_arithmetic(binary(Op::Add, i, load(&b, index_var(0))), facts));
  // An int32 product that may pass 2^31 wraps in the generated code: refused; a small one fits.
  Expr j32 = cast(index_value(index_var(1)), DType::Int32);
  EXPECT_FALSE(index_arithmetic(binary(Op::Mul, j32, j32), facts));
  EXPECT_TRUE(index_arithmetic(binary(Op::Mul, j32, int_constant(3, DType::Int32)), facts));
}

TEST(LoopLowering, GatherOfAVirtualValueReadsItsInputAndIsNotFusedWithItsProducer) {
  ops::install_schema_op_info();
  auto g = parse_graph(R"(graph @g functional {
  %x = input : f32[4, 8]
  %i = input : i64[4, 1]
  %e = aten.exp.default(%x) : f32[4, 8]
  %y = aten.gather.default(%e, 1, %i) : f32[4, 1]
  %z = aten.gather.default(%y, 0, %i) : f32[4, 1]
  output %z
})");
  auto p = lower(*g);
  int indirect_reads_of_input = 0;
  for (const auto& b : p->buffers) {
    EXPECT_NE(b->kind, BufferKind::Fallback);
    if (b->body)
      for (Expr l : loads(b->body)) indirect_reads_of_input += l.op() == Op::IndirectLoad && l.buffer() == p->inputs[0];
  }
  EXPECT_EQ(indirect_reads_of_input, 1);  // exp(x) is not stored
  // %z reads the realized %y at a loaded row: a separate kernel.
  sched::Schedule s = sched::schedule(*p);
  EXPECT_EQ(s.kernels.size(), 2u);
}

TEST(LoopLowering, SoftmaxBecomesTwoReductionsAndOnePointwiseInOneKernel) {
  ops::install_schema_op_info();
  auto g = parse_graph(R"(graph @s functional {
  sym s0 : hint=4, range=[1, inf]
  %x = input : f32[s0, 8]
  %m = aten.amax.default(%x, [1], true) : f32[s0, 1]
  %z = aten.sub.Tensor(%x, %m) : f32[s0, 8]
  %e = aten.exp.default(%z) : f32[s0, 8]
  %s = aten.sum.dim_IntList(%e, [1], true) : f32[s0, 1]
  %y = aten.div.Tensor(%e, %s) : f32[s0, 8]
  output %y
})");
  auto p = lower(*g);
  int reductions = 0, pointwise = 0;
  for (const auto& b : p->buffers) {
    reductions += b->kind == BufferKind::Reduction;
    pointwise += b->kind == BufferKind::Pointwise;
  }
  EXPECT_EQ(reductions, 2);
  EXPECT_EQ(pointwise, 1);  // sub and exp are inlined into both readers
  sched::Schedule s = sched::schedule(*p);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0]->members.size(), 3u);
}

TEST(LoopLowering, CondLowersToAControlStepWithBothBranches) {
  ops::install_schema_op_info();
  auto g = parse_graph(R"(graph @c functional {
  %p = input : bool[]
  %x = input : f32[4]
  %r = higher_order.cond(%p, [%x]) : f32[4]
    subgraph true_branch functional {
      %a = input : f32[4]
      %b = aten.exp.default(%a) : f32[4]
      output %b
    }
    subgraph false_branch functional {
      %a = input : f32[4]
      output %a
    }
  output %r
})", "c.tir");
  std::unique_ptr<LoopProgram> p = lower(*g);
  verify_program(*p);
  const Buffer* control = nullptr;
  for (const auto& b : p->buffers)
    if (b->kind == BufferKind::Control) control = b.get();
  ASSERT_NE(control, nullptr);
  ASSERT_EQ(control->subprograms.size(), 2u);
  ASSERT_EQ(control->library_operands.size(), 2u);  // the predicate, then the operand
  // The false branch returns its input: a copy into a buffer of its own, which the cond's
  // result memory can take.
  const LoopProgram& f = *control->subprograms[1];
  ASSERT_EQ(f.outputs.size(), 1u);
  EXPECT_EQ(f.outputs[0].buffer->kind, BufferKind::Pointwise);
}

TEST(LoopLowering, UnsupportedControlFlowIsAUserErrorAtTheNode) {
  ops::install_schema_op_info();
  // A carried value whose layout changes around the loop cannot stay in the loop's memory.
  auto g = parse_graph(R"(graph @c functional {
  %x = input : f32[4, 4]
  %r = higher_order.while_loop([%x]) : f32[4, 4]{strides=[1, 4]}
    subgraph cond_fn functional {
      %a = input : f32[4, 4]
      %s = aten.sum.default(%a) : f32[]
      %go = aten.gt.Scalar(%s, 100.0) : bool[]
      output %go
    }
    subgraph body_fn functional {
      %a = input : f32[4, 4]
      %t = aten.t.default(%a) : f32[4, 4]{strides=[1, 4], storage=%a}
      output %t
    }
  output %r
})", "c.tir");
  try {
    lower(*g);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(std::string(e.what()).find("changes its layout around the loop"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace toroid::loop

namespace toroid::loop {
namespace {

std::string kernel_source(const std::string& text) {
  auto g = parse_graph(text);
  auto p = lower(*g);
  sched::Schedule s = sched::schedule(*p);
  codegen::wrapper::WrapperProgram w = codegen::wrapper::build_wrapper(*p, s);
  return codegen::wrapper::kernels_source(w);
}

// The kernel cache is keyed by the source: the same graph must give the same C++ whatever the
// process parsed before (size symbols made later must not reorder index expressions).
TEST(LoopLowering, KernelSourceDoesNotDependOnWhatWasCompiledBefore) {
  ops::install_schema_op_info();
  const std::string text = R"(graph @t functional {
  sym s0 : hint=4, range=[1, inf]
  sym s1 : hint=8, range=[1, inf]
  %x = input : f32[s0, s1, 64]
  %y = aten.transpose.int(%x, 1, 2) : f32[s0, 64, s1]{strides=[64*s1, 1, 64], storage=%x}
  %z = aten.exp.default(%y) : f32[s0, 64, s1]
  output %z
})";
  std::string first = kernel_source(text);
  kernel_source(R"(graph @other functional {
  sym s0 : hint=3, range=[1, inf]
  %a = input : f32[s0, 5]
  %b = aten.sum.dim_IntList(%a, [0]) : f32[5]
  output %b
})");
  EXPECT_EQ(kernel_source(text), first);
}

}  // namespace
}  // namespace toroid::loop
