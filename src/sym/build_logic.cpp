// Canonicalizing builders for comparisons and boolean connectives.
//
//  - Comparisons of constants fold; x == x, x <= x fold for ints and bools (not floats: nan).
//  - Eq/Ne are symmetric: a constant goes on the right ("s0 == 4"), otherwise the operands are
//    in canonical order ("s0 == s1").
//  - a > b is Lt(b, a) and a >= b is Le(b, a).
//  - And/Or: flattened, constants absorbed, duplicates removed, sorted; x & Not(x) is false.
//  - Not: folds constants, Not(Not(x)) -> x, flips Eq/Ne, and Not(a < b) -> b <= a for ints.
#include <algorithm>
#include <cmath>

#include "node.h"
#include "toroid/support/error.h"

namespace toroid::sym {

using detail::make_node;

namespace {

void check_bool(Expr e, const char* op) {
  if (e.is_null()) internal_error(std::string("null operand to ") + op, __FILE__, __LINE__);
  if (!e.is_bool())
    internal_error(std::string("non-bool operand to ") + op + ": " + e.str(), __FILE__, __LINE__);
}

Expr compare_op(Kind k, Expr a, Expr b) {
  const char* name = kind_name(k);
  if (a.is_null() || b.is_null()) internal_error(std::string("null operand to ") + name, __FILE__, __LINE__);
  bool symmetric = k == Kind::Eq || k == Kind::Ne;
  if (a.is_bool() || b.is_bool()) {
    if (!symmetric || !a.is_bool() || !b.is_bool())
      internal_error(std::string("bool operand to ") + name + ": " + a.str() + ", " + b.str(), __FILE__,
                     __LINE__);
    bool want = k == Kind::Eq;
    if (a.kind() == Kind::BoolConst && b.kind() == Kind::BoolConst)
      return Expr::boolean((a.bool_value() == b.bool_value()) == want);
    if (a == b) return Expr::boolean(want);
    if (a.kind() == Kind::BoolConst) std::swap(a, b);
    if (b.kind() == Kind::BoolConst) return b.bool_value() == want ? a : logical_not(a);
  } else if (a.is_float() || b.is_float()) {
    a = to_float(a);
    b = to_float(b);
    if (a.kind() == Kind::FloatConst && b.kind() == Kind::FloatConst) {
      double x = a.float_value(), y = b.float_value();
      switch (k) {
        case Kind::Eq: return Expr::boolean(x == y);
        case Kind::Ne: return Expr::boolean(x != y);
        case Kind::Lt: return Expr::boolean(x < y);
        default: return Expr::boolean(x <= y);
      }
    }
  } else {
    if (a.kind() == Kind::IntConst && b.kind() == Kind::IntConst) {
      int64_t x = a.int_value(), y = b.int_value();
      switch (k) {
        case Kind::Eq: return Expr::boolean(x == y);
        case Kind::Ne: return Expr::boolean(x != y);
        case Kind::Lt: return Expr::boolean(x < y);
        default: return Expr::boolean(x <= y);
      }
    }
    if (a == b) return Expr::boolean(k == Kind::Eq || k == Kind::Le);
  }
  if (symmetric) {
    // Canonical order: a constant on the right, otherwise the canonical order.
    bool swap = a.is_constant() != b.is_constant() ? a.is_constant() : Expr::compare(a, b) > 0;
    if (swap) std::swap(a, b);
  }
  return make_node(k, Type::Bool, {a, b});
}

Expr andor(Kind k, std::span<const Expr> args) {
  const char* name = k == Kind::And ? "And" : "Or";
  bool absorbing = k == Kind::Or;  // the constant that decides the result
  std::vector<Expr> ops;
  for (Expr a : args) {
    check_bool(a, name);
    auto push = [&](Expr x) {
      if (x.kind() == Kind::BoolConst) {
        if (x.bool_value() == absorbing) ops.assign(1, x);
        return x.bool_value() == absorbing;
      }
      ops.push_back(x);
      return false;
    };
    if (a.kind() == k) {
      for (Expr op : a.operands()) {
        if (push(op)) return Expr::boolean(absorbing);
      }
    } else if (push(a)) {
      return Expr::boolean(absorbing);
    }
  }
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  for (Expr x : ops) {
    // x and Not(x) (or its canonical negation, like a < b and b <= a) decide the result.
    Expr n = logical_not(x);
    if (std::binary_search(ops.begin(), ops.end(), n)) return Expr::boolean(absorbing);
  }
  if (ops.empty()) return Expr::boolean(!absorbing);
  if (ops.size() == 1) return ops[0];
  return make_node(k, Type::Bool, std::move(ops));
}

}  // namespace

Expr eq(Expr a, Expr b) { return compare_op(Kind::Eq, a, b); }
Expr ne(Expr a, Expr b) { return compare_op(Kind::Ne, a, b); }
Expr lt(Expr a, Expr b) { return compare_op(Kind::Lt, a, b); }
Expr le(Expr a, Expr b) { return compare_op(Kind::Le, a, b); }
Expr gt(Expr a, Expr b) { return lt(b, a); }
Expr ge(Expr a, Expr b) { return le(b, a); }

Expr logical_and(std::span<const Expr> args) { return andor(Kind::And, args); }
Expr logical_or(std::span<const Expr> args) { return andor(Kind::Or, args); }
Expr logical_and(Expr a, Expr b) {
  Expr xs[] = {a, b};
  return logical_and(xs);
}
Expr logical_or(Expr a, Expr b) {
  Expr xs[] = {a, b};
  return logical_or(xs);
}

Expr logical_not(Expr a) {
  check_bool(a, "Not");
  switch (a.kind()) {
    case Kind::BoolConst: return Expr::boolean(!a.bool_value());
    case Kind::Not: return a.operands()[0];
    case Kind::Eq: return make_node(Kind::Ne, Type::Bool, {a.operands()[0], a.operands()[1]});
    case Kind::Ne: return make_node(Kind::Eq, Type::Bool, {a.operands()[0], a.operands()[1]});
    case Kind::Lt:
      if (a.operands()[0].is_int()) return le(a.operands()[1], a.operands()[0]);
      break;
    case Kind::Le:
      if (a.operands()[0].is_int()) return lt(a.operands()[1], a.operands()[0]);
      break;
    default: break;
  }
  return make_node(Kind::Not, Type::Bool, {a});
}

}  // namespace toroid::sym
