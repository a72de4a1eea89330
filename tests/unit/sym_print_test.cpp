// Expr::str(): exact text, and round trip through a parser for the grammar of docs/tir.md
// ("Symbolic expressions"), written here independently of the graph text parser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>

#include "sym_test_util.h"

#include "toroid/sym/expr.h"

namespace toroid::sym {
namespace {

using symtest::I;
using symtest::F;

// expr := add (cmpop add)? ; add := mul (('+'|'-') mul)* ; mul := unary (('*'|'//'|'%'|'/') unary)*
// unary := '-' unary | power ; power := atom ('**' INT)? ; atom := number | name | '(' expr ')' | call
class Parser {
 public:
  Parser(std::string text, const std::map<std::string, Expr>& syms, bool negative_literals)
      : s_(std::move(text)), syms_(syms), negative_literals_(negative_literals) {}

  Expr parse() {
    Expr e = expr();
    skip();
    if (pos_ != s_.size()) fail("trailing text");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("parse error at " + std::to_string(pos_) + " in '" + s_ + "': " + why);
  }
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) != 0) return false;
    // "*" must not match "**", "/" must not match "//", "<" must not match "<=".
    if ((std::string(tok) == "*" || std::string(tok) == "/") && pos_ + 1 < s_.size() && s_[pos_ + 1] == tok[0])
      return false;
    if ((std::string(tok) == "<" || std::string(tok) == ">") && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=')
      return false;
    pos_ += n;
    return true;
  }

  Expr expr() {
    Expr a = additive();
    if (eat("==")) return eq(a, additive());
    if (eat("!=")) return ne(a, additive());
    if (eat("<=")) return le(a, additive());
    if (eat(">=")) return ge(a, additive());
    if (eat("<")) return lt(a, additive());
    if (eat(">")) return gt(a, additive());
    return a;
  }
  Expr additive() {
    Expr a = multiplicative();
    for (;;) {
      if (eat("+")) {
        a = add(a, multiplicative());
      } else if (eat("-")) {
        a = sub(a, multiplicative());
      } else {
        return a;
      }
    }
  }
  Expr multiplicative() {
    Expr a = unary();
    for (;;) {
      if (eat("//")) {
        a = floordiv(a, unary());
      } else if (eat("*")) {
        a = mul(a, unary());
      } else if (eat("%")) {
        a = mod(a, unary());
      } else if (eat("/")) {
        a = truediv(a, unary());
      } else {
        return a;
      }
    }
  }
  Expr unary() {
    skip();
    // As in the graph text parser: a '-' directly before a digit starts a negative literal.
    if (negative_literals_ && pos_ + 1 < s_.size() && s_[pos_] == '-' &&
        std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))) {
      ++pos_;
      Expr lit = atom();
      Expr v = lit.as_int() ? I(static_cast<int64_t>(0ULL - static_cast<uint64_t>(lit.int_value())))
                            : F(-lit.float_value());
      return power_of(v);
    }
    if (eat("-")) return neg(unary());
    return power();
  }
  Expr power_of(Expr a) {
    if (eat("**")) {
      skip();
      size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (start == pos_) fail("exponent");
      return pow(a, std::stoll(s_.substr(start, pos_ - start)));
    }
    return a;
  }
  Expr power() { return power_of(atom()); }
  std::vector<Expr> args() {
    std::vector<Expr> out;
    if (!eat("(")) fail("(");
    out.push_back(expr());
    while (eat(",")) out.push_back(expr());
    if (!eat(")")) fail(")");
    return out;
  }
  Expr atom() {
    skip();
    if (eat("(")) {
      Expr e = expr();
      if (!eat(")")) fail(")");
      return e;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      size_t start = pos_;
      bool is_float = false;
      while (pos_ < s_.size()) {
        char c = s_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c))) {
          ++pos_;
        } else if (c == '.') {
          is_float = true;
          ++pos_;
        } else if (c == 'e') {
          is_float = true;
          ++pos_;
          if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        } else {
          break;
        }
      }
      std::string lit = s_.substr(start, pos_ - start);
      if (is_float) return F(std::strtod(lit.c_str(), nullptr));
      return I(static_cast<int64_t>(std::stoull(lit)));
    }
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string name = s_.substr(start, pos_ - start);
    if (name.empty()) fail("expected an atom");
    if (name == "true") return Expr::boolean(true);
    if (name == "false") return Expr::boolean(false);
    if (name == "inf") return F(INFINITY);
    if (name == "nan") return F(NAN);
    if (name == "Min") return min(args());
    if (name == "Max") return max(args());
    if (name == "And") return logical_and(args());
    if (name == "Or") return logical_or(args());
    if (name == "Not") return logical_not(args().at(0));
    if (name == "ToFloat") return to_float(args().at(0));
    auto it = syms_.find(name);
    if (it == syms_.end()) fail("unknown symbol " + name);
    return it->second;
  }

  std::string s_;
  size_t pos_ = 0;
  const std::map<std::string, Expr>& syms_;
  bool negative_literals_;
};

struct Env {
  Expr s0 = Expr::fresh_symbol("s0");
  Expr s1 = Expr::fresh_symbol("s1");
  Expr s2 = Expr::fresh_symbol("s2");
  Expr x = Expr::fresh_symbol("x", Type::Float);
  Expr b = Expr::fresh_symbol("b", Type::Bool);
  std::map<std::string, Expr> names{{"s0", s0}, {"s1", s1}, {"s2", s2}, {"x", x}, {"b", b}};

  Expr parse(const std::string& t, bool negative_literals = false) {
    return Parser(t, names, negative_literals).parse();
  }
  // Round trip under both readings of "-5": unary minus applied to 5, and a negative literal.
  void expect_round_trip(Expr e) {
    std::string t = e.str();
    for (bool negative_literals : {false, true}) {
      Expr back;
      ASSERT_NO_THROW(back = parse(t, negative_literals)) << t;
      EXPECT_EQ(back.str(), t);
      EXPECT_EQ(back, e) << t << " reparsed as " << back.str() << (negative_literals ? " (negative literals)" : "");
    }
  }
};

TEST(SymPrint, ExactText) {
  Env v;
  Expr s0 = v.s0, s1 = v.s1, s2 = v.s2;
  struct Case {
    Expr e;
    const char* text;
  } cases[] = {
      {s0 + 1 + s0, "2*s0 + 1"},
      {2 * s0 + s1 - 3, "2*s0 + s1 - 3"},
      {s1 - 2 * s0, "-2*s0 + s1"},
      {neg(s0), "-s0"},
      {neg(s0 * s1), "-s0*s1"},
      {2 * s0 * s1, "2*s0*s1"},
      {pow(s0, 2), "s0**2"},
      {neg(pow(s0, 2)), "-s0**2"},
      {pow(s0 + 1, 2), "(s0 + 1)**2"},
      {floordiv(s0, 4), "s0//4"},
      {mod(s0, 8), "s0%8"},
      {floordiv(2 * s0, 4), "2*s0//4"},
      {2 * floordiv(s0, 4), "2*(s0//4)"},
      {floordiv(floordiv(s0, 4), s1), "(s0//4)//s1"},
      {floordiv(s0, s1 * s0 + 1), "s0//(s0*s1 + 1)"},
      {floordiv(s0, I(-2)), "s0//(-2)"},
      {floordiv(s0 + 1, 2), "(s0 + 1)//2"},
      {min(s0, I(8)), "Min(8, s0)"},
      {max(s0, s1), "Max(s0, s1)"},
      {lt(s0, I(16)), "s0 < 16"},
      {ge(s0, s1), "s1 <= s0"},
      {eq(mod(s0, 2), I(0)), "s0%2 == 0"},
      {ne(s0 + 1, s1), "s1 != s0 + 1"},
      {logical_and(lt(s0, I(4)), eq(s1, I(2))), "And(s1 == 2, s0 < 4)"},
      {logical_not(v.b), "Not(b)"},
      {eq(lt(s0, s1), v.b), "b == (s0 < s1)"},
      {Expr::boolean(true), "true"},
      {I(-5), "-5"},
      {I(std::numeric_limits<int64_t>::min()), "(-9223372036854775807 - 1)"},
      {F(2.0), "2.0"},
      {F(-0.0), "-0.0"},
      {F(0.1), "0.1"},
      {F(1e20), "1e+20"},
      {F(INFINITY), "inf"},
      {F(-INFINITY), "-inf"},
      {F(NAN), "nan"},
      {add(v.x, F(-1.5)), "x - 1.5"},
      {to_float(s0), "ToFloat(s0)"},
      {truediv(v.x, to_float(s0)), "x/ToFloat(s0)"},
      {neg(add(v.x, F(1.5))), "-(x + 1.5)"},
      {sub(s1, mul(I(3), floordiv(s0, 2))), "s1 - 3*(s0//2)"},
      {neg(pow(I(10), 31)), "-(10**31)"},
      {pow(I(-10), 31), "(-10)**31"},
      {floordiv(I(-2), s0), "-2//s0"},
      {mul(std::vector<Expr>{I(-1), s0 + 1, s1 + 2}), "(s0 + 1)*(s1 + 2)*(-1)"},
      {mul(std::vector<Expr>{I(3), s0 + 1, s1 + 2, s2}), "3*s2*(s0 + 1)*(s1 + 2)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.e.str(), c.text);
    v.expect_round_trip(c.e);
  }
}

TEST(SymPrint, ParserRebuildsCanonicalForms) {
  Env v;
  EXPECT_EQ(v.parse("s0 + 1 + s0").str(), "2*s0 + 1");
  EXPECT_EQ(v.parse("s0 > s1"), lt(v.s1, v.s0));
  EXPECT_EQ(v.parse("-2*s0"), mul(I(-2), v.s0));
  EXPECT_EQ(v.parse("-s0**2"), neg(pow(v.s0, 2)));
  EXPECT_EQ(v.parse("(-9223372036854775807 - 1)"), I(std::numeric_limits<int64_t>::min()));
}

// Random expressions of every kind print to text that parses back to the same node.
Expr random_expr(std::mt19937& rng, Env& v, int depth, Type want) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (want == Type::Bool) {
    if (depth <= 0 || pick(4) == 0) return pick(3) == 0 ? v.b : Expr::boolean(pick(2) == 0);
    Expr a = random_expr(rng, v, depth - 1, pick(5) == 0 ? Type::Float : Type::Int);
    Expr b = random_expr(rng, v, depth - 1, a.type());
    switch (pick(8)) {
      case 0: return eq(a, b);
      case 1: return ne(a, b);
      case 2: return lt(a, b);
      case 3: return le(a, b);
      case 4: return logical_and(random_expr(rng, v, depth - 1, Type::Bool), random_expr(rng, v, depth - 1, Type::Bool));
      case 5: return logical_or(random_expr(rng, v, depth - 1, Type::Bool), random_expr(rng, v, depth - 1, Type::Bool));
      case 6: return logical_not(random_expr(rng, v, depth - 1, Type::Bool));
      default: return eq(random_expr(rng, v, depth - 1, Type::Bool), random_expr(rng, v, depth - 1, Type::Bool));
    }
  }
  if (want == Type::Float) {
    if (depth <= 0 || pick(4) == 0) {
      const double vals[] = {0.5, -2.25, 0.0, -0.0, 3.0, 1e30, -1e-7, INFINITY, -1.0};
      return pick(2) == 0 ? v.x : F(vals[pick(9)]);
    }
    Expr a = random_expr(rng, v, depth - 1, pick(3) == 0 ? Type::Int : Type::Float);
    Expr b = random_expr(rng, v, depth - 1, Type::Float);
    switch (pick(6)) {
      case 0: return add(a, b);
      case 1: return sub(a, b);
      case 2: return mul(a, b);
      case 3: return truediv(a, b);
      case 4: return neg(a);
      default: return min(a, b);
    }
  }
  if (depth <= 0 || pick(4) == 0) {
    int k = pick(5);
    if (k == 0) return I(static_cast<int64_t>(pick(19)) - 9);
    if (k == 1 && pick(10) == 0) return I(pick(2) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
    Expr syms[] = {v.s0, v.s1, v.s2};
    return syms[pick(3)];
  }
  Expr a = random_expr(rng, v, depth - 1, Type::Int);
  Expr b = random_expr(rng, v, depth - 1, Type::Int);
  int64_t c = static_cast<int64_t>(pick(19)) - 9;
  if (c == 0) c = 3;
  switch (pick(11)) {
    case 0: return add(a, b);
    case 1: return sub(a, b);
    case 2: return mul(a, b);
    case 3: return mul(I(c), a);
    case 4: return floordiv(a, c);
    case 5: return mod(a, c);
    case 6: return floordiv(a, b.has_symbols() ? b : v.s1);
    case 7: return pow(a, pick(3) + 2);
    case 8: return min(a, b);
    case 9: return max(a, b);
    default: return neg(a);
  }
}

TEST(SymPrint, RandomRoundTrip) {
  Env v;
  std::mt19937 rng(1234);
  for (int i = 0; i < 5000; ++i) {
    Type t = i % 3 == 0 ? Type::Bool : (i % 3 == 1 ? Type::Int : Type::Float);
    Expr e = random_expr(rng, v, 4, t);
    v.expect_round_trip(e);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace toroid::sym
