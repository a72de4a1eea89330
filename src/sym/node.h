// Internal: the hash-consed node behind sym::Expr, and helpers shared by the sym sources.
#pragma once

#include <cstdint>
#include <vector>

#include "toroid/sym/expr.h"

namespace toroid::sym {

class Node {
 public:
  Kind kind = Kind::IntConst;
  Type type = Type::Int;
  bool has_symbols = false;
  int64_t ival = 0;   // IntConst value, BoolConst 0/1, Pow exponent
  double fval = 0.0;  // FloatConst value
  const SymbolDecl* decl = nullptr;  // Symbol only
  std::vector<Expr> ops;
  size_t hash = 0;
};

namespace detail {

// Interns a node (not a Symbol) with exactly these contents; no canonicalization.
Expr make_node(Kind k, Type t, std::vector<Expr> ops, int64_t ival = 0, double fval = 0.0);

// Checked int64 arithmetic; nullopt on overflow.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_pow(int64_t base, int64_t exponent);

// Splits an integer term into coefficient * monomial. For an IntConst the monomial is null.
// A Mul whose first operand is its only integer constant gives that constant.
struct Term {
  int64_t coeff = 1;
  Expr mono;
};
Term split_term(Expr e);
// coeff * mono, built canonically (mono non-null).
Expr make_term(int64_t coeff, Expr mono);

bool is_div_kind(Kind k);

}  // namespace detail
}  // namespace toroid::sym
