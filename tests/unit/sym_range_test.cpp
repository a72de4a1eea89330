// ValueRange, bound() and known_divisor().
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "sym_test_util.h"

#include "toroid/sym/range.h"

namespace toroid::sym {
namespace {

using symtest::I;
using symtest::kNegInf;
using symtest::kPosInf;

struct Facts {
  std::map<Expr, SymbolFacts> m;
  FactsFn fn() const {
    return [this](Expr s) {
      auto it = m.find(s);
      return it == m.end() ? SymbolFacts{} : it->second;
    };
  }
};

TEST(SymRange, ValueRangeBasics) {
  ValueRange r{2, 7};
  EXPECT_TRUE(r.contains(2));
  EXPECT_FALSE(r.contains(8));
  EXPECT_EQ(r.intersect({5, 10}), (ValueRange{5, 7}));
  EXPECT_TRUE(r.intersect({8, 10}).empty());
  EXPECT_EQ(r.join({-1, 3}), (ValueRange{-1, 7}));
  EXPECT_EQ(ValueRange::at_least(2).str(), "[2, inf]");
  EXPECT_EQ((ValueRange{kNegInf, 7}).str(), "[-inf, 7]");
  EXPECT_EQ(ValueRange::all().str(), "[-inf, inf]");
  EXPECT_TRUE(ValueRange::exactly(3).is_exact());
  EXPECT_FALSE(ValueRange::at_least(0).hi_finite());
}

TEST(SymRange, BoundArithmetic) {
  Expr s0 = Expr::fresh_symbol("s0"), s1 = Expr::fresh_symbol("s1");
  Facts f;
  f.m[s0] = {{2, 10}, 1};
  f.m[s1] = {{-3, 4}, 1};
  auto b = [&](Expr e) { return bound(e, f.fn()); };
  EXPECT_EQ(b(s0 + s1), (ValueRange{-1, 14}));
  EXPECT_EQ(b(s0 - s1), (ValueRange{-2, 13}));
  EXPECT_EQ(b(s0 * s1), (ValueRange{-30, 40}));
  EXPECT_EQ(b(pow(s1, 2)), (ValueRange{0, 16}));
  EXPECT_EQ(b(pow(s1, 3)), (ValueRange{-27, 64}));
  EXPECT_EQ(b(floordiv(s0, 3)), (ValueRange{0, 3}));
  EXPECT_EQ(b(floordiv(s1, 2)), (ValueRange{-2, 2}));
  EXPECT_EQ(b(mod(s1, 3)), (ValueRange{0, 2}));
  EXPECT_EQ(b(mod(s0, 16)), (ValueRange{2, 10}));
  EXPECT_EQ(b(mod(s1, -4)), (ValueRange{-3, 0}));
  EXPECT_EQ(b(min(s0, s1)), (ValueRange{-3, 4}));
  EXPECT_EQ(b(max(s0, s1)), (ValueRange{2, 10}));
  EXPECT_EQ(b(s0 - s0 + 3), ValueRange::exactly(3));
  EXPECT_EQ(b(lt(s1, s0 + 8)), ValueRange::exactly(1));
  EXPECT_EQ(b(lt(s0, s1)), (ValueRange{0, 1}));
  EXPECT_EQ(b(eq(s0, I(1))), ValueRange::exactly(0));
  EXPECT_EQ(b(logical_not(eq(s0, I(1)))), ValueRange::exactly(1));
  EXPECT_EQ(b(floordiv(s1, s0)), (ValueRange{-2, 2}));
  // Divisor by a range containing zero: zero is excluded (undefined there).
  EXPECT_EQ(b(floordiv(s0, s1)), (ValueRange{-10, 10}));
  EXPECT_EQ(b(to_float(s0)), ValueRange::all());
}

TEST(SymRange, BoundSaturatesAtInfinity) {
  Expr s = Expr::fresh_symbol("s"), u = Expr::fresh_symbol("u");
  Facts f;
  f.m[s] = {ValueRange::at_least(0), 1};
  auto b = [&](Expr e) { return bound(e, f.fn()); };
  EXPECT_EQ(b(s + 1), ValueRange::at_least(1));
  EXPECT_EQ(b(-1 * s), (ValueRange{kNegInf, 0}));
  EXPECT_EQ(b(s * s), ValueRange::at_least(0));
  EXPECT_EQ(b(u), ValueRange::all());
  EXPECT_EQ(b(u * 0 + 5), ValueRange::exactly(5));
  EXPECT_EQ(b(floordiv(s, 4)), ValueRange::at_least(0));
  EXPECT_EQ(b(mod(u, 8)), (ValueRange{0, 7}));
  EXPECT_EQ(b(pow(s + 2, 70)).lo, ValueRange::kPosInf - 1);  // 2**70 does not fit; clamped
  EXPECT_EQ(b(pow(s + 2, 70)).hi, kPosInf);
  EXPECT_EQ(b(s + I(kPosInf - 1) + I(kPosInf - 1)).hi, kPosInf);
}

TEST(SymRange, SymbolDivisorTightensRange) {
  Expr s = Expr::fresh_symbol("s");
  Facts f;
  f.m[s] = {{1, 30}, 8};
  EXPECT_EQ(bound(s, f.fn()), (ValueRange{8, 24}));
}

TEST(SymRange, KnownDivisor) {
  Expr s0 = Expr::fresh_symbol("s0"), s1 = Expr::fresh_symbol("s1");
  Facts f;
  f.m[s0] = {ValueRange::at_least(0), 4};
  auto kd = [&](Expr e) { return known_divisor(e, f.fn()); };
  EXPECT_EQ(kd(I(12)), 12);
  EXPECT_EQ(kd(I(-12)), 12);
  EXPECT_EQ(kd(s1), 1);
  EXPECT_EQ(kd(s0), 4);
  EXPECT_EQ(kd(6 * s1), 6);
  EXPECT_EQ(kd(6 * s1 + 4), 2);
  EXPECT_EQ(kd(3 * s0), 12);
  EXPECT_EQ(kd(s0 * s1 * 2), 8);
  EXPECT_EQ(kd(floordiv(8 * s1, 2)), 4);
  EXPECT_EQ(kd(floordiv(s1, 2)), 1);
  EXPECT_EQ(kd(pow(s0, 2)), 16);
  EXPECT_EQ(kd(min(s0, 6 * s1)), 2);
  EXPECT_EQ(kd(mod(6 * s1, 4)), 2);
  EXPECT_EQ(kd(I(0)), int64_t{1} << 62);
  EXPECT_EQ(kd(mod(s0, 4)), int64_t{1} << 62);  // always 0
}

// bound() is sound: random expressions evaluated at every point lie in their bound.
TEST(SymRange, BoundIsSoundOnRandomExpressions) {
  std::mt19937 rng(77);
  Expr a = Expr::fresh_symbol("a"), c = Expr::fresh_symbol("c");
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::function<Expr(int)> gen = [&](int d) -> Expr {
    if (d == 0 || pick(4) == 0) {
      int k = pick(3);
      return k == 0 ? a : (k == 1 ? c : I(pick(19) - 9));
    }
    Expr x = gen(d - 1), y = gen(d - 1);
    int64_t k = pick(9) + 1;
    switch (pick(9)) {
      case 0: return x + y;
      case 1: return x - y;
      case 2: return x * y;
      case 3: return floordiv(x, pick(2) ? k : -k);
      case 4: return mod(x, pick(2) ? k : -k);
      case 5: return min(x, y);
      case 6: return max(x, y);
      case 7: return floordiv(x, y.has_symbols() ? y : a);
      default: return mod(x, y.has_symbols() ? y : c);
    }
  };
  for (int iter = 0; iter < 400; ++iter) {
    Facts f;
    int64_t alo = pick(25) - 12, clo = pick(25) - 12;
    f.m[a] = {{alo, alo + pick(8)}, 1};
    f.m[c] = {{clo, clo + pick(8)}, 1};
    Expr e = gen(3);
    ValueRange r = bound(e, f.fn());
    for (int64_t va = f.m[a].range.lo; va <= f.m[a].range.hi; ++va) {
      for (int64_t vc = f.m[c].range.lo; vc <= f.m[c].range.hi; ++vc) {
        auto v = evaluate(e, [&](Expr s) -> std::optional<Scalar> {
          return Scalar{Type::Int, s == a ? va : vc, 0};
        });
        if (!v) continue;
        ASSERT_TRUE(r.contains(v->i)) << e.str() << " = " << v->i << " at a=" << va << " c=" << vc
                                      << " outside " << r.str();
      }
    }
  }
}

}  // namespace
}  // namespace toroid::sym
