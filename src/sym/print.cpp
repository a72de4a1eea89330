// Expr::str(): the expression syntax of docs/tir.md ("Symbolic expressions").
//
// Precedence, loosest first: comparison < additive < multiplicative < unary minus < power < atom.
// Parentheses are written only where that grammar needs them (plus around a division that is a
// factor or a divisor, for readability). Spacing: spaces around + - and comparisons, none
// around * // % / **. Sums print their constant last and negative terms as subtraction:
// "2*s0 + s1 - 3". The text parses back (through the builders) to the same expression.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "node.h"
#include "toroid/support/error.h"

namespace toroid::sym {

namespace {

enum Prec : int { kCmp = 1, kAdd = 2, kMul = 3, kUnary = 4, kPow = 5, kAtom = 6 };

struct Printed {
  std::string text;
  int prec;
};

std::string wrap(const Printed& p, int min_prec) {
  if (p.prec < min_prec) return "(" + p.text + ")";
  return p.text;
}

Printed int_text(int64_t v) {
  // -2**63 has no literal (its magnitude overflows), so it is written as a sum.
  if (v == std::numeric_limits<int64_t>::min()) return {"(-9223372036854775807 - 1)", kAtom};
  return {std::to_string(v), v < 0 ? kUnary : kAtom};
}

Printed float_text(double v) {
  std::string s;
  if (std::isnan(v)) {
    s = std::signbit(v) ? "-nan" : "nan";
  } else if (std::isinf(v)) {
    s = v < 0 ? "-inf" : "inf";
  } else {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), v);
    s.assign(buf, res.ptr);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
  }
  return {s, std::signbit(v) ? kUnary : kAtom};
}

Printed render(Expr e);

// A term of a sum that prints as subtraction; returns its negation, or null.
Expr negated_term(Expr t) {
  switch (t.kind()) {
    case Kind::IntConst:
      if (t.int_value() < 0 && t.int_value() != std::numeric_limits<int64_t>::min())
        return Expr::integer(-t.int_value());
      return Expr();
    case Kind::FloatConst:
      if (std::signbit(t.float_value())) return Expr::floating(-t.float_value());
      return Expr();
    case Kind::Mul: {
      auto ops = t.operands();
      Expr c = ops[0];
      if (ops.size() >= 2 && ops[1].is_constant()) return Expr();
      if (c.kind() == Kind::IntConst && c.int_value() < 0 &&
          c.int_value() != std::numeric_limits<int64_t>::min())
        return neg(t);
      if (c.kind() == Kind::FloatConst && std::signbit(c.float_value())) return neg(t);
      return Expr();
    }
    default: return Expr();
  }
}

Printed render_add(Expr e) {
  std::string s;
  bool first = true;
  for (Expr t : e.operands()) {
    if (first) {
      s = wrap(render(t), kAdd);
      first = false;
      continue;
    }
    if (Expr n = negated_term(t)) {
      s += " - " + wrap(render(n), kMul);
    } else {
      s += " + " + wrap(render(t), kMul);
    }
  }
  return {s, kAdd};
}

Printed render_mul(Expr e) {
  std::vector<Expr> ops(e.operands().begin(), e.operands().end());
  size_t start = 0;
  std::string s;
  bool has_coeff = ops[0].is_constant() && ops.size() >= 2 && !ops[1].is_constant();
  // The parser folds left to right, and a coefficient times a single sum distributes; so the
  // factor right after the coefficient must not be a sum. Move a non-sum factor there, or, if
  // every factor is a sum, write the coefficient last: "(s0 + 1)*(s1 + 1)*(-1)".
  if (has_coeff && ops.size() >= 3 && ops[1].kind() == Kind::Add) {
    auto it = std::find_if(ops.begin() + 2, ops.end(), [](Expr f) { return f.kind() != Kind::Add; });
    if (it != ops.end()) {
      std::rotate(ops.begin() + 1, it, it + 1);
    } else {
      std::rotate(ops.begin(), ops.begin() + 1, ops.end());
      has_coeff = false;
    }
  }
  // A single leading constant is a coefficient: "2*s0", "-s0*s1", "-2.5*x".
  if (has_coeff) {
    Expr c = ops[0];
    bool minus_one = (c.kind() == Kind::IntConst && c.int_value() == -1) ||
                     (c.kind() == Kind::FloatConst && c.float_value() == -1.0);
    if (minus_one) {
      s = wrap(render(ops[1]), kUnary);
      // "-10**31" would read as (-10)**31 where "-" before a digit makes a negative literal.
      if (!s.empty() && s[0] >= '0' && s[0] <= '9') s = "(" + s + ")";
      s = "-" + s;
      if (ops.size() == 2) return {s, kUnary};
      start = 2;
    } else {
      s = c.kind() == Kind::IntConst ? int_text(c.int_value()).text : float_text(c.float_value()).text;
      start = 1;
    }
  }
  for (size_t i = start; i < ops.size(); ++i) {
    if (!s.empty()) s += "*";
    s += wrap(render(ops[i]), kPow);
  }
  return {s, kMul};
}

Printed render_call(const char* name, Expr e) {
  std::string s = name;
  s += "(";
  bool first = true;
  for (Expr op : e.operands()) {
    if (!first) s += ", ";
    first = false;
    s += render(op).text;
  }
  s += ")";
  return {s, kAtom};
}

Printed render_binary(Expr e, const char* op, int prec, int left_prec, int right_prec) {
  auto ops = e.operands();
  // A division as the dividend of a division is parenthesized for readability: "(s0//4)//2".
  if (prec == kMul && detail::is_div_kind(ops[0].kind())) left_prec = kUnary;
  return {wrap(render(ops[0]), left_prec) + op + wrap(render(ops[1]), right_prec), prec};
}

Printed render(Expr e) {
  switch (e.kind()) {
    case Kind::IntConst: return int_text(e.int_value());
    case Kind::FloatConst: return float_text(e.float_value());
    case Kind::BoolConst: return {e.bool_value() ? "true" : "false", kAtom};
    case Kind::Symbol: return {e.symbol().name, kAtom};
    case Kind::Add: return render_add(e);
    case Kind::Mul: return render_mul(e);
    case Kind::FloorDiv: return render_binary(e, "//", kMul, kMul, kPow);
    case Kind::Mod: return render_binary(e, "%", kMul, kMul, kPow);
    case Kind::TrueDiv: return render_binary(e, "/", kMul, kMul, kPow);
    case Kind::Pow:
      return {wrap(render(e.operands()[0]), kAtom) + "**" + std::to_string(e.exponent()), kPow};
    case Kind::Min: return render_call("Min", e);
    case Kind::Max: return render_call("Max", e);
    case Kind::ToFloat: return render_call("ToFloat", e);
    case Kind::And: return render_call("And", e);
    case Kind::Or: return render_call("Or", e);
    case Kind::Not: return render_call("Not", e);
    case Kind::Eq: return render_binary(e, " == ", kCmp, kAdd, kAdd);
    case Kind::Ne: return render_binary(e, " != ", kCmp, kAdd, kAdd);
    case Kind::Lt: return render_binary(e, " < ", kCmp, kAdd, kAdd);
    case Kind::Le: return render_binary(e, " <= ", kCmp, kAdd, kAdd);
  }
  internal_error("print: unknown kind", __FILE__, __LINE__);
}

}  // namespace

std::string Expr::str() const {
  if (is_null()) return "<null>";
  return render(*this).text;
}

}  // namespace toroid::sym
