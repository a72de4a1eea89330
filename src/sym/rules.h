// Internal: the simplifier's rule tables and helpers shared by the rule files.
#pragma once

#include <optional>
#include <span>

#include "toroid/sym/simplify.h"

namespace toroid::sym::rules {

std::span<const Rule> arith_rules();    // rules_arith.cpp: FloorDiv, Mod, Mul, Add
std::span<const Rule> compare_rules();  // rules_compare.cpp: Min, Max, Symbol, comparisons, And, Or

// e / d when e is syntactically a multiple of the constant d (every term's coefficient and the
// constant divisible by d); null otherwise. d != 0.
Expr divide_exact(Expr e, int64_t d);

// The gcd of the coefficients of e's non-constant terms and of its constant (syntactic); 0 for 0.
int64_t syntactic_content(Expr e);

}  // namespace toroid::sym::rules
