// Canonicalizing builders for arithmetic: Add, Mul, Pow, FloorDiv, Mod, TrueDiv, Min, Max,
// ToFloat. They need no facts about symbols.
//
// Canonical forms (integers):
//  - Add: flattened; like terms collected (coefficient * monomial); terms sorted by monomial;
//    the integer constant, if nonzero, last.
//  - Mul: flattened; the integer coefficient, if not 1, first; equal factors merged into Pow;
//    factors sorted by (base, exponent). A coefficient times a single Add is distributed.
//  - Constant folding never wraps: a result that would overflow int64 stays symbolic.
// Floats are kept closer to what was written: Add and Mul are flattened, sorted and their
// constants folded, but like terms are not collected.
#include <algorithm>
#include <cmath>
#include <limits>

#include "node.h"
#include "toroid/support/error.h"

namespace toroid::sym {

using detail::checked_add;
using detail::checked_mul;
using detail::make_node;

namespace {

void check_arith(Expr e, const char* op) {
  if (e.is_null()) internal_error(std::string("null operand to ") + op, __FILE__, __LINE__);
  if (e.is_bool())
    internal_error(std::string("bool operand to arithmetic ") + op + ": " + e.str(), __FILE__, __LINE__);
}

void check_int(Expr e, const char* op) {
  check_arith(e, op);
  if (!e.is_int())
    internal_error(std::string("non-integer operand to ") + op + ": " + e.str(), __FILE__, __LINE__);
}

bool any_float(std::span<const Expr> xs) {
  return std::any_of(xs.begin(), xs.end(), [](Expr e) { return e.is_float(); });
}

Expr promote(Expr e) { return e.is_float() ? e : to_float(e); }

// Folds int64 constants with `op`, never overflowing: when the running value would overflow it is
// emitted and folding restarts. Returns the folded constants, `identity` values dropped.
template <typename Op>
std::vector<int64_t> fold_ints(std::vector<int64_t> cs, int64_t identity, Op op) {
  std::sort(cs.begin(), cs.end());
  std::vector<int64_t> out;
  int64_t acc = identity;
  for (int64_t c : cs) {
    if (auto r = op(acc, c)) {
      acc = *r;
    } else {
      out.push_back(acc);
      acc = c;
    }
  }
  out.push_back(acc);
  std::erase(out, identity);
  std::sort(out.begin(), out.end());
  return out;
}

// The exact sum of int64 constants as canonical int64 pieces: one constant when it fits,
// otherwise copies of INT64_MAX (or INT64_MIN) and a remainder, so that equal sums always give
// the same pieces.
std::vector<int64_t> fold_sum(const std::vector<int64_t>& cs) {
  __extension__ typedef __int128 i128;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMinV = std::numeric_limits<int64_t>::min();
  i128 total = 0;
  for (int64_t c : cs) total += c;  // fewer than 2**63 terms: no i128 overflow
  std::vector<int64_t> out;
  while (total > kMax) {
    out.push_back(kMax);
    total -= kMax;
  }
  while (total < kMinV) {
    out.push_back(kMinV);
    total -= kMinV;
  }
  if (total != 0) out.push_back(static_cast<int64_t>(total));
  std::sort(out.begin(), out.end());
  return out;
}

bool float_less(Expr a, Expr b) { return Expr::compare(a, b) < 0; }

Expr float_add(std::span<const Expr> terms) {
  std::vector<Expr> ops;
  std::vector<Expr> consts;
  for (Expr t : terms) {
    Expr x = promote(t);
    if (x.kind() == Kind::Add) {
      for (Expr op : x.operands()) (op.kind() == Kind::FloatConst ? consts : ops).push_back(op);
    } else {
      (x.kind() == Kind::FloatConst ? consts : ops).push_back(x);
    }
  }
  std::sort(ops.begin(), ops.end(), float_less);
  if (!consts.empty()) {
    std::sort(consts.begin(), consts.end(), float_less);
    double c = consts[0].float_value();
    for (size_t i = 1; i < consts.size(); ++i) c += consts[i].float_value();
    // x + -0.0 == x for every float x (including -0.0 and nan); +0.0 is not neutral for -0.0.
    bool neutral = c == 0.0 && std::signbit(c);
    if (ops.empty()) return Expr::floating(c);
    if (!neutral) ops.push_back(Expr::floating(c));
  }
  if (ops.size() == 1) return ops[0];
  return make_node(Kind::Add, Type::Float, std::move(ops));
}

Expr float_mul(std::span<const Expr> factors) {
  std::vector<Expr> ops;
  std::vector<Expr> consts;
  for (Expr f : factors) {
    Expr x = promote(f);
    if (x.kind() == Kind::Mul) {
      for (Expr op : x.operands()) (op.kind() == Kind::FloatConst ? consts : ops).push_back(op);
    } else {
      (x.kind() == Kind::FloatConst ? consts : ops).push_back(x);
    }
  }
  std::sort(ops.begin(), ops.end(), float_less);
  if (!consts.empty()) {
    std::sort(consts.begin(), consts.end(), float_less);
    double c = consts[0].float_value();
    for (size_t i = 1; i < consts.size(); ++i) c *= consts[i].float_value();
    if (ops.empty()) return Expr::floating(c);
    if (c != 1.0) ops.insert(ops.begin(), Expr::floating(c));  // x * 1.0 == x exactly
  }
  if (ops.empty()) return Expr::floating(1.0);
  if (ops.size() == 1) return ops[0];
  return make_node(Kind::Mul, Type::Float, std::move(ops));
}

Expr minmax(Kind k, std::span<const Expr> args) {
  const char* name = k == Kind::Min ? "Min" : "Max";
  if (args.empty()) internal_error(std::string(name) + " of no arguments", __FILE__, __LINE__);
  for (Expr a : args) check_arith(a, name);
  bool is_float = any_float(args);
  std::vector<Expr> ops;
  std::vector<Expr> consts;
  for (Expr a : args) {
    Expr x = is_float ? promote(a) : a;
    auto push = [&](Expr y) { (y.is_constant() ? consts : ops).push_back(y); };
    if (x.kind() == k) {
      for (Expr op : x.operands()) push(op);
    } else {
      push(x);
    }
  }
  if (!consts.empty()) {
    if (!is_float) {
      int64_t c = consts[0].int_value();
      for (Expr e : consts) c = k == Kind::Min ? std::min(c, e.int_value()) : std::max(c, e.int_value());
      ops.push_back(Expr::integer(c));
    } else {
      // Fold only when the order of operands cannot matter (no nan, no signed zero).
      bool foldable = std::all_of(consts.begin(), consts.end(), [](Expr e) {
        return !std::isnan(e.float_value()) && e.float_value() != 0.0;
      });
      if (foldable) {
        double c = consts[0].float_value();
        for (Expr e : consts)
          c = k == Kind::Min ? std::min(c, e.float_value()) : std::max(c, e.float_value());
        ops.push_back(Expr::floating(c));
      } else {
        ops.insert(ops.end(), consts.begin(), consts.end());
      }
    }
  }
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  if (ops.size() == 1) return ops[0];
  return make_node(k, is_float ? Type::Float : Type::Int, std::move(ops));
}

}  // namespace

Expr add(std::span<const Expr> terms) {
  for (Expr t : terms) check_arith(t, "add");
  if (terms.empty()) return Expr::integer(0);
  if (any_float(terms)) return float_add(terms);
  std::vector<detail::Term> list;
  std::vector<int64_t> consts;
  auto push = [&](Expr x) {
    if (x.kind() == Kind::IntConst) {
      consts.push_back(x.int_value());
    } else {
      list.push_back(detail::split_term(x));
    }
  };
  for (Expr t : terms) {
    if (t.kind() == Kind::Add) {
      for (Expr op : t.operands()) push(op);
    } else {
      push(t);
    }
  }
  std::sort(list.begin(), list.end(), [](const detail::Term& a, const detail::Term& b) {
    int c = Expr::compare(a.mono, b.mono);
    return c != 0 ? c < 0 : a.coeff < b.coeff;
  });
  std::vector<detail::Term> merged;
  for (const detail::Term& t : list) {
    if (!merged.empty() && merged.back().mono == t.mono) {
      if (auto s = checked_add(merged.back().coeff, t.coeff)) {
        merged.back().coeff = *s;
        continue;
      }
    }
    merged.push_back(t);
  }
  std::vector<Expr> ops;
  for (const detail::Term& t : merged) {
    if (t.coeff != 0) ops.push_back(detail::make_term(t.coeff, t.mono));
  }
  for (int64_t c : fold_sum(consts)) ops.push_back(Expr::integer(c));
  if (ops.empty()) return Expr::integer(0);
  if (ops.size() == 1) return ops[0];
  return make_node(Kind::Add, Type::Int, std::move(ops));
}

Expr add(Expr a, Expr b) {
  Expr xs[] = {a, b};
  return add(xs);
}

Expr neg(Expr a) {
  check_arith(a, "neg");
  if (a.is_float()) {
    if (a.kind() == Kind::FloatConst) return Expr::floating(-a.float_value());
    return mul(Expr::floating(-1.0), a);
  }
  return mul(Expr::integer(-1), a);
}

Expr sub(Expr a, Expr b) { return add(a, neg(b)); }

Expr mul(std::span<const Expr> factors) {
  for (Expr f : factors) check_arith(f, "mul");
  if (factors.empty()) return Expr::integer(1);
  if (any_float(factors)) return float_mul(factors);
  std::vector<int64_t> consts;
  std::vector<std::pair<Expr, int64_t>> powers;
  auto push = [&](Expr x) {
    if (x.kind() == Kind::IntConst) {
      consts.push_back(x.int_value());
    } else if (x.kind() == Kind::Pow) {
      powers.emplace_back(x.operands()[0], x.exponent());
    } else {
      powers.emplace_back(x, 1);
    }
  };
  for (Expr f : factors) {
    if (f.kind() == Kind::Mul) {
      for (Expr op : f.operands()) push(op);
    } else {
      push(f);
    }
  }
  if (std::find(consts.begin(), consts.end(), 0) != consts.end()) return Expr::integer(0);
  std::sort(powers.begin(), powers.end(), [](const auto& a, const auto& b) {
    int c = Expr::compare(a.first, b.first);
    return c != 0 ? c < 0 : a.second < b.second;
  });
  std::vector<std::pair<Expr, int64_t>> merged;
  for (const auto& p : powers) {
    if (!merged.empty() && merged.back().first == p.first) {
      if (auto s = checked_add(merged.back().second, p.second)) {
        merged.back().second = *s;
        continue;
      }
    }
    merged.push_back(p);
  }
  std::vector<int64_t> cs = fold_ints(consts, 1, checked_mul);
  std::vector<Expr> fs;
  for (const auto& [base, e] : merged) fs.push_back(e == 1 ? base : pow(base, e));
  // A coefficient times one sum is distributed: 2*(s0 + 1) -> 2*s0 + 2.
  if (cs.size() == 1 && fs.size() == 1 && fs[0].kind() == Kind::Add) {
    int64_t c = cs[0];
    std::vector<Expr> terms;
    bool ok = true;
    for (Expr t : fs[0].operands()) {
      detail::Term term = detail::split_term(t);
      auto nc = checked_mul(term.coeff, c);
      if (!nc) {
        ok = false;
        break;
      }
      terms.push_back(term.mono ? detail::make_term(*nc, term.mono) : Expr::integer(*nc));
    }
    if (ok) return add(terms);
  }
  std::vector<Expr> ops;
  for (int64_t c : cs) ops.push_back(Expr::integer(c));
  ops.insert(ops.end(), fs.begin(), fs.end());
  if (ops.empty()) return Expr::integer(1);
  if (ops.size() == 1) return ops[0];
  return make_node(Kind::Mul, Type::Int, std::move(ops));
}

Expr mul(Expr a, Expr b) {
  Expr xs[] = {a, b};
  return mul(xs);
}

Expr pow(Expr base, int64_t exponent) {
  check_arith(base, "pow");
  if (exponent < 0) internal_error("pow with a negative exponent", __FILE__, __LINE__);
  if (exponent == 0) return base.is_float() ? Expr::floating(1.0) : Expr::integer(1);
  if (exponent == 1) return base;
  if (base.kind() == Kind::IntConst) {
    if (auto v = detail::checked_pow(base.int_value(), exponent)) return Expr::integer(*v);
  }
  if (base.kind() == Kind::FloatConst)
    return Expr::floating(std::pow(base.float_value(), static_cast<double>(exponent)));
  if (base.kind() == Kind::Pow) {
    if (auto e = checked_mul(base.exponent(), exponent)) return pow(base.operands()[0], *e);
  }
  if (base.kind() == Kind::Mul && base.is_int()) {
    std::vector<Expr> fs;
    for (Expr f : base.operands()) fs.push_back(pow(f, exponent));
    return mul(fs);
  }
  return make_node(Kind::Pow, base.type(), {base}, exponent);
}

Expr floordiv(Expr a, Expr b) {
  check_int(a, "floordiv");
  check_int(b, "floordiv");
  if (auto d = b.as_int()) {
    if (*d == 0) user_error("division by zero in symbolic expression " + a.str() + "//0");
    if (*d == 1) return a;
    if (*d == -1) return neg(a);
    if (auto n = a.as_int()) {
      if (auto q = py_floordiv(*n, *d)) return Expr::integer(*q);
    }
  }
  if (a.as_int() == std::optional<int64_t>(0)) return a;
  return make_node(Kind::FloorDiv, Type::Int, {a, b});
}

Expr mod(Expr a, Expr b) {
  check_int(a, "mod");
  check_int(b, "mod");
  if (auto d = b.as_int()) {
    if (*d == 0) user_error("division by zero in symbolic expression " + a.str() + " % 0");
    if (*d == 1 || *d == -1) return Expr::integer(0);
    if (auto n = a.as_int()) {
      if (auto r = py_mod(*n, *d)) return Expr::integer(*r);
    }
  }
  if (a.as_int() == std::optional<int64_t>(0)) return a;
  return make_node(Kind::Mod, Type::Int, {a, b});
}

Expr truediv(Expr a, Expr b) {
  check_arith(a, "truediv");
  check_arith(b, "truediv");
  Expr x = promote(a);
  Expr y = promote(b);
  if (y.kind() == Kind::FloatConst) {
    double d = y.float_value();
    if (d == 1.0) return x;
    if (x.kind() == Kind::FloatConst && d != 0.0) return Expr::floating(x.float_value() / d);
  }
  return make_node(Kind::TrueDiv, Type::Float, {x, y});
}

Expr min(std::span<const Expr> args) { return minmax(Kind::Min, args); }
Expr max(std::span<const Expr> args) { return minmax(Kind::Max, args); }
Expr min(Expr a, Expr b) {
  Expr xs[] = {a, b};
  return min(xs);
}
Expr max(Expr a, Expr b) {
  Expr xs[] = {a, b};
  return max(xs);
}

Expr to_float(Expr a) {
  check_arith(a, "ToFloat");
  if (a.is_float()) return a;
  if (auto v = a.as_int()) return Expr::floating(static_cast<double>(*v));
  return make_node(Kind::ToFloat, Type::Float, {a});
}

}  // namespace toroid::sym
