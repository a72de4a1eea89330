// Builders shared by the symbolic-expression tests.
#pragma once

#include <cstdint>

#include "toroid/sym/expr.h"
#include "toroid/sym/range.h"

namespace toroid::sym::symtest {

inline Expr I(int64_t v) { return Expr::integer(v); }
inline Expr F(double v) { return Expr::floating(v); }
inline constexpr int64_t kNegInf = ValueRange::kNegInf;
inline constexpr int64_t kPosInf = ValueRange::kPosInf;

}  // namespace toroid::sym::symtest
