// Brute-force soundness checks.
//
//  - Every simplifier rule, run alone (SimplifyOptions::only_rules), on random expressions and on
//    per-rule seed patterns over 3 symbols with small random ranges (and sometimes divisors or
//    exact ranges): the result equals the input under every assignment of the symbols within
//    their facts where the input is defined. Each rule must fire often enough to be checked.
//  - The builders: random trees evaluated directly (Python semantics) against the canonical
//    expression the builders produce from them.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <random>

#include "sym_test_util.h"

#include "toroid/support/error.h"
#include "toroid/sym/simplify.h"

namespace toroid::sym {
namespace {

using symtest::I;

struct World {
  std::array<Expr, 3> syms{Expr::fresh_symbol("a"), Expr::fresh_symbol("b"), Expr::fresh_symbol("c")};
  std::array<SymbolFacts, 3> facts;
  std::vector<std::array<int64_t, 3>> points;

  FactsFn fn() const {
    return [this](Expr s) {
      for (size_t i = 0; i < 3; ++i) {
        if (syms[i] == s) return facts[i];
      }
      return SymbolFacts{};
    };
  }

  void randomize(std::mt19937& rng) {
    auto pick = [&](int n) { return static_cast<int64_t>(rng() % static_cast<unsigned>(n)); };
    for (;;) {
      for (auto& f : facts) {
        int64_t lo = pick(25) - 12;
        int64_t width = pick(4) == 0 ? 0 : pick(6);
        if (pick(5) == 0) lo = pick(3);  // often-nonnegative sizes
        f.range = {lo, std::min<int64_t>(lo + width, 12)};
        f.divisor = pick(5) == 0 ? 2 + pick(2) : 1;
      }
      points.clear();
      std::array<std::vector<int64_t>, 3> vals;
      for (size_t i = 0; i < 3; ++i) {
        for (int64_t v = facts[i].range.lo; v <= facts[i].range.hi; ++v) {
          if (v % facts[i].divisor == 0) vals[i].push_back(v);
        }
      }
      if (vals[0].empty() || vals[1].empty() || vals[2].empty()) continue;
      for (int64_t x : vals[0])
        for (int64_t y : vals[1])
          for (int64_t z : vals[2]) points.push_back({x, y, z});
      return;
    }
  }

  std::optional<Scalar> eval(Expr e, const std::array<int64_t, 3>& p) const {
    return evaluate(e, [&](Expr s) -> std::optional<Scalar> {
      for (size_t i = 0; i < 3; ++i) {
        if (syms[i] == s) return Scalar{Type::Int, p[i], 0};
      }
      return std::nullopt;
    });
  }
};

struct Gen {
  std::mt19937& rng;
  const World& w;

  int64_t pick(int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); }
  int64_t small() { return pick(19) - 9; }
  int64_t nonzero(int64_t lo, int64_t hi) {  // in [-hi, -lo] or [lo, hi]
    int64_t v = lo + pick(hi - lo + 1);
    return pick(2) ? v : -v;
  }
  Expr sym() { return w.syms[static_cast<size_t>(pick(3))]; }

  Expr integer(int depth) {
    if (depth <= 0 || pick(4) == 0) return pick(3) == 0 ? I(small()) : sym();
    Expr x = integer(depth - 1);
    Expr y = integer(depth - 1);
    switch (pick(12)) {
      case 0:
      case 1: return add(x, y);
      case 2: return sub(x, y);
      case 3: return mul(I(small()), x);
      case 4: return mul(x, y);
      case 5: return floordiv(x, nonzero(1, 9));
      case 6: return mod(x, nonzero(1, 9));
      case 7: return min(x, y);
      case 8: return max(x, y);
      case 9: return pow(x, 2);
      case 10: return floordiv(x, y.has_symbols() ? y : sym());
      default: return mod(x, y.has_symbols() ? y : sym());
    }
  }

  Expr boolean(int depth) {
    if (depth <= 0 || pick(3) != 0) {
      Expr x = integer(depth), y = integer(depth);
      switch (pick(4)) {
        case 0: return eq(x, y);
        case 1: return ne(x, y);
        case 2: return lt(x, y);
        default: return le(x, y);
      }
    }
    switch (pick(3)) {
      case 0: return logical_and(boolean(depth - 1), boolean(depth - 1));
      case 1: return logical_or(boolean(depth - 1), boolean(depth - 1));
      default: return logical_not(boolean(depth - 1));
    }
  }

  Expr compare(Kind k, Expr a, Expr b) {
    switch (k) {
      case Kind::Eq: return eq(a, b);
      case Kind::Ne: return ne(a, b);
      case Kind::Lt: return lt(a, b);
      default: return le(a, b);
    }
  }

  // Patterns that the named rule is meant to match, filled with random parts.
  Expr seed(const std::string& rule) {
    Expr x = integer(static_cast<int>(pick(3)));
    Expr y = integer(static_cast<int>(pick(2)));
    Expr s = sym();
    int64_t c = nonzero(2, 5), k = small(), j = small();
    if (rule == "floordiv_exact") return floordiv(add(mul(I(c * k), x), I(c * j)), I(c));
    if (rule == "floordiv_split_add") return floordiv(add(std::vector<Expr>{mul(I(c * k), s), y, I(j)}), I(c));
    if (rule == "floordiv_small" || rule == "floordiv_by_range") {
      return pick(2) ? floordiv(x, nonzero(5, 30)) : floordiv(mod(x, I(c)), I(c));
    }
    if (rule == "floordiv_small_rest" || rule == "mod_small_rest") {
      // g*x + (a small rest): a symbol shifted into [0, g) often enough to fire.
      int64_t g = 2 + pick(4), kk = 1 + pick(4);
      Expr rest = pick(2) ? s : add(s, I(pick(3)));
      Expr a = add(std::vector<Expr>{mul(I(g * nonzero(1, 3)), x), rest, I(g * small())});
      return rule == "floordiv_small_rest" ? floordiv(a, I(g * kk)) : mod(a, I(g * kk));
    }
    if (rule == "floordiv_nested") {
      return floordiv(floordiv(x, pick(2) ? I(nonzero(1, 5)) : s), pick(2) ? I(nonzero(1, 5)) : sym());
    }
    if (rule == "floordiv_of_mod") {
      int64_t a = 1 + pick(4), b = nonzero(1, 4);
      return floordiv(mod(x, I(a * b)), I(pick(4) ? a : -a));
    }
    if (rule == "floordiv_multiple") return floordiv(mul(std::vector<Expr>{I(k), x, s}), pick(2) ? s : mul(I(c), s));
    if (rule == "mod_small" || rule == "mod_by_range") {
      return pick(2) ? mod(x, nonzero(5, 30)) : mod(mod(x, I(c)), I(nonzero(1, 9)));
    }
    if (rule == "add_div_mod_recombine_sym") {
      Expr d = pick(2) ? s : mul(s, sym());
      Expr scale = pick(2) ? I(k) : mul(I(k), sym());
      Expr a = sym();
      Expr inner = pick(2) ? x : floordiv(x, a);
      // The quotient as floordiv_nested writes (x//a)//d: x//(a*d).
      Expr quotient = inner == x || pick(2) ? floordiv(inner, d) : floordiv(x, mul(a, d));
      return add(std::vector<Expr>{mul(std::vector<Expr>{scale, d, quotient}), mul(scale, mod(inner, d)), y});
    }
    if (rule == "mod_divisible") return pick(2) ? mod(mul(I(c * k), x), I(c)) : mod(s, I(nonzero(1, 4)));
    if (rule == "mod_drop_multiples")
      return mod(add(std::vector<Expr>{mul(I(c * k), x), mul(I(j), s), I(small() * 3)}), I(c));
    if (rule == "mod_nested") {
      int64_t b = nonzero(1, 4);
      return mod(mod(x, I(b * nonzero(1, 4))), I(b));
    }
    if (rule == "mod_common_factor") return mod(add(mul(I(c * k), x), I(c * j)), I(c * nonzero(1, 4)));
    if (rule == "mod_multiple") return mod(mul(std::vector<Expr>{I(k), x, s}), pick(2) ? s : mul(I(c), s));
    if (rule == "mul_floordiv_exact") {
      Expr inner = pick(2) ? mul(I(c), x) : s;
      return mul(std::vector<Expr>{I(c * k), floordiv(inner, I(c)), pick(2) ? y : I(1)});
    }
    if (rule == "add_div_mod_recombine")
      return add(std::vector<Expr>{mul(I(k * c), floordiv(x, I(c))), mul(I(k), mod(x, I(c))), y});
    if (rule == "min_dominated" || rule == "max_dominated") {
      Expr other = pick(2) ? add(x, I(j)) : y;
      return rule == "min_dominated" ? min(x, other) : max(x, other);
    }
    if (rule == "min_absorb_max") return min(x, max(x, y));
    if (rule == "max_absorb_min") return max(x, min(x, y));
    if (rule == "symbol_exact_range") return add(x, s);
    Kind kinds[] = {Kind::Lt, Kind::Le, Kind::Eq, Kind::Ne};
    for (Kind kk : kinds) {
      std::string n = kind_name(kk);
      for (char& ch : n) ch = static_cast<char>(std::tolower(ch));
      if (rule == n + "_by_range") return compare(kk, x, y);
      if (rule == n + "_by_divisibility") return compare(kk, mul(I(c), x), add(mul(I(c), y), I(j)));
      if (rule == n + "_normalize")
        return compare(kk, add(mul(I(small()), x), I(j)), add(mul(I(small()), y), I(small())));
    }
    if (rule == "and_absorb_or" || rule == "or_absorb_and") {
      Expr a = boolean(1), b = boolean(1);
      return rule == "and_absorb_or" ? logical_and(a, logical_or(a, b)) : logical_or(a, logical_and(a, b));
    }
    ADD_FAILURE() << "no seed pattern for rule " << rule;
    return x;
  }
};

// Returns whether the rule fired; checks equivalence if it did.
bool check_rule(const World& w, const std::string& rule, Expr e) {
  SimplifyOptions opts;
  opts.only_rules = {rule};
  SimplifyStats stats;
  Expr out = simplify(e, w.fn(), opts, &stats);
  if (stats.steps == 0) return false;
  for (const auto& p : w.points) {
    auto before = w.eval(e, p);
    if (!before) continue;
    auto after = w.eval(out, p);
    EXPECT_TRUE(after.has_value() && after->i == before->i)
        << "rule " << rule << ": " << e.str() << " => " << out.str() << " at a=" << p[0] << " b=" << p[1]
        << " c=" << p[2] << ": " << before->i << " vs " << (after ? std::to_string(after->i) : "undefined")
        << " (facts a" << w.facts[0].range.str() << "/" << w.facts[0].divisor << " b" << w.facts[1].range.str()
        << "/" << w.facts[1].divisor << " c" << w.facts[2].range.str() << "/" << w.facts[2].divisor << ")";
    if (::testing::Test::HasFailure()) return true;
  }
  return true;
}

TEST(SymRules, EveryRuleIsSoundByBruteForce) {
  std::mt19937 rng(20240611);
  World w;
  Gen g{rng, w};
  for (const Rule& rule : simplifier_rules()) {
    constexpr int kTries = 300;
    int fired = 0;
    for (int i = 0; i < kTries; ++i) {
      w.randomize(rng);
      Expr e;
      try {
        if (i % 2 == 0) {
          e = g.seed(rule.name);
        } else {
          e = g.pick(3) == 0 ? g.boolean(2) : g.integer(3);
        }
      } catch (const UserError&) {
        continue;  // a divisor folded to the constant 0
      }
      if (check_rule(w, rule.name, e)) ++fired;
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GE(fired, 5) << "rule " << rule.name << " fired too rarely to be checked";
    std::printf("  %-24s fired on %3d of %d expressions\n", rule.name, fired, kTries);
  }
}

// ---- builders ----

enum class Op { Const, Sym, Add, Sub, Neg, Mul, FloorDiv, Mod, Pow, Min, Max, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not };

struct Raw {
  Op op;
  int64_t v = 0;  // Const value, Sym index, Pow exponent
  std::vector<Raw> kids;
  bool is_bool() const { return op >= Op::Eq; }
};

Raw gen_raw(std::mt19937& rng, int depth, bool want_bool) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (want_bool) {
    if (depth > 0 && pick(3) == 0) {
      int k = pick(3);
      Raw r{k == 0 ? Op::And : (k == 1 ? Op::Or : Op::Not), 0, {}};
      r.kids.push_back(gen_raw(rng, depth - 1, true));
      if (r.op != Op::Not) r.kids.push_back(gen_raw(rng, depth - 1, true));
      return r;
    }
    Op ops[] = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
    return Raw{ops[pick(6)], 0, {gen_raw(rng, depth - 1, false), gen_raw(rng, depth - 1, false)}};
  }
  if (depth <= 0 || pick(4) == 0) {
    if (pick(2)) return Raw{Op::Const, pick(19) - 9, {}};
    return Raw{Op::Sym, pick(3), {}};
  }
  Op ops[] = {Op::Add, Op::Sub, Op::Neg, Op::Mul, Op::FloorDiv, Op::Mod, Op::Pow, Op::Min, Op::Max};
  Raw r{ops[pick(9)], 0, {}};
  r.kids.push_back(gen_raw(rng, depth - 1, false));
  if (r.op == Op::Pow) {
    r.v = pick(4);
  } else if (r.op == Op::FloorDiv || r.op == Op::Mod) {
    if (pick(3) == 0) {
      r.kids.push_back(gen_raw(rng, depth - 1, false));
    } else {
      int64_t c = pick(9) + 1;
      r.kids.push_back(Raw{Op::Const, pick(2) ? c : -c, {}});
    }
  } else if (r.op != Op::Neg) {
    r.kids.push_back(gen_raw(rng, depth - 1, false));
  }
  return r;
}

std::optional<int64_t> eval_raw(const Raw& r, const std::array<int64_t, 3>& p) {
  std::vector<int64_t> k;
  for (const Raw& kid : r.kids) {
    auto v = eval_raw(kid, p);
    if (!v) return std::nullopt;
    k.push_back(*v);
  }
  int64_t out;
  switch (r.op) {
    case Op::Const: return r.v;
    case Op::Sym: return p[static_cast<size_t>(r.v)];
    case Op::Add: return __builtin_add_overflow(k[0], k[1], &out) ? std::nullopt : std::optional(out);
    case Op::Sub: return __builtin_sub_overflow(k[0], k[1], &out) ? std::nullopt : std::optional(out);
    case Op::Neg: return __builtin_sub_overflow(int64_t{0}, k[0], &out) ? std::nullopt : std::optional(out);
    case Op::Mul: return __builtin_mul_overflow(k[0], k[1], &out) ? std::nullopt : std::optional(out);
    case Op::FloorDiv: return py_floordiv(k[0], k[1]);
    case Op::Mod: return py_mod(k[0], k[1]);
    case Op::Pow: {
      int64_t acc = 1;
      for (int64_t i = 0; i < r.v; ++i) {
        if (__builtin_mul_overflow(acc, k[0], &acc)) return std::nullopt;
      }
      return acc;
    }
    case Op::Min: return std::min(k[0], k[1]);
    case Op::Max: return std::max(k[0], k[1]);
    case Op::Eq: return k[0] == k[1];
    case Op::Ne: return k[0] != k[1];
    case Op::Lt: return k[0] < k[1];
    case Op::Le: return k[0] <= k[1];
    case Op::Gt: return k[0] > k[1];
    case Op::Ge: return k[0] >= k[1];
    case Op::And: return k[0] && k[1];
    case Op::Or: return k[0] || k[1];
    case Op::Not: return !k[0];
  }
  return std::nullopt;
}

Expr build_raw(const Raw& r, const World& w, bool swapped) {
  std::vector<Expr> k;
  for (const Raw& kid : r.kids) k.push_back(build_raw(kid, w, swapped));
  // Commutative operators get their operands in either order.
  auto a = [&] { return swapped && k.size() == 2 ? k[1] : k[0]; };
  auto b = [&] { return swapped ? k[0] : k[1]; };
  switch (r.op) {
    case Op::Const: return I(r.v);
    case Op::Sym: return w.syms[static_cast<size_t>(r.v)];
    case Op::Add: return add(a(), b());
    case Op::Sub: return sub(k[0], k[1]);
    case Op::Neg: return neg(k[0]);
    case Op::Mul: return mul(a(), b());
    case Op::FloorDiv: return floordiv(k[0], k[1]);
    case Op::Mod: return mod(k[0], k[1]);
    case Op::Pow: return pow(k[0], r.v);
    case Op::Min: return min(a(), b());
    case Op::Max: return max(a(), b());
    case Op::Eq: return eq(a(), b());
    case Op::Ne: return ne(a(), b());
    case Op::Lt: return lt(k[0], k[1]);
    case Op::Le: return le(k[0], k[1]);
    case Op::Gt: return gt(k[0], k[1]);
    case Op::Ge: return ge(k[0], k[1]);
    case Op::And: return logical_and(a(), b());
    case Op::Or: return logical_or(a(), b());
    case Op::Not: return logical_not(k[0]);
  }
  return Expr();
}

TEST(SymRules, BuildersCanonicalizeSoundly) {
  std::mt19937 rng(99);
  World w;
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    w.randomize(rng);
    Raw r = gen_raw(rng, 4, i % 3 == 0);
    Expr e, e2;
    try {
      e = build_raw(r, w, false);
      e2 = build_raw(r, w, true);
    } catch (const UserError&) {
      continue;  // a divisor folded to the constant 0: undefined everywhere
    }
    ASSERT_EQ(e, e2) << e.str() << " vs " << e2.str();
    ASSERT_EQ(e, build_raw(r, w, false));  // deterministic
    for (const auto& p : w.points) {
      auto want = eval_raw(r, p);
      if (!want) continue;
      auto got = w.eval(e, p);
      ASSERT_TRUE(got.has_value() && got->i == *want)
          << e.str() << " at a=" << p[0] << " b=" << p[1] << " c=" << p[2] << ": want " << *want;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

// The whole simplifier (all rules together) on random expressions, against the input.
TEST(SymRules, FullSimplifierIsSoundOnRandomExpressions) {
  std::mt19937 rng(4242);
  World w;
  Gen g{rng, w};
  for (int i = 0; i < 3000; ++i) {
    w.randomize(rng);
    Expr e = i % 3 == 0 ? g.boolean(2) : g.integer(4);
    Expr out = simplify(e, w.fn());
    EXPECT_EQ(simplify(out, w.fn()), out) << "not idempotent: " << e.str() << " => " << out.str();
    for (const auto& p : w.points) {
      auto before = w.eval(e, p);
      if (!before) continue;
      auto after = w.eval(out, p);
      ASSERT_TRUE(after.has_value() && after->i == before->i)
          << e.str() << " => " << out.str() << " at a=" << p[0] << " b=" << p[1] << " c=" << p[2];
    }
  }
}

}  // namespace
}  // namespace toroid::sym
