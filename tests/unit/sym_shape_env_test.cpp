// ShapeEnv: symbols, facts, static decisions and guards.
#include <gtest/gtest.h>

#include "sym_test_util.h"

#include "toroid/sym/shape_env.h"

namespace toroid::sym {
namespace {

using symtest::I;
Scalar S(int64_t v) { return Scalar{Type::Int, v, 0}; }

TEST(SymShapeEnv, CreateAndLookup) {
  ShapeEnv env;
  Expr s0 = env.create_backed("s0", 8);
  Expr s1 = env.create_backed("s1", 3, {1, 16});
  Expr u0 = env.create_unbacked("u0");
  ASSERT_EQ(env.symbols().size(), 3u);
  EXPECT_EQ(env.lookup("s1"), s1);
  EXPECT_TRUE(env.lookup("nope").is_null());
  EXPECT_EQ(env.info(s0)->hint, std::optional<int64_t>(8));
  EXPECT_EQ(env.info(s0)->range, ValueRange::at_least(0));
  EXPECT_TRUE(env.info(u0)->unbacked);
  EXPECT_FALSE(env.info(u0)->hint.has_value());
  EXPECT_EQ(env.info(Expr::fresh_symbol("other")), nullptr);
  EXPECT_EQ(env.int_hint(s0 * s1 + 1), std::optional<int64_t>(25));
  EXPECT_FALSE(env.int_hint(s0 + u0).has_value());
  Expr x = env.create_backed_float("x", 0.5);
  EXPECT_DOUBLE_EQ(env.hint(x + s0)->f, 8.5);
}

TEST(SymShapeEnv, UserErrors) {
  ShapeEnv env;
  env.create_backed("s0", 8);
  EXPECT_THROW(env.create_backed("s0", 4), UserError);
  EXPECT_THROW(env.create_unbacked("s0"), UserError);
  EXPECT_THROW(env.create_backed("s1", -1), UserError);  // hint outside [0, inf]
  EXPECT_THROW(env.create_backed("s2", 5, {6, 10}), UserError);
  EXPECT_THROW(env.create_unbacked("u0", {5, 4}), UserError);
  Expr s3 = env.create_backed("s3", 6, {0, 100});
  EXPECT_THROW(env.constrain_range(s3, {200, 300}), UserError);
  EXPECT_THROW(env.constrain_range(s3, {7, 300}), UserError);  // excludes the hint
  EXPECT_THROW(env.constrain_divisor(s3, 4), UserError);      // 6 is not a multiple of 4
  EXPECT_THROW(env.constrain_divisor(s3, 0), UserError);
}

TEST(SymShapeEnv, ConstrainNarrowsFacts) {
  ShapeEnv env;
  Expr s = env.create_backed("s", 8, {1, 100});
  env.constrain_range(s, {4, 1000});
  env.constrain_divisor(s, 2);
  env.constrain_divisor(s, 4);
  EXPECT_EQ(env.facts(s).range, (ValueRange{4, 100}));
  EXPECT_EQ(env.facts(s).divisor, 4);
  EXPECT_EQ(env.simplify(mod(s, 4)), I(0));
  EXPECT_EQ(env.simplify(mod(s + 6, 2)), I(0));
  EXPECT_EQ(env.bound(s), (ValueRange{4, 100}));
}

TEST(SymShapeEnv, StaticProofRecordsNoGuard) {
  ShapeEnv env;
  Expr s0 = env.create_backed("s0", 8, {2, 64});
  EXPECT_EQ(env.statically_known(ge(s0, I(0))), std::optional<bool>(true));
  EXPECT_TRUE(env.statically_known_true(lt(s0, I(65))));
  EXPECT_EQ(env.statically_known(eq(s0, I(1))), std::optional<bool>(false));
  EXPECT_FALSE(env.statically_known(eq(s0, I(8))).has_value());
  EXPECT_TRUE(env.guard(ge(s0, I(0))));
  EXPECT_FALSE(env.guard(eq(s0, I(1))));
  EXPECT_TRUE(env.guard(le(min(s0, I(100)), s0)));
  EXPECT_TRUE(env.guards().empty());
}

TEST(SymShapeEnv, GuardRecordsConditionOrItsNegation) {
  ShapeEnv env;
  Expr s0 = env.create_backed("s0", 8);
  Expr s1 = env.create_backed("s1", 3);
  EXPECT_TRUE(env.guard(eq(mod(s0, 2), I(0))));
  EXPECT_FALSE(env.guard(eq(s1, I(1))));
  EXPECT_TRUE(env.guard(lt(s1, s0)));
  ASSERT_EQ(env.guards().size(), 3u);
  EXPECT_EQ(env.guards()[0].condition.str(), "s0%2 == 0");
  EXPECT_EQ(env.guards()[1].condition.str(), "s1 != 1");
  EXPECT_EQ(env.guards()[2].condition.str(), "s1 < s0");
  // Each recorded guard holds under the hints.
  for (const Guard& g : env.guards()) EXPECT_EQ(env.hint(g.condition)->i, 1);
}

TEST(SymShapeEnv, GuardsCheckedAgainstBindings) {
  ShapeEnv env;
  Expr s0 = env.create_backed("s0", 8, {1, 64});
  Expr s1 = env.create_backed("s1", 3);
  env.guard(eq(mod(s0, 2), I(0)));
  env.guard(lt(s1, s0));
  EXPECT_FALSE(env.first_failing_guard({{s0, S(8)}, {s1, S(3)}}).has_value());
  EXPECT_TRUE(env.guards_hold({{s0, S(10)}, {s1, S(5)}}));
  EXPECT_EQ(env.first_failing_guard({{s0, S(7)}, {s1, S(3)}}), std::optional<size_t>(0));
  EXPECT_EQ(env.first_failing_guard({{s0, S(8)}, {s1, S(9)}}), std::optional<size_t>(1));
  EXPECT_EQ(env.first_failing_guard({{s0, S(8)}}), std::optional<size_t>(1));  // s1 unbound
  // In guards, but outside the declared range of s0: reported as guards().size().
  EXPECT_EQ(env.first_failing_guard({{s0, S(66)}, {s1, S(3)}}), std::optional<size_t>(2));
  env.constrain_divisor(s0, 4);
  EXPECT_EQ(env.first_failing_guard({{s0, S(6)}, {s1, S(3)}}), std::optional<size_t>(2));
  EXPECT_EQ(env.evaluate(s0 * s1, {{s0, S(2)}, {s1, S(5)}})->i, 10);
}

TEST(SymShapeEnv, UnbackedConditionIsAUserError) {
  ShapeEnv env;
  Expr u0 = env.create_unbacked("u0", {0, 100});
  Expr s0 = env.create_backed("s0", 4);
  EXPECT_TRUE(env.guard(ge(u0, I(0))));      // decided by the range
  EXPECT_FALSE(env.guard(gt(u0, I(1000))));  // likewise
  try {
    env.guard(eq(u0, s0), SourceLoc{"f.tir", 3, 7});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("data-dependent condition"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("unbacked symbol u0"), std::string::npos) << e.message();
    EXPECT_EQ(e.loc().line, 3);
  }
  EXPECT_THROW(env.guard_int(u0 + 1), UserError);
  EXPECT_TRUE(env.guards().empty());
}

TEST(SymShapeEnv, GuardIntSpecializes) {
  ShapeEnv env;
  Expr s0 = env.create_backed("s0", 5);
  Expr s1 = env.create_backed("s1", 2, {2, 2});
  EXPECT_EQ(env.guard_int(s1 * 3), 6);  // exact by range: no guard
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(env.guard_int(s0 + 1), 6);
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].condition.str(), "s0 == 5");
  env.add_guard(lt(s0, I(10)));
  EXPECT_EQ(env.guards().size(), 2u);
}

}  // namespace
}  // namespace toroid::sym
