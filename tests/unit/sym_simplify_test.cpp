// The simplifier: table-driven expected results, rule table sanity, stats and the step limit.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "sym_test_util.h"

#include "toroid/sym/simplify.h"

namespace toroid::sym {
namespace {

using symtest::I;
constexpr int64_t kInf = ValueRange::kPosInf;
using symtest::kNegInf;

struct Vars {
  Expr s0 = Expr::fresh_symbol("s0");
  Expr s1 = Expr::fresh_symbol("s1");
  Expr s2 = Expr::fresh_symbol("s2");
};

struct Fact {
  int which;  // 0, 1, 2: s0, s1, s2
  ValueRange range;
  int64_t divisor = 1;
};

struct Row {
  const char* name;
  std::function<Expr(const Vars&)> build;
  const char* expected;
  std::vector<Fact> facts;
};

TEST(SymSimplify, TableDriven) {
  Vars v;
  const ValueRange nonneg = ValueRange::at_least(0);
  const std::vector<Row> rows = {
      {"floordiv exact", [](const Vars& x) { return floordiv(8 * x.s0, 4); }, "2*s0", {}},
      {"floordiv exact sum", [](const Vars& x) { return floordiv(6 * x.s0 + 9 * x.s1 + 3, 3); }, "2*s0 + 3*s1 + 1", {}},
      {"floordiv split", [](const Vars& x) { return floordiv(4 * x.s0 + x.s1, 4); }, "s0 + s1//4", {}},
      {"floordiv split const", [](const Vars& x) { return floordiv(4 * x.s0 + 5, 4); }, "s0 + 1", {}},
      {"floordiv small", [](const Vars& x) { return floordiv(x.s0, 8); }, "0", {{0, {0, 7}}}},
      {"floordiv small negative", [](const Vars& x) { return floordiv(x.s0, -8); }, "0", {{0, {-7, 0}}}},
      {"floordiv not small", [](const Vars& x) { return floordiv(x.s0, 8); }, "s0//8", {{0, {0, 8}}}},
      {"floordiv nested", [](const Vars& x) { return floordiv(floordiv(x.s0, 4), 2); }, "s0//8", {}},
      {"floordiv nested symbolic", [](const Vars& x) { return floordiv(floordiv(x.s0, x.s1), 2); },
       "s0//(2*s1)", {{1, {1, 9}}}},
      {"floordiv of mod", [](const Vars& x) { return floordiv(mod(x.s0, 12), 4); }, "(s0//4)%3", {}},
      {"floordiv multiple", [](const Vars& x) { return floordiv(x.s0 * x.s1, x.s1); }, "s0", {}},
      {"floordiv by range", [](const Vars& x) { return floordiv(x.s0, 10); }, "1", {{0, {10, 19}}}},
      {"mod small", [](const Vars& x) { return mod(x.s0, 8); }, "s0", {{0, {0, 7}}}},
      {"mod small symbolic", [](const Vars& x) { return mod(x.s0, x.s1); }, "s0", {{0, {0, 7}}, {1, {8, kInf}}}},
      {"mod not small", [](const Vars& x) { return mod(x.s0, 8); }, "s0%8", {{0, {-1, 7}}}},
      {"mod of multiple", [](const Vars& x) { return mod(4 * x.s0, 4); }, "0", {}},
      {"mod by divisor fact", [](const Vars& x) { return mod(x.s0, 8); }, "0", {{0, nonneg, 16}}},
      {"mod by divisor product", [](const Vars& x) { return mod(x.s0 * x.s1, 8); }, "0",
       {{0, nonneg, 2}, {1, nonneg, 4}}},
      {"mod drop multiples", [](const Vars& x) { return mod(8 * x.s0 + x.s1 + 11, 4); }, "(s1 + 3)%4", {}},
      {"mod nested", [](const Vars& x) { return mod(mod(x.s0, 16), 4); }, "s0%4", {}},
      {"mod nested small", [](const Vars& x) { return mod(mod(x.s0, 4), 16); }, "s0%4", {}},
      {"mod common factor", [](const Vars& x) { return mod(4 * x.s0, 8); }, "4*(s0%2)", {}},
      {"mod multiple symbolic", [](const Vars& x) { return mod(3 * x.s0 * x.s1, x.s1); }, "0", {}},
      {"min by ranges", [](const Vars& x) { return min(x.s0, x.s0 + 1); }, "s0", {}},
      {"max by ranges", [](const Vars& x) { return max(x.s0, x.s0 + 1); }, "s0 + 1", {}},
      {"min of disjoint ranges", [](const Vars& x) { return min(x.s0, x.s1); }, "s0", {{0, {0, 4}}, {1, {4, 9}}}},
      {"max of disjoint ranges", [](const Vars& x) { return max(x.s0, x.s1); }, "s1", {{0, {0, 4}}, {1, {4, 9}}}},
      {"min with const", [](const Vars& x) { return min(x.s0, I(64)); }, "s0", {{0, {1, 64}}}},
      {"min undecided", [](const Vars& x) { return min(x.s0, I(64)); }, "Min(64, s0)", {{0, {1, 65}}}},
      {"min absorbs max", [](const Vars& x) { return min(x.s0, max(x.s0, x.s1)); }, "s0", {}},
      {"max absorbs min", [](const Vars& x) { return max(x.s0, min(x.s0, x.s1)); }, "s0", {}},
      {"ge by range", [](const Vars& x) { return ge(x.s0, I(0)); }, "true", {{0, nonneg}}},
      {"ge unknown", [](const Vars& x) { return ge(x.s0, I(0)); }, "0 <= s0", {}},
      {"lt by range", [](const Vars& x) { return lt(x.s0, x.s1); }, "true", {{0, {0, 3}}, {1, {4, 9}}}},
      {"lt false", [](const Vars& x) { return lt(x.s1, x.s0); }, "false", {{0, {0, 3}}, {1, {4, 9}}}},
      {"eq disjoint", [](const Vars& x) { return eq(x.s0, x.s1); }, "false", {{0, {0, 3}}, {1, {4, 9}}}},
      {"ne disjoint", [](const Vars& x) { return ne(x.s0, I(-1)); }, "true", {{0, nonneg}}},
      {"eq cancels", [](const Vars& x) { return eq(x.s0 + 1, x.s0 + 2); }, "false", {}},
      {"eq by parity", [](const Vars& x) { return eq(2 * x.s0, 2 * x.s1 + 1); }, "false", {}},
      {"eq by divisor fact", [](const Vars& x) { return eq(x.s0, I(6)); }, "false", {{0, nonneg, 4}}},
      {"lt normalize", [](const Vars& x) { return lt(x.s0 + 1, I(5)); }, "s0 < 4", {}},
      {"le normalize gcd", [](const Vars& x) { return le(2 * x.s0, I(7)); }, "s0 <= 3", {}},
      {"lt normalize gcd", [](const Vars& x) { return lt(2 * x.s0, 4 * x.s1 + 3); }, "s0 < 2*s1 + 2", {}},
      {"eq normalize", [](const Vars& x) { return eq(x.s0 - x.s1, I(0)); }, "s0 == s1", {}},
      {"eq normalize gcd", [](const Vars& x) { return eq(3 * x.s0 + 6, I(12)); }, "s0 == 2", {}},
      {"gt constant left", [](const Vars& x) { return lt(I(5), x.s0 - 2); }, "7 < s0", {}},
      {"div mod recombine", [](const Vars& x) { return 4 * floordiv(x.s0, 4) + mod(x.s0, 4); }, "s0", {}},
      {"div mod recombine scaled",
       [](const Vars& x) { return 12 * floordiv(x.s0, 4) + 3 * mod(x.s0, 4) + x.s1; }, "3*s0 + s1", {}},
      {"mul floordiv exact", [](const Vars& x) { return 8 * floordiv(x.s0, 4); }, "2*s0", {{0, nonneg, 4}}},
      {"mul floordiv inexact", [](const Vars& x) { return 8 * floordiv(x.s0, 4); }, "8*(s0//4)", {}},
      {"exact symbol", [](const Vars& x) { return x.s0 * x.s1 + 1; }, "3*s1 + 1", {{0, {3, 3}}}},
      {"exact symbol by divisor", [](const Vars& x) { return x.s0 + x.s1; }, "s1 + 8", {{0, {5, 12}, 8}}},
      {"and absorbs or", [](const Vars& x) {
         Expr a = lt(x.s0, x.s1);
         return logical_and(a, logical_or(a, eq(x.s2, I(3))));
       }, "s0 < s1", {}},
      {"or absorbs and", [](const Vars& x) {
         Expr a = lt(x.s0, x.s1);
         return logical_or(a, logical_and(a, eq(x.s2, I(3))));
       }, "s0 < s1", {}},
      {"and of decided parts", [](const Vars& x) { return logical_and(ge(x.s0, I(0)), lt(x.s1, I(3))); },
       "s1 < 3", {{0, nonneg}}},
      {"nested everything", [](const Vars& x) { return mod(floordiv(16 * x.s0 + 4 * x.s1, 4), 4); },
       "s1%4", {}},
      {"index arithmetic", [](const Vars& x) { return floordiv(x.s0 * 64 + mod(x.s1, 64), 64); }, "s0", {}},
      {"nothing to do", [](const Vars& x) { return x.s0 * x.s1 + floordiv(x.s2, 3); }, "s0*s1 + s2//3", {}},
      {"infinite ranges", [](const Vars& x) { return lt(x.s0, I(kInf - 1)); }, "s0 < 9223372036854775806",
       {{0, {kNegInf, kInf}}}},
  };
  for (const Row& row : rows) {
    std::map<Expr, SymbolFacts> fm;
    Expr syms[] = {v.s0, v.s1, v.s2};
    for (const Fact& f : row.facts) fm[syms[f.which]] = SymbolFacts{f.range, f.divisor};
    FactsFn facts = [&fm](Expr s) {
      auto it = fm.find(s);
      return it == fm.end() ? SymbolFacts{} : it->second;
    };
    Expr in = row.build(v);
    SimplifyStats stats;
    Expr out = simplify(in, facts, {}, &stats);
    EXPECT_EQ(out.str(), row.expected) << row.name << ": " << in.str();
    EXPECT_FALSE(stats.hit_step_limit) << row.name;
    // Simplification is idempotent.
    EXPECT_EQ(simplify(out, facts), out) << row.name;
  }
}

TEST(SymSimplify, RuleTableIsWellFormed) {
  std::set<std::string> names;
  for (const Rule& r : simplifier_rules()) {
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate rule " << r.name;
    EXPECT_NE(r.apply, nullptr);
    EXPECT_GT(std::string(r.doc).size(), 5u) << r.name;
  }
  EXPECT_GE(names.size(), 25u);
}

TEST(SymSimplify, StatsAndOnlyRules) {
  Vars v;
  FactsFn facts = [](Expr) { return SymbolFacts{}; };
  Expr e = floordiv(floordiv(8 * v.s0, 2), 2);
  SimplifyStats stats;
  Expr out = simplify(e, facts, {}, &stats);
  EXPECT_EQ(out.str(), "2*s0");
  EXPECT_GE(stats.steps, 1);
  ASSERT_FALSE(stats.fired.empty());
  int total = 0;
  for (const auto& [name, n] : stats.fired) total += n;
  EXPECT_EQ(total, stats.steps);
  SimplifyOptions only;
  only.only_rules = {"floordiv_nested"};
  SimplifyStats s2;
  EXPECT_EQ(simplify(e, facts, only, &s2).str(), "8*s0//4");
  ASSERT_EQ(s2.fired.size(), 1u);
  EXPECT_EQ(s2.fired[0].first, "floordiv_nested");
}

TEST(SymSimplify, StepLimitStopsSoundly) {
  Vars v;
  FactsFn facts = [](Expr) { return SymbolFacts{}; };
  Expr e = floordiv(floordiv(floordiv(16 * v.s0 + 8, 2), 2), 2);
  SimplifyOptions opts;
  opts.max_steps = 1;
  SimplifyStats stats;
  Expr out = simplify(e, facts, opts, &stats);
  EXPECT_TRUE(stats.hit_step_limit);
  EXPECT_EQ(stats.steps, 1);
  for (int64_t x = -5; x <= 5; ++x) {
    auto bind = [&](Expr) -> std::optional<Scalar> { return Scalar{Type::Int, x, 0}; };
    EXPECT_EQ(evaluate(out, bind)->i, evaluate(e, bind)->i);
  }
  EXPECT_EQ(simplify(e, facts).str(), "2*s0 + 1");
}

TEST(SymSimplify, ZeroDivisorByRangeDoesNotThrow) {
  Vars v;
  FactsFn facts = [&](Expr s) { return s == v.s1 ? SymbolFacts{ValueRange::exactly(0), 1} : SymbolFacts{}; };
  Expr e = floordiv(v.s0, v.s1);
  Expr out;
  EXPECT_NO_THROW(out = simplify(e, facts));
  EXPECT_FALSE(out.is_null());
}

}  // namespace
}  // namespace toroid::sym
