// ValueRange operations, interval arithmetic over expressions (bound), and divisibility
// (known_divisor).
//
// Interval arithmetic runs in 128-bit integers where +-kInf (2^100) stands for infinity, so no
// step overflows; results are converted back to int64 ranges soundly (a lower bound that does not
// fit becomes -inf or is clamped down, an upper bound becomes +inf or is clamped up).
#include <algorithm>
#include <numeric>

#include "node.h"
#include "toroid/support/error.h"
#include "toroid/sym/range.h"

namespace toroid::sym {

namespace {

__extension__ typedef __int128 i128;
constexpr i128 kInf = static_cast<i128>(1) << 100;

i128 to_ext(int64_t v) {
  if (v == ValueRange::kNegInf) return -kInf;
  if (v == ValueRange::kPosInf) return kInf;
  return v;
}
i128 sat(i128 v) { return v >= kInf ? kInf : (v <= -kInf ? -kInf : v); }
bool is_inf(i128 v) { return v >= kInf || v <= -kInf; }

struct R {
  i128 lo, hi;
};

R from(ValueRange r) { return {to_ext(r.lo), to_ext(r.hi)}; }

ValueRange to_range(R r) {
  ValueRange out;
  constexpr i128 kMin = ValueRange::kNegInf, kMax = ValueRange::kPosInf;
  out.lo = r.lo <= kMin ? ValueRange::kNegInf : (r.lo >= kMax ? kMax - 1 : static_cast<int64_t>(r.lo));
  out.hi = r.hi >= kMax ? ValueRange::kPosInf : (r.hi <= kMin ? kMin + 1 : static_cast<int64_t>(r.hi));
  return out;
}

// a + b where an inf + (-inf) conflict yields `conflict`.
i128 add_ext(i128 a, i128 b, i128 conflict) {
  bool pos = a >= kInf || b >= kInf, negv = a <= -kInf || b <= -kInf;
  if (pos && negv) return conflict;
  if (pos) return kInf;
  if (negv) return -kInf;
  return sat(a + b);
}

i128 mul_ext(i128 a, i128 b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? -kInf : kInf;
  return sat(a * b);
}

R r_add(R a, R b) { return {add_ext(a.lo, b.lo, -kInf), add_ext(a.hi, b.hi, kInf)}; }
R r_neg(R a) { return {-a.hi, -a.lo}; }
R r_join(R a, R b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

R r_mul(R a, R b) {
  i128 c[4] = {mul_ext(a.lo, b.lo), mul_ext(a.lo, b.hi), mul_ext(a.hi, b.lo), mul_ext(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

i128 floordiv_i128(i128 x, i128 y) {
  i128 q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

// floor(x / y) for y >= 1 (possibly +inf), x possibly infinite.
i128 fd_pos(i128 x, i128 y) {
  if (is_inf(x)) return x;
  if (y >= kInf) return x >= 0 ? 0 : -1;
  return floordiv_i128(x, y);
}

R r_floordiv_pos(R a, R b) {  // b.lo >= 1
  i128 c[4] = {fd_pos(a.lo, b.lo), fd_pos(a.lo, b.hi), fd_pos(a.hi, b.lo), fd_pos(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

R r_floordiv(R a, R b) {
  // Division by zero is undefined, so only b != 0 matters.
  bool has_pos = b.hi >= 1, has_neg = b.lo <= -1;
  R out{kInf, -kInf};  // empty
  if (has_pos) out = r_join(out, r_floordiv_pos(a, {std::max<i128>(b.lo, 1), b.hi}));
  if (has_neg) out = r_join(out, r_floordiv_pos(r_neg(a), r_neg({b.lo, std::min<i128>(b.hi, -1)})));
  if (!has_pos && !has_neg) return {0, 0};  // always undefined; any range is sound
  return out;
}

R r_mod_pos(R a, R b) {  // b.lo >= 1
  if (a.lo >= 0 && a.hi < b.lo) return a;
  i128 hi = b.hi >= kInf ? kInf : b.hi - 1;
  if (a.lo >= 0) hi = std::min(hi, a.hi);
  return {0, hi};
}

R r_mod(R a, R b) {
  bool has_pos = b.hi >= 1, has_neg = b.lo <= -1;
  R out{kInf, -kInf};
  if (has_pos) out = r_join(out, r_mod_pos(a, {std::max<i128>(b.lo, 1), b.hi}));
  if (has_neg) out = r_join(out, r_neg(r_mod_pos(r_neg(a), r_neg({b.lo, std::min<i128>(b.hi, -1)}))));
  if (!has_pos && !has_neg) return {0, 0};
  return out;
}

i128 pow_ext(i128 x, int64_t n) {
  i128 r = 1;
  i128 b = x;
  while (n > 0) {
    if (n & 1) r = mul_ext(r, b);
    n >>= 1;
    if (n > 0) b = mul_ext(b, b);
  }
  return r;
}

R r_pow(R a, int64_t n) {
  if (n == 0) return {1, 1};
  i128 l = pow_ext(a.lo, n), h = pow_ext(a.hi, n);
  if (n % 2 == 1) return {l, h};
  if (a.lo >= 0) return {l, h};
  if (a.hi <= 0) return {h, l};
  return {0, std::max(l, h)};
}

R bool_range(bool known, bool value) {
  if (!known) return {0, 1};
  return value ? R{1, 1} : R{0, 0};
}

R bound_rec(Expr e, const FactsFn& facts);

R symbol_range(Expr e, const FactsFn& facts) {
  SymbolFacts f = facts(e);
  R r = from(f.range);
  if (e.is_bool()) r = {std::max<i128>(r.lo, 0), std::min<i128>(r.hi, 1)};
  int64_t d = f.divisor;
  if (d > 1) {
    // Round the ends inward to multiples of the divisor.
    if (!is_inf(r.lo)) r.lo = -floordiv_i128(-r.lo, d) * d;
    if (!is_inf(r.hi)) r.hi = floordiv_i128(r.hi, d) * d;
  }
  return r;
}

R compare_range(Expr e, const FactsFn& facts) {
  Expr a = e.operands()[0], b = e.operands()[1];
  if (!a.is_int()) {
    if (a.is_bool() && (e.kind() == Kind::Eq || e.kind() == Kind::Ne)) {
      R x = bound_rec(a, facts), y = bound_rec(b, facts);
      bool want_eq = e.kind() == Kind::Eq;
      if (x.lo == x.hi && y.lo == y.hi) return bool_range(true, (x.lo == y.lo) == want_eq);
    }
    return {0, 1};
  }
  R d = bound_rec(sub(a, b), facts);
  switch (e.kind()) {
    case Kind::Lt:
      if (d.hi < 0) return bool_range(true, true);
      if (d.lo >= 0) return bool_range(true, false);
      break;
    case Kind::Le:
      if (d.hi <= 0) return bool_range(true, true);
      if (d.lo > 0) return bool_range(true, false);
      break;
    case Kind::Eq:
    case Kind::Ne: {
      bool want_eq = e.kind() == Kind::Eq;
      if (d.lo == 0 && d.hi == 0) return bool_range(true, want_eq);
      if (d.lo > 0 || d.hi < 0) return bool_range(true, !want_eq);
      break;
    }
    default: break;
  }
  return {0, 1};
}

R bound_rec(Expr e, const FactsFn& facts) {
  if (e.is_float()) return {-kInf, kInf};
  switch (e.kind()) {
    case Kind::IntConst: return {e.int_value(), e.int_value()};
    case Kind::BoolConst: return bool_range(true, e.bool_value());
    case Kind::Symbol: return symbol_range(e, facts);
    case Kind::Add: {
      R r{0, 0};
      for (Expr op : e.operands()) r = r_add(r, bound_rec(op, facts));
      return r;
    }
    case Kind::Mul: {
      R r{1, 1};
      for (Expr op : e.operands()) r = r_mul(r, bound_rec(op, facts));
      return r;
    }
    case Kind::FloorDiv:
      return r_floordiv(bound_rec(e.operands()[0], facts), bound_rec(e.operands()[1], facts));
    case Kind::Mod: return r_mod(bound_rec(e.operands()[0], facts), bound_rec(e.operands()[1], facts));
    case Kind::Pow: return r_pow(bound_rec(e.operands()[0], facts), e.exponent());
    case Kind::Min:
    case Kind::Max: {
      bool is_min = e.kind() == Kind::Min;
      R r = bound_rec(e.operands()[0], facts);
      for (Expr op : e.operands().subspan(1)) {
        R x = bound_rec(op, facts);
        r = is_min ? R{std::min(r.lo, x.lo), std::min(r.hi, x.hi)} : R{std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
      }
      return r;
    }
    case Kind::Eq:
    case Kind::Ne:
    case Kind::Lt:
    case Kind::Le: return compare_range(e, facts);
    case Kind::And:
    case Kind::Or: {
      bool is_and = e.kind() == Kind::And;
      R r = is_and ? R{1, 1} : R{0, 0};
      for (Expr op : e.operands()) {
        R x = bound_rec(op, facts);
        r = is_and ? R{std::min(r.lo, x.lo), std::min(r.hi, x.hi)} : R{std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
      }
      return r;
    }
    case Kind::Not: {
      R x = bound_rec(e.operands()[0], facts);
      return {1 - x.hi, 1 - x.lo};
    }
    default: return {-kInf, kInf};
  }
}

int64_t abs_divisor(int64_t c) {
  if (c == 0) return 0;  // internally 0 means "divisible by anything"
  if (c == ValueRange::kNegInf) return int64_t{1} << 62;
  return c < 0 ? -c : c;
}

int64_t kd_rec(Expr e, const FactsFn& facts) {
  if (!e.is_int()) return 1;
  switch (e.kind()) {
    case Kind::IntConst: return abs_divisor(e.int_value());
    case Kind::Symbol: {
      SymbolFacts f = facts(e);
      if (f.range.is_exact() && f.range.lo_finite() && f.range.hi_finite()) return abs_divisor(f.range.lo);
      return f.divisor >= 1 ? f.divisor : 1;
    }
    case Kind::Add:
    case Kind::Min:
    case Kind::Max: {
      int64_t g = 0;
      for (Expr op : e.operands()) {
        g = std::gcd(g, kd_rec(op, facts));
        if (g == 1) break;
      }
      return g;
    }
    case Kind::Mul: {
      int64_t p = 1;
      for (Expr op : e.operands()) {
        int64_t d = kd_rec(op, facts);
        if (d == 0) return 0;
        auto q = detail::checked_mul(p, d);
        p = (q && *q <= (int64_t{1} << 62)) ? *q : std::max(p, d);
      }
      return p;
    }
    case Kind::FloorDiv: {
      auto c = e.operands()[1].as_int();
      if (!c) return 1;
      int64_t ka = kd_rec(e.operands()[0], facts);
      int64_t ac = abs_divisor(*c);
      if (ka == 0) return 0;
      if (ac != 0 && ka % ac == 0) return ka / ac;
      return 1;
    }
    case Kind::Mod: {
      int64_t ka = kd_rec(e.operands()[0], facts);
      int64_t kb = kd_rec(e.operands()[1], facts);
      if (e.operands()[1].as_int() && kb != 0 && ka % kb == 0) return 0;  // always 0
      return std::gcd(ka, kb);
    }
    case Kind::Pow: {
      int64_t kb = kd_rec(e.operands()[0], facts);
      if (kb == 0) return 0;
      auto p = detail::checked_pow(kb, e.exponent());
      return (p && *p <= (int64_t{1} << 62)) ? *p : kb;
    }
    default: return 1;
  }
}

}  // namespace

ValueRange ValueRange::intersect(ValueRange o) const { return {std::max(lo, o.lo), std::min(hi, o.hi)}; }

ValueRange ValueRange::join(ValueRange o) const {
  if (empty()) return o;
  if (o.empty()) return *this;
  return {std::min(lo, o.lo), std::max(hi, o.hi)};
}

std::string ValueRange::str() const {
  auto end = [](int64_t v) {
    if (v == kNegInf) return std::string("-inf");
    if (v == kPosInf) return std::string("inf");
    return std::to_string(v);
  };
  return "[" + end(lo) + ", " + end(hi) + "]";
}

ValueRange bound(Expr e, const FactsFn& facts) {
  TOROID_CHECK(!e.is_null(), "bound of a null expression");
  if (e.is_float()) return ValueRange::all();
  return to_range(bound_rec(e, facts));
}

int64_t known_divisor(Expr e, const FactsFn& facts) {
  TOROID_CHECK(!e.is_null(), "known_divisor of a null expression");
  int64_t d = kd_rec(e, facts);
  return d == 0 ? (int64_t{1} << 62) : d;
}

}  // namespace toroid::sym
