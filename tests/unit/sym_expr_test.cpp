// Builders and canonicalization of sym::Expr.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sym_test_util.h"

#include "toroid/support/error.h"
#include "toroid/sym/expr.h"

namespace toroid::sym {
namespace {

using symtest::I;
using symtest::F;

struct Syms {
  Expr s0 = Expr::fresh_symbol("s0");
  Expr s1 = Expr::fresh_symbol("s1");
  Expr s2 = Expr::fresh_symbol("s2");
};

TEST(SymExpr, HashConsingGivesIdenticalNodes) {
  Syms s;
  EXPECT_EQ(I(5), I(5));
  EXPECT_EQ(add(s.s0, I(1)), add(I(1), s.s0));
  EXPECT_EQ(mul(s.s0, s.s1), mul(s.s1, s.s0));
  EXPECT_EQ((s.s0 + s.s1) + s.s2, s.s0 + (s.s1 + s.s2));
  EXPECT_EQ(add(s.s0, I(1)).node(), add(s.s0, I(1)).node());
  EXPECT_EQ(add(s.s0, I(1)).hash(), add(I(1), s.s0).hash());
  EXPECT_NE(add(s.s0, I(1)), add(s.s0, I(2)));
}

TEST(SymExpr, FreshSymbolsAreDistinctWhateverTheName) {
  Expr a = Expr::fresh_symbol("x");
  Expr b = Expr::fresh_symbol("x");
  EXPECT_NE(a, b);
  EXPECT_LT(a.symbol().id, b.symbol().id);
  EXPECT_TRUE(a < b);
  EXPECT_EQ(a.symbol().name, "x");
  EXPECT_TRUE(a.is_symbol());
  EXPECT_TRUE(a.has_symbols());
  EXPECT_FALSE(I(3).has_symbols());
}

TEST(SymExpr, AddCollectsLikeTerms) {
  Syms s;
  EXPECT_EQ(add(mul(I(2), s.s0), mul(I(3), s.s0)), mul(I(5), s.s0));
  EXPECT_EQ((s.s0 + 1 + s.s0).str(), "2*s0 + 1");
  EXPECT_EQ(s.s0 - s.s0, I(0));
  EXPECT_EQ((s.s0 + s.s1 - s.s0).str(), "s1");
  EXPECT_EQ((2 * s.s0 * s.s1 + 3 * s.s1 * s.s0).str(), "5*s0*s1");
  EXPECT_EQ((I(2) + I(3)), I(5));
  Expr sum = s.s0 + s.s1 + 4;
  ASSERT_EQ(sum.kind(), Kind::Add);
  EXPECT_EQ(sum.operands().back(), I(4));  // the constant is last
}

TEST(SymExpr, MulMergesPowersAndFoldsConstants) {
  Syms s;
  EXPECT_EQ(mul(s.s0, s.s0), pow(s.s0, 2));
  EXPECT_EQ(mul(pow(s.s0, 2), s.s0), pow(s.s0, 3));
  EXPECT_EQ(mul(I(0), s.s0), I(0));
  EXPECT_EQ(mul(I(1), s.s0), s.s0);
  EXPECT_EQ((2 * s.s0 * 3).str(), "6*s0");
  EXPECT_EQ(pow(s.s0, 0), I(1));
  EXPECT_EQ(pow(s.s0, 1), s.s0);
  EXPECT_EQ(pow(pow(s.s0, 2), 3), pow(s.s0, 6));
  EXPECT_EQ(pow(I(3), 4), I(81));
  EXPECT_EQ(pow(mul(I(2), s.s0), 2).str(), "4*s0**2");
  // A coefficient is distributed over a single sum.
  EXPECT_EQ((2 * (s.s0 + 1)).str(), "2*s0 + 2");
  EXPECT_EQ(neg(s.s0 + s.s1).str(), "-s0 - s1");
}

TEST(SymExpr, OverflowIsNotFolded) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Expr big = mul(I(kMax), I(2));
  EXPECT_EQ(big.kind(), Kind::Mul);
  Expr sum = add(I(kMax), I(1));
  EXPECT_EQ(sum.kind(), Kind::Add);
  EXPECT_FALSE(evaluate(sum, [](Expr) { return std::nullopt; }).has_value());
  Expr p = pow(I(10), 30);
  EXPECT_EQ(p.kind(), Kind::Pow);
  Expr nm = neg(I(std::numeric_limits<int64_t>::min()));
  EXPECT_FALSE(nm.is_constant());
  EXPECT_EQ(floordiv(I(std::numeric_limits<int64_t>::min()), I(-1)).kind(), Kind::Mul);
}

TEST(SymExpr, FloorDivAndModFoldWithPythonSemantics) {
  Syms s;
  EXPECT_EQ(floordiv(I(-7), I(2)), I(-4));
  EXPECT_EQ(mod(I(-7), I(2)), I(1));
  EXPECT_EQ(mod(I(7), I(-2)), I(-1));
  EXPECT_EQ(floordiv(s.s0, I(1)), s.s0);
  EXPECT_EQ(mod(s.s0, I(1)), I(0));
  EXPECT_EQ(floordiv(s.s0, I(-1)), neg(s.s0));
  EXPECT_EQ(floordiv(I(0), s.s0), I(0));
  EXPECT_EQ(floordiv(s.s0, 4).kind(), Kind::FloorDiv);
}

TEST(SymExpr, DivisionByConstantZeroIsAUserError) {
  Syms s;
  EXPECT_THROW(floordiv(s.s0, I(0)), UserError);
  EXPECT_THROW(mod(s.s0 + 1, I(0)), UserError);
  try {
    floordiv(s.s0, I(0));
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("division by zero in symbolic expression"), std::string::npos);
  }
}

TEST(SymExpr, MinMaxFlattenFoldAndDedupe) {
  Syms s;
  EXPECT_EQ(min(s.s0, s.s0), s.s0);
  EXPECT_EQ(min(min(s.s0, s.s1), s.s2), min(std::vector<Expr>{s.s2, s.s1, s.s0}));
  EXPECT_EQ(min(I(3), I(5)), I(3));
  EXPECT_EQ(max(I(3), I(5)), I(5));
  EXPECT_EQ(min(std::vector<Expr>{I(3), s.s0, I(7)}).str(), "Min(3, s0)");
  EXPECT_EQ(max(s.s0, max(I(2), I(9))).str(), "Max(9, s0)");
}

TEST(SymExpr, ComparisonsFoldAndCanonicalize) {
  Syms s;
  EXPECT_EQ(lt(I(1), I(2)), Expr::boolean(true));
  EXPECT_EQ(le(I(3), I(2)), Expr::boolean(false));
  EXPECT_EQ(eq(s.s0, s.s0), Expr::boolean(true));
  EXPECT_EQ(ne(s.s0, s.s0), Expr::boolean(false));
  EXPECT_EQ(lt(s.s0, s.s0), Expr::boolean(false));
  EXPECT_EQ(le(s.s0, s.s0), Expr::boolean(true));
  EXPECT_EQ(gt(s.s0, s.s1), lt(s.s1, s.s0));
  EXPECT_EQ(ge(s.s0, s.s1), le(s.s1, s.s0));
  EXPECT_EQ(eq(I(4), s.s0), eq(s.s0, I(4)));
  EXPECT_EQ(eq(I(4), s.s0).str(), "s0 == 4");
  EXPECT_EQ(eq(s.s1, s.s0), eq(s.s0, s.s1));
  // Floats: x == x is not folded (nan).
  Expr x = Expr::fresh_symbol("x", Type::Float);
  EXPECT_EQ(eq(x, x).kind(), Kind::Eq);
  EXPECT_EQ(lt(F(1.0), F(2.0)), Expr::boolean(true));
  EXPECT_EQ(eq(F(NAN), F(NAN)), Expr::boolean(false));
}

TEST(SymExpr, BooleanConnectives) {
  Syms s;
  Expr t = Expr::boolean(true), f = Expr::boolean(false);
  Expr a = lt(s.s0, s.s1), b = eq(s.s2, I(3));
  EXPECT_EQ(logical_and(a, t), a);
  EXPECT_EQ(logical_and(a, f), f);
  EXPECT_EQ(logical_or(a, t), t);
  EXPECT_EQ(logical_or(a, f), a);
  EXPECT_EQ(logical_and(a, a), a);
  EXPECT_EQ(logical_and(a, b), logical_and(b, a));
  EXPECT_EQ(logical_and(logical_and(a, b), a), logical_and(a, b));
  EXPECT_EQ(logical_not(logical_not(b)), b);
  EXPECT_EQ(logical_not(a), le(s.s1, s.s0));
  EXPECT_EQ(logical_not(le(s.s1, s.s0)), a);
  EXPECT_EQ(logical_not(b), ne(s.s2, I(3)));
  EXPECT_EQ(logical_and(a, logical_not(a)), f);
  EXPECT_EQ(logical_or(a, logical_not(a)), t);
  EXPECT_EQ(logical_not(t), f);
  EXPECT_EQ(eq(a, t), a);
  EXPECT_EQ(eq(a, f), logical_not(a));
  EXPECT_EQ(logical_and(std::vector<Expr>{}), t);
}

TEST(SymExpr, FloatPromotion) {
  Syms s;
  Expr e = add(s.s0, F(1.5));
  EXPECT_TRUE(e.is_float());
  EXPECT_EQ(e.str(), "ToFloat(s0) + 1.5");
  EXPECT_EQ(to_float(I(3)), F(3.0));
  EXPECT_EQ(to_float(to_float(s.s0)), to_float(s.s0));
  EXPECT_TRUE(truediv(s.s0, s.s1).is_float());
  EXPECT_EQ(truediv(F(1.0), F(4.0)), F(0.25));
  EXPECT_EQ(mul(F(2.0), F(3.0)), F(6.0));
  EXPECT_THROW(add(s.s0, Expr::boolean(true)), InternalError);
  EXPECT_THROW(lt(Expr::boolean(true), Expr::boolean(false)), InternalError);
}

TEST(SymExpr, FloatConstantsAreDistinctByBits) {
  EXPECT_NE(F(0.0), F(-0.0));
  EXPECT_EQ(F(NAN), F(NAN));
  EXPECT_EQ(F(1.5), F(1.5));
  EXPECT_NE(Expr::compare(F(0.0), F(-0.0)), 0);
}

TEST(SymExpr, CompareIsATotalOrderIndependentOfCreation) {
  Syms s;
  std::vector<Expr> xs = {s.s2, I(3), s.s0 + 1, s.s1, mul(s.s0, s.s1), floordiv(s.s0, 2), I(-1)};
  for (Expr a : xs) {
    EXPECT_EQ(Expr::compare(a, a), 0);
    for (Expr b : xs) {
      EXPECT_EQ(Expr::compare(a, b), -Expr::compare(b, a));
      for (Expr c : xs) {
        if (Expr::compare(a, b) < 0 && Expr::compare(b, c) < 0) {
          EXPECT_LT(Expr::compare(a, c), 0);
        }
      }
    }
  }
  EXPECT_LT(Expr::compare(I(-1), I(3)), 0);
  EXPECT_LT(Expr::compare(s.s0, s.s1), 0);
}

TEST(SymExpr, FreeSymbolsSubstituteRebuild) {
  Syms s;
  Expr e = floordiv(s.s1 * s.s0 + s.s1, 4);
  auto fs = e.free_symbols();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0], s.s0);
  EXPECT_EQ(fs[1], s.s1);
  Expr r = substitute(e, [&](Expr sym) { return sym == s.s1 ? I(4) : Expr(); });
  EXPECT_EQ(r.str(), "(4*s0 + 4)//4");
  Expr r2 = substitute(e, [&](Expr sym) { return sym == s.s1 ? I(4) : I(3); });
  EXPECT_EQ(r2, I(4));
  Expr like = min(s.s0, s.s1);
  std::vector<Expr> ops = {I(2), I(7)};
  EXPECT_EQ(rebuild(like, ops), I(2));
  EXPECT_EQ(rebuild(pow(s.s0, 3), std::vector<Expr>{I(2)}), I(8));
}

TEST(SymExpr, EvaluateWithPythonSemantics) {
  Syms s;
  auto bind = [&](Expr sym) -> std::optional<Scalar> {
    if (sym == s.s0) return Scalar{Type::Int, -7, 0};
    if (sym == s.s1) return Scalar{Type::Int, 2, 0};
    return std::nullopt;
  };
  EXPECT_EQ(evaluate(floordiv(s.s0, s.s1), bind)->i, -4);
  EXPECT_EQ(evaluate(mod(s.s0, s.s1), bind)->i, 1);
  EXPECT_EQ(evaluate(max(s.s0, s.s1 * 3), bind)->i, 6);
  EXPECT_EQ(evaluate(lt(s.s0, s.s1), bind)->i, 1);
  EXPECT_DOUBLE_EQ(evaluate(truediv(s.s0, s.s1), bind)->f, -3.5);
  EXPECT_FALSE(evaluate(s.s2 + 1, bind).has_value());
  EXPECT_FALSE(evaluate(floordiv(s.s0, s.s1 - 2), bind).has_value());
  // A false operand decides And even when another is undefined.
  EXPECT_EQ(evaluate(logical_and(lt(s.s1, s.s0), eq(s.s2, I(1))), bind)->i, 0);
}

TEST(SymExpr, PyFloorDivAndModMatchPython) {
  for (int64_t a = -20; a <= 20; ++a) {
    for (int64_t b = -20; b <= 20; ++b) {
      if (b == 0) {
        EXPECT_FALSE(py_floordiv(a, b).has_value());
        EXPECT_FALSE(py_mod(a, b).has_value());
        continue;
      }
      // Python: a // b == floor(a / b); a % b == a - b * (a // b), with the sign of b.
      int64_t q = static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
      int64_t r = a - b * q;
      ASSERT_EQ(*py_floordiv(a, b), q) << a << " // " << b;
      ASSERT_EQ(*py_mod(a, b), r) << a << " % " << b;
      if (r != 0) {
        ASSERT_EQ(r < 0, b < 0);
      }
    }
  }
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_FALSE(py_floordiv(kMin, -1).has_value());
  EXPECT_EQ(*py_mod(kMin, -1), 0);
  EXPECT_EQ(*py_floordiv(kMin, 1), kMin);
  EXPECT_EQ(*py_mod(kMin, 3), 1);  // -2**63 % 3 == 1 in Python
}

}  // namespace
}  // namespace toroid::sym
