// Simplifier rules for Min/Max, symbols, comparisons and boolean connectives.
#include <algorithm>
#include <limits>
#include <numeric>

#include "node.h"
#include "rules.h"
#include "toroid/support/error.h"

namespace toroid::sym::rules {

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

bool exact(ValueRange r) { return r.is_exact() && r.lo_finite() && r.hi_finite(); }

// a <= b for every value the facts allow.
bool always_le(Expr a, Expr b, const FactsFn& facts) {
  if (!a.is_int() || !b.is_int()) return false;
  ValueRange d = bound(sub(b, a), facts);
  return d.lo >= 0 && d.lo_finite();
}

// ---- Min / Max ----

Expr drop_dominated(Expr e, const RuleContext& ctx, bool is_min) {
  if (!e.is_int()) return Expr();
  std::vector<Expr> kept(e.operands().begin(), e.operands().end());
  bool changed = false;
  for (size_t j = 0; j < kept.size();) {
    bool drop = false;
    for (size_t i = 0; i < kept.size() && !drop; ++i) {
      if (i == j) continue;
      drop = is_min ? always_le(kept[i], kept[j], ctx.facts) : always_le(kept[j], kept[i], ctx.facts);
    }
    if (drop) {
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(j));
      changed = true;
    } else {
      ++j;
    }
  }
  if (!changed) return Expr();
  return is_min ? min(kept) : max(kept);
}

Expr min_dominated(Expr e, const RuleContext& ctx) { return drop_dominated(e, ctx, true); }
Expr max_dominated(Expr e, const RuleContext& ctx) { return drop_dominated(e, ctx, false); }

// Min(a, Max(a, b)) => a (and the dual): an operand of the other kind that contains one of our
// other operands is redundant.
Expr absorb(Expr e, Kind inner) {
  auto ops = e.operands();
  std::vector<Expr> kept;
  bool changed = false;
  for (size_t j = 0; j < ops.size(); ++j) {
    bool drop = false;
    if (ops[j].kind() == inner) {
      for (Expr x : ops[j].operands()) {
        for (size_t i = 0; i < ops.size() && !drop; ++i) drop = i != j && ops[i] == x;
      }
    }
    if (drop) {
      changed = true;
    } else {
      kept.push_back(ops[j]);
    }
  }
  if (!changed) return Expr();
  return rebuild(e, kept);
}

Expr min_absorb_max(Expr e, const RuleContext&) { return absorb(e, Kind::Max); }
Expr max_absorb_min(Expr e, const RuleContext&) { return absorb(e, Kind::Min); }

// ---- Symbol ----

Expr symbol_exact_range(Expr e, const RuleContext& ctx) {
  if (e.is_float()) return Expr();
  ValueRange r = bound(e, ctx.facts);
  if (!exact(r)) return Expr();
  if (e.is_bool()) return Expr::boolean(r.lo != 0);
  return Expr::integer(r.lo);
}

// ---- Comparisons ----

Expr compare_by_range(Expr e, const RuleContext& ctx) {
  ValueRange r = bound(e, ctx.facts);
  if (!exact(r)) return Expr();
  return Expr::boolean(r.lo != 0);
}

// a == b is false when a - b = k + (terms all divisible by g) with g not dividing k.
Expr eq_by_divisibility(Expr e, const RuleContext& ctx) {
  Expr a = e.operands()[0], b = e.operands()[1];
  if (!a.is_int()) return Expr();
  Expr d = sub(a, b);
  if (d.kind() != Kind::Add) return Expr();
  auto ops = d.operands();
  auto k = ops.back().as_int();
  if (!k) return Expr();
  Expr rest = add(ops.first(ops.size() - 1));
  int64_t g = known_divisor(rest, ctx.facts);
  if (g <= 1 || *py_mod(*k, g) == 0) return Expr();
  return Expr::boolean(e.kind() == Kind::Ne);
}

Expr build_compare(Kind k, Expr a, Expr b) {
  switch (k) {
    case Kind::Eq: return eq(a, b);
    case Kind::Ne: return ne(a, b);
    case Kind::Lt: return lt(a, b);
    default: return le(a, b);
  }
}

// Linear normal form: move everything to one side, divide by the gcd of the coefficients, and
// write it as P op N + c with positive-coefficient terms P on the left, negated negative ones N on
// the right, and the constant on the right (on the left if P is empty).
Expr normalize_compare(Expr e, const RuleContext&) {
  Expr a = e.operands()[0], b = e.operands()[1];
  if (!a.is_int()) return Expr();
  Kind kind = e.kind();
  Expr d = sub(a, b);
  bool symmetric = kind == Kind::Eq || kind == Kind::Ne;
  if (symmetric) {
    // Orientation-independent: the first non-constant term gets a positive coefficient.
    Expr first = d.kind() == Kind::Add ? d.operands()[0] : d;
    if (detail::split_term(first).coeff < 0) d = neg(d);
  }
  int64_t k = 0;
  std::vector<Expr> pos, negs;
  int64_t g = 0;
  for (Expr t : (d.kind() == Kind::Add ? d.operands() : std::span<const Expr>(&d, 1))) {
    detail::Term term = detail::split_term(t);
    if (!term.mono) {
      if (k != 0) return Expr();  // two constants (an overflowed sum): leave it alone
      k = term.coeff;
      continue;
    }
    if (term.coeff == kMin) return Expr();
    g = std::gcd(g, term.coeff < 0 ? -term.coeff : term.coeff);
    if (term.coeff > 0) {
      pos.push_back(t);
    } else {
      negs.push_back(detail::make_term(-term.coeff, term.mono));
    }
  }
  if (pos.empty() && negs.empty()) return build_compare(kind, Expr::integer(k), Expr::integer(0));
  if (k == kMin) return Expr();
  Expr p = add(pos), n = add(negs);
  int64_t c;  // the relation is now (p - n) op c
  if (g > 1) {
    p = divide_exact(p, g);
    n = divide_exact(n, g);
    if (p.is_null() || n.is_null()) return Expr();
    switch (kind) {
      case Kind::Lt: c = -*py_floordiv(k, g); break;             // y < -k/g  <=>  y < ceil(-k/g)
      case Kind::Le: c = *py_floordiv(-k, g); break;             // y <= -k/g <=>  y <= floor(-k/g)
      default:
        if (*py_mod(k, g) != 0) return Expr::boolean(kind == Kind::Ne);
        c = -k / g;
    }
  } else {
    c = -k;
  }
  Expr out;
  if (!pos.empty()) {
    out = build_compare(kind, p, add(n, Expr::integer(c)));
  } else {
    if (c == kMin) return Expr();
    out = symmetric ? build_compare(kind, n, Expr::integer(-c)) : build_compare(kind, Expr::integer(-c), n);
  }
  return out == e ? Expr() : out;
}

// ---- And / Or ----

Expr and_absorb_or(Expr e, const RuleContext&) { return absorb(e, Kind::Or); }
Expr or_absorb_and(Expr e, const RuleContext&) { return absorb(e, Kind::And); }

const Rule kCompareRules[] = {
    {"min_dominated", Kind::Min, "Min(a, b, ...) => Min(a, ...), if a <= b by ranges", min_dominated},
    {"max_dominated", Kind::Max, "Max(a, b, ...) => Max(a, ...), if a >= b by ranges", max_dominated},
    {"min_absorb_max", Kind::Min, "Min(a, Max(a, b)) => a", min_absorb_max},
    {"max_absorb_min", Kind::Max, "Max(a, Min(a, b)) => a", max_absorb_min},
    {"symbol_exact_range", Kind::Symbol, "s => k, if the range of s (with its divisor) is exactly k",
     symbol_exact_range},
    {"lt_by_range", Kind::Lt, "a < b => true/false, if the range of b - a decides it", compare_by_range},
    {"le_by_range", Kind::Le, "a <= b => true/false, if the range of b - a decides it", compare_by_range},
    {"eq_by_range", Kind::Eq, "a == b => true/false, if the range of a - b decides it", compare_by_range},
    {"ne_by_range", Kind::Ne, "a != b => true/false, if the range of a - b decides it", compare_by_range},
    {"eq_by_divisibility", Kind::Eq, "a == b => false, if a - b = k + g*t with g not dividing k",
     eq_by_divisibility},
    {"ne_by_divisibility", Kind::Ne, "a != b => true, if a - b = k + g*t with g not dividing k",
     eq_by_divisibility},
    {"lt_normalize", Kind::Lt, "a < b => P < N + c (linear normal form, divided by the gcd)",
     normalize_compare},
    {"le_normalize", Kind::Le, "a <= b => P <= N + c (linear normal form, divided by the gcd)",
     normalize_compare},
    {"eq_normalize", Kind::Eq, "a == b => P == N + c (linear normal form, divided by the gcd)",
     normalize_compare},
    {"ne_normalize", Kind::Ne, "a != b => P != N + c (linear normal form, divided by the gcd)",
     normalize_compare},
    {"and_absorb_or", Kind::And, "And(a, Or(a, b)) => a", and_absorb_or},
    {"or_absorb_and", Kind::Or, "Or(a, And(a, b)) => a", or_absorb_and},
};

}  // namespace

std::span<const Rule> compare_rules() { return kCompareRules; }

}  // namespace toroid::sym::rules
