// Simplifier rules for integer arithmetic: FloorDiv, Mod, Mul and Add.
//
// Every rule is sound for all integer values its facts allow, wherever the input is defined
// (a rule may turn an expression that is undefined for some values, e.g. a division by a
// symbol that may be zero, into one that is defined there). tests/unit/sym_rules_test.cpp checks
// each by brute force.
#include <algorithm>
#include <limits>
#include <numeric>
#include <span>

#include "node.h"
#include "rules.h"
#include "toroid/support/error.h"

namespace toroid::sym::rules {

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

std::optional<int64_t> const_divisor(Expr e) {
  auto c = e.operands()[1].as_int();
  if (!c || *c == 0 || *c == kMin) return std::nullopt;
  return c;
}

int64_t abs64(int64_t c) { return c < 0 ? -c : c; }  // c != INT64_MIN

// Factorization of a product: coefficient and (base, exponent) pairs.
struct Factors {
  int64_t coeff = 1;
  std::vector<std::pair<Expr, int64_t>> powers;
};

std::optional<Factors> factors_of(Expr e) {
  Factors f;
  auto add_factor = [&](Expr x) {
    if (x.kind() == Kind::Pow) {
      f.powers.emplace_back(x.operands()[0], x.exponent());
    } else {
      f.powers.emplace_back(x, 1);
    }
  };
  if (e.kind() == Kind::IntConst) {
    f.coeff = e.int_value();
  } else if (e.kind() == Kind::Mul) {
    bool have_coeff = false;
    for (Expr x : e.operands()) {
      if (x.kind() == Kind::IntConst && !have_coeff) {
        f.coeff = x.int_value();
        have_coeff = true;
      } else {
        add_factor(x);
      }
    }
  } else {
    add_factor(e);
  }
  return f;
}

// a / b when a is syntactically b times a product (or a sum of such); null otherwise.
Expr divide_by_expr(Expr a, Expr b) {
  if (a == b) return Expr::integer(1);
  if (a.kind() == Kind::Add) {
    std::vector<Expr> qs;
    for (Expr t : a.operands()) {
      Expr q = divide_by_expr(t, b);
      if (q.is_null()) return Expr();
      qs.push_back(q);
    }
    return add(qs);
  }
  auto fa = factors_of(a);
  auto fb = factors_of(b);
  if (!fa || !fb || fb->coeff == 0 || fb->coeff == kMin) return Expr();
  auto m = py_mod(fa->coeff, fb->coeff);
  if (!m || *m != 0) return Expr();
  std::vector<Expr> out{Expr::integer(*py_floordiv(fa->coeff, fb->coeff))};
  std::vector<std::pair<Expr, int64_t>> rest = fa->powers;
  for (const auto& want : fb->powers) {
    auto it = std::find_if(rest.begin(), rest.end(),
                           [&](const auto& p) { return p.first == want.first && p.second >= want.second; });
    if (it == rest.end()) return Expr();
    it->second -= want.second;
  }
  for (const auto& [base, exp] : rest) out.push_back(pow(base, exp));
  return mul(out);
}

std::span<const Expr> terms_of(const Expr& e) {
  if (e.kind() == Kind::Add) return e.operands();
  return {&e, 1};
}

// ---- FloorDiv ----

// a = B + S with every coefficient of B a multiple of g (g > 1 dividing c), and S (a nonempty
// rest) in [0, g) by ranges: then a//c = (B/g)//(c/g) and a % c = g*((B/g) % (c/g)) + S. This is
// an index unravelled over sizes the simplifier knows: (96*i + r)//672 with 0 <= r < 96 is i//7.
struct SmallRest {
  int64_t g = 0;
  Expr big_over_g, rest;
};

std::optional<SmallRest> split_small_rest(Expr a, int64_t c, const FactsFn& facts) {
  if (c <= 1 || a.kind() != Kind::Add) return std::nullopt;
  std::vector<int64_t> candidates;
  for (Expr t : a.operands()) {
    detail::Term term = detail::split_term(t);
    if (!term.mono || term.coeff == kMin) continue;
    int64_t g = std::gcd(abs64(term.coeff), c);
    if (g > 1) candidates.push_back(g);
  }
  std::sort(candidates.begin(), candidates.end(), std::greater<>());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (int64_t g : candidates) {
    std::vector<Expr> big, rest;
    for (Expr t : a.operands()) (divide_exact(t, g) ? big : rest).push_back(t);
    if (big.empty() || rest.empty()) continue;
    Expr r = add(rest);
    ValueRange rr = bound(r, facts);
    if (rr.lo < 0 || !rr.hi_finite() || rr.hi >= g) continue;
    return SmallRest{g, divide_exact(add(big), g), r};
  }
  return std::nullopt;
}

Expr floordiv_exact(Expr e, const RuleContext&) {
  auto c = const_divisor(e);
  if (!c) return Expr();
  return divide_exact(e.operands()[0], *c);
}

Expr floordiv_split_add(Expr e, const RuleContext&) {
  Expr a = e.operands()[0];
  auto c = const_divisor(e);
  if (!c || a.kind() != Kind::Add) return Expr();
  std::vector<Expr> q, r;
  for (Expr t : a.operands()) {
    Expr x = divide_exact(t, *c);
    if (x) {
      q.push_back(x);
    } else {
      r.push_back(t);
    }
  }
  if (q.empty() || r.empty()) return Expr();
  return add(add(q), floordiv(add(r), e.operands()[1]));
}

Expr floordiv_small_rest(Expr e, const RuleContext& ctx) {
  auto c = const_divisor(e);
  if (!c) return Expr();
  auto split = split_small_rest(e.operands()[0], *c, ctx.facts);
  if (!split) return Expr();
  return floordiv(split->big_over_g, *c / split->g);
}

Expr floordiv_small(Expr e, const RuleContext& ctx) {
  ValueRange ra = bound(e.operands()[0], ctx.facts);
  ValueRange rb = bound(e.operands()[1], ctx.facts);
  if (ra.lo >= 0 && ra.hi_finite() && rb.lo > ra.hi) return Expr::integer(0);
  if (ra.hi <= 0 && ra.lo_finite() && rb.hi < ra.lo) return Expr::integer(0);
  return Expr();
}

Expr floordiv_nested(Expr e, const RuleContext& ctx) {
  Expr a = e.operands()[0];
  if (a.kind() != Kind::FloorDiv) return Expr();
  Expr p = a.operands()[1], q = e.operands()[1];
  if (bound(p, ctx.facts).lo < 1 || bound(q, ctx.facts).lo < 1) return Expr();
  return floordiv(a.operands()[0], mul(p, q));
}

Expr floordiv_of_mod(Expr e, const RuleContext&) {
  // (x % (c*n)) // c  =>  (x // c) % n, for c > 0 and c*n > 0.
  Expr a = e.operands()[0];
  auto c = const_divisor(e);
  if (!c || *c <= 0 || a.kind() != Kind::Mod) return Expr();
  auto m = a.operands()[1].as_int();
  if (!m || *m <= 0 || *m % *c != 0) return Expr();
  return mod(floordiv(a.operands()[0], *c), *m / *c);
}

Expr floordiv_multiple(Expr e, const RuleContext&) {
  Expr b = e.operands()[1];
  if (b.is_constant()) return Expr();
  return divide_by_expr(e.operands()[0], b);
}

Expr floordiv_by_range(Expr e, const RuleContext& ctx) {
  ValueRange r = bound(e, ctx.facts);
  if (r.is_exact() && r.lo_finite() && r.hi_finite()) return Expr::integer(r.lo);
  return Expr();
}

// ---- Mod ----

Expr mod_small(Expr e, const RuleContext& ctx) {
  Expr a = e.operands()[0];
  ValueRange ra = bound(a, ctx.facts);
  ValueRange rb = bound(e.operands()[1], ctx.facts);
  if (ra.lo >= 0 && ra.hi_finite() && rb.lo > ra.hi) return a;
  if (ra.hi <= 0 && ra.lo_finite() && rb.hi < ra.lo) return a;
  return Expr();
}

Expr mod_small_rest(Expr e, const RuleContext& ctx) {
  auto c = const_divisor(e);
  if (!c) return Expr();
  auto split = split_small_rest(e.operands()[0], *c, ctx.facts);
  if (!split) return Expr();
  return add(mul(Expr::integer(split->g), mod(split->big_over_g, *c / split->g)), split->rest);
}

Expr mod_divisible(Expr e, const RuleContext& ctx) {
  auto c = const_divisor(e);
  if (!c) return Expr();
  if (known_divisor(e.operands()[0], ctx.facts) % abs64(*c) == 0) return Expr::integer(0);
  return Expr();
}

Expr mod_drop_multiples(Expr e, const RuleContext& ctx) {
  Expr a = e.operands()[0];
  auto c = const_divisor(e);
  if (!c || a.kind() != Kind::Add) return Expr();
  int64_t ac = abs64(*c);
  std::vector<Expr> kept;
  bool changed = false;
  for (Expr t : a.operands()) {
    if (auto k = t.as_int()) {
      int64_t r = *py_mod(*k, *c);
      changed = changed || r != *k;
      if (r != 0) kept.push_back(Expr::integer(r));
      continue;
    }
    if (known_divisor(t, ctx.facts) % ac == 0) {
      changed = true;
      continue;
    }
    detail::Term term = detail::split_term(t);
    if (term.coeff >= ac) {
      int64_t r = term.coeff % ac;
      changed = true;
      if (r != 0) kept.push_back(detail::make_term(r, term.mono));
      continue;
    }
    kept.push_back(t);
  }
  if (!changed) return Expr();
  return mod(add(kept), e.operands()[1]);
}

Expr mod_nested(Expr e, const RuleContext&) {
  Expr a = e.operands()[0];
  auto q = const_divisor(e);
  if (!q || a.kind() != Kind::Mod) return Expr();
  auto p = a.operands()[1].as_int();
  if (!p || *p == 0 || *py_mod(*p, *q) != 0) return Expr();
  return mod(a.operands()[0], e.operands()[1]);
}

Expr mod_common_factor(Expr e, const RuleContext&) {
  // (g*y) % (g*n)  =>  g*(y % n), for g > 1 dividing every coefficient of the dividend.
  Expr a = e.operands()[0];
  auto m = const_divisor(e);
  if (!m) return Expr();
  int64_t g = std::gcd(syntactic_content(a), abs64(*m));
  if (g <= 1) return Expr();
  Expr y = divide_exact(a, g);
  if (y.is_null()) return Expr();
  return mul(Expr::integer(g), mod(y, *m / g));
}

Expr mod_multiple(Expr e, const RuleContext&) {
  Expr b = e.operands()[1];
  if (b.is_constant()) return Expr();
  if (divide_by_expr(e.operands()[0], b)) return Expr::integer(0);
  return Expr();
}

Expr mod_by_range(Expr e, const RuleContext& ctx) {
  ValueRange r = bound(e, ctx.facts);
  if (r.is_exact() && r.lo_finite() && r.hi_finite()) return Expr::integer(r.lo);
  return Expr();
}

// ---- Mul ----

Expr mul_floordiv_exact(Expr e, const RuleContext& ctx) {
  // k*(x//c)*rest  =>  (k/c)*x*rest, when c divides k and x.
  if (!e.is_int()) return Expr();
  auto ops = e.operands();
  int64_t k = 1;
  size_t start = 0;
  if (ops[0].kind() == Kind::IntConst) {
    k = ops[0].int_value();
    start = 1;
  }
  for (size_t i = start; i < ops.size(); ++i) {
    Expr f = ops[i];
    if (f.kind() != Kind::FloorDiv) continue;
    auto c = const_divisor(f);
    if (!c) continue;
    auto r = py_mod(k, *c);
    if (!r || *r != 0) continue;
    Expr x = f.operands()[0];
    if (known_divisor(x, ctx.facts) % abs64(*c) != 0) continue;
    std::vector<Expr> out{Expr::integer(*py_floordiv(k, *c)), x};
    for (size_t j = start; j < ops.size(); ++j) {
      if (j != i) out.push_back(ops[j]);
    }
    return mul(out);
  }
  return Expr();
}

// ---- Add ----

Expr add_div_mod_recombine(Expr e, const RuleContext&) {
  // k*c*(x//c) + k*(x % c)  =>  k*x
  if (!e.is_int()) return Expr();
  auto ops = e.operands();
  for (size_t i = 0; i < ops.size(); ++i) {
    detail::Term ti = detail::split_term(ops[i]);
    if (!ti.mono || ti.mono.kind() != Kind::FloorDiv) continue;
    auto c = const_divisor(ti.mono);
    if (!c) continue;
    auto r = py_mod(ti.coeff, *c);
    if (!r || *r != 0) continue;
    int64_t k = *py_floordiv(ti.coeff, *c);
    Expr x = ti.mono.operands()[0];
    Expr m = mod(x, ti.mono.operands()[1]);
    for (size_t j = 0; j < ops.size(); ++j) {
      detail::Term tj = detail::split_term(ops[j]);
      if (j == i || tj.mono != m || tj.coeff != k) continue;
      std::vector<Expr> out{mul(Expr::integer(k), x)};
      for (size_t l = 0; l < ops.size(); ++l) {
        if (l != i && l != j) out.push_back(ops[l]);
      }
      return add(out);
    }
  }
  return Expr();
}

Expr add_div_mod_recombine_sym(Expr e, const RuleContext& ctx) {
  // k*b*(y//b) + k*(y % b)  =>  k*y, for a divisor b that is not a constant and any factor k
  // (an index unravelled over symbolic sizes and raveled again with the same strides: the
  // nested form (x//a)//b is also matched as x//(a*b), as floordiv_nested writes it for a, b >= 1).
  if (!e.is_int()) return Expr();
  auto ops = e.operands();
  for (size_t i = 0; i < ops.size(); ++i) {
    detail::Term ti = detail::split_term(ops[i]);
    if (!ti.mono) continue;
    std::span<const Expr> factors = ti.mono.kind() == Kind::Mul ? ti.mono.operands() : std::span<const Expr>(&ti.mono, 1);
    for (size_t f = 0; f < factors.size(); ++f) {
      Expr m = factors[f];
      if (m.kind() != Kind::Mod || m.operands()[1].is_constant()) continue;
      Expr y = m.operands()[0], b = m.operands()[1];
      std::vector<Expr> scale{Expr::integer(ti.coeff)};
      for (size_t g = 0; g < factors.size(); ++g)
        if (g != f) scale.push_back(factors[g]);
      Expr k = mul(scale);
      std::vector<Expr> partners{mul(std::vector<Expr>{k, b, floordiv(y, b)})};
      if (y.kind() == Kind::FloorDiv && bound(y.operands()[1], ctx.facts).lo >= 1 && bound(b, ctx.facts).lo >= 1)
        partners.push_back(mul(std::vector<Expr>{k, b, floordiv(y.operands()[0], mul(y.operands()[1], b))}));
      for (size_t j = 0; j < ops.size(); ++j) {
        if (j == i || std::find(partners.begin(), partners.end(), ops[j]) == partners.end()) continue;
        std::vector<Expr> out{mul(k, y)};
        for (size_t l = 0; l < ops.size(); ++l)
          if (l != i && l != j) out.push_back(ops[l]);
        return add(out);
      }
    }
  }
  return Expr();
}

const Rule kArithRules[] = {
    {"floordiv_exact", Kind::FloorDiv, "a//c => a/c, if every term of a is a multiple of c",
     floordiv_exact},
    {"floordiv_split_add", Kind::FloorDiv, "(c*q + r)//c => q + r//c", floordiv_split_add},
    {"floordiv_small", Kind::FloorDiv, "a//b => 0, if 0 <= a < b or b < a <= 0 by ranges", floordiv_small},
    {"floordiv_small_rest", Kind::FloorDiv, "(g*x + r)//(g*k) => x//k, if 0 <= r < g by ranges (g > 1, k > 0)",
     floordiv_small_rest},
    {"floordiv_nested", Kind::FloorDiv, "(x//a)//b => x//(a*b), if a >= 1 and b >= 1", floordiv_nested},
    {"floordiv_of_mod", Kind::FloorDiv, "(x % (c*n))//c => (x//c) % n, for constants c > 0, c*n > 0",
     floordiv_of_mod},
    {"floordiv_multiple", Kind::FloorDiv, "(b*q)//b => q, b not a constant", floordiv_multiple},
    {"floordiv_by_range", Kind::FloorDiv, "a//b => k, if the range of a//b is exactly k", floordiv_by_range},
    {"mod_small", Kind::Mod, "a % b => a, if 0 <= a < b or b < a <= 0 by ranges", mod_small},
    {"mod_small_rest", Kind::Mod, "(g*x + r) % (g*k) => g*(x % k) + r, if 0 <= r < g by ranges (g > 1, k > 0)",
     mod_small_rest},
    {"mod_divisible", Kind::Mod, "a % c => 0, if c divides known_divisor(a)", mod_divisible},
    {"mod_drop_multiples", Kind::Mod,
     "(t + r) % c => r % c, dropping terms that are multiples of c and reducing constants and coefficients mod c",
     mod_drop_multiples},
    {"mod_nested", Kind::Mod, "(x % a) % b => x % b, for constants with b dividing a", mod_nested},
    {"mod_common_factor", Kind::Mod, "(g*y) % (g*n) => g*(y % n), g > 1 a common constant factor",
     mod_common_factor},
    {"mod_multiple", Kind::Mod, "(b*q) % b => 0, b not a constant", mod_multiple},
    {"mod_by_range", Kind::Mod, "a % b => k, if the range of a % b is exactly k", mod_by_range},
    {"mul_floordiv_exact", Kind::Mul, "k*(x//c) => (k/c)*x, if c divides k and known_divisor(x)",
     mul_floordiv_exact},
    {"add_div_mod_recombine", Kind::Add, "k*c*(x//c) + k*(x % c) => k*x", add_div_mod_recombine},
    {"add_div_mod_recombine_sym", Kind::Add, "k*b*(y//b) + k*(y % b) => k*y, b not a constant",
     add_div_mod_recombine_sym},
};

}  // namespace

Expr divide_exact(Expr e, int64_t d) {
  if (d == 0 || !e.is_int()) return Expr();
  if (auto c = e.as_int()) {
    auto r = py_mod(*c, d);
    if (!r || *r != 0) return Expr();
    auto q = py_floordiv(*c, d);
    return q ? Expr::integer(*q) : Expr();
  }
  if (e.kind() == Kind::Add) {
    std::vector<Expr> qs;
    for (Expr t : e.operands()) {
      Expr q = divide_exact(t, d);
      if (q.is_null()) return Expr();
      qs.push_back(q);
    }
    return add(qs);
  }
  detail::Term t = detail::split_term(e);
  auto r = py_mod(t.coeff, d);
  if (!r || *r != 0) return Expr();
  auto q = py_floordiv(t.coeff, d);
  if (!q) return Expr();
  return detail::make_term(*q, t.mono);
}

int64_t syntactic_content(Expr e) {
  int64_t g = 0;
  for (Expr t : terms_of(e)) {
    detail::Term term = detail::split_term(t);
    if (term.coeff == kMin) return 1;
    g = std::gcd(g, abs64(term.coeff));
  }
  return g;
}

std::span<const Rule> arith_rules() { return kArithRules; }

}  // namespace toroid::sym::rules
