// Integer value ranges [lo, hi] with infinite ends, and interval arithmetic over SymExprs.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "toroid/sym/expr.h"

namespace toroid::sym {

struct ValueRange {
  // INT64_MIN and INT64_MAX stand for -inf and +inf; arithmetic saturates at them.
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

  int64_t lo = kNegInf;
  int64_t hi = kPosInf;

  static ValueRange all() { return {}; }
  static ValueRange exactly(int64_t v) { return {v, v}; }
  static ValueRange at_least(int64_t v) { return {v, kPosInf}; }

  bool empty() const { return lo > hi; }
  bool is_exact() const { return lo == hi; }
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool lo_finite() const { return lo != kNegInf; }
  bool hi_finite() const { return hi != kPosInf; }
  ValueRange intersect(ValueRange o) const;
  ValueRange join(ValueRange o) const;  // smallest range holding both
  // "[2, inf]", "[-inf, 7]"
  std::string str() const;
  friend bool operator==(ValueRange a, ValueRange b) { return a.lo == b.lo && a.hi == b.hi; }
};

// What the simplifier may know about a symbol.
struct SymbolFacts {
  ValueRange range;
  int64_t divisor = 1;  // the symbol is known to be a multiple of this (>= 1)
};

// Looks up facts by symbol; returns default facts (all integers) for unknown symbols.
using FactsFn = std::function<SymbolFacts(Expr symbol)>;

// Sound bounds of an integer (or bool, as 0/1) expression, given facts about its symbols.
ValueRange bound(Expr e, const FactsFn& facts);

// The largest d >= 1 known to divide e for every value of its symbols (1 if nothing is known;
// 0 is never returned; for an expression that is always 0, 2**62). Uses constant coefficients
// and symbol divisors.
int64_t known_divisor(Expr e, const FactsFn& facts);

}  // namespace toroid::sym
