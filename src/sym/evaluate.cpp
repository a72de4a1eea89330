// evaluate(): concrete values of expressions, with Python semantics for // and %, and nullopt
// (never a wrong value) on division by zero, int64 overflow, or an unbound symbol.
#include <cmath>
#include <unordered_map>

#include "node.h"
#include "toroid/support/error.h"

namespace toroid::sym {

namespace {

using detail::checked_add;
using detail::checked_mul;

Scalar make_int(int64_t v) { return Scalar{Type::Int, v, 0.0}; }
Scalar make_float(double v) { return Scalar{Type::Float, 0, v}; }
Scalar make_bool(bool v) { return Scalar{Type::Bool, v ? 1 : 0, 0.0}; }

double as_double(const Scalar& s) { return s.type == Type::Float ? s.f : static_cast<double>(s.i); }

class Evaluator {
 public:
  explicit Evaluator(const std::function<std::optional<Scalar>(Expr)>& binding) : binding_(binding) {}

  std::optional<Scalar> eval(Expr e) {
    if (e.is_constant()) return eval_node(e);
    auto it = memo_.find(e.node());
    if (it != memo_.end()) return it->second;
    auto v = eval_node(e);
    memo_.emplace(e.node(), v);
    return v;
  }

 private:
  std::optional<Scalar> eval_symbol(Expr e) {
    auto v = binding_(e);
    if (!v) return std::nullopt;
    switch (e.symbol().type) {
      case Type::Int:
        if (v->type != Type::Int) return std::nullopt;
        return v;
      case Type::Float: return make_float(as_double(*v));
      case Type::Bool:
        if (v->type == Type::Float) return std::nullopt;
        return make_bool(v->i != 0);
    }
    return std::nullopt;
  }

  std::optional<Scalar> eval_compare(Kind k, const Scalar& a, const Scalar& b) {
    if (a.type != Type::Float && b.type != Type::Float) {
      int64_t x = a.i, y = b.i;
      switch (k) {
        case Kind::Eq: return make_bool(x == y);
        case Kind::Ne: return make_bool(x != y);
        case Kind::Lt: return make_bool(x < y);
        default: return make_bool(x <= y);
      }
    }
    double x = as_double(a), y = as_double(b);
    switch (k) {
      case Kind::Eq: return make_bool(x == y);
      case Kind::Ne: return make_bool(x != y);
      case Kind::Lt: return make_bool(x < y);
      default: return make_bool(x <= y);
    }
  }

  std::optional<Scalar> eval_node(Expr e) {
    switch (e.kind()) {
      case Kind::IntConst: return make_int(e.int_value());
      case Kind::FloatConst: return make_float(e.float_value());
      case Kind::BoolConst: return make_bool(e.bool_value());
      case Kind::Symbol: return eval_symbol(e);
      default: break;
    }
    std::vector<Scalar> vs;
    auto ops = e.operands();
    Kind k = e.kind();
    if (k == Kind::And || k == Kind::Or) {
      // false decides And (true decides Or) even when another operand is undefined.
      bool decider = k == Kind::Or;
      bool undefined = false;
      for (Expr op : ops) {
        auto v = eval(op);
        if (!v) {
          undefined = true;
        } else if ((v->i != 0) == decider) {
          return make_bool(decider);
        }
      }
      if (undefined) return std::nullopt;
      return make_bool(!decider);
    }
    vs.reserve(ops.size());
    for (Expr op : ops) {
      auto v = eval(op);
      if (!v) return std::nullopt;
      vs.push_back(*v);
    }
    bool is_float = e.is_float();
    switch (k) {
      case Kind::Add: {
        if (is_float) {
          double r = as_double(vs[0]);
          for (size_t i = 1; i < vs.size(); ++i) r += as_double(vs[i]);
          return make_float(r);
        }
        int64_t r = 0;
        for (const Scalar& v : vs) {
          auto s = checked_add(r, v.i);
          if (!s) return std::nullopt;
          r = *s;
        }
        return make_int(r);
      }
      case Kind::Mul: {
        if (is_float) {
          double r = as_double(vs[0]);
          for (size_t i = 1; i < vs.size(); ++i) r *= as_double(vs[i]);
          return make_float(r);
        }
        int64_t r = 1;
        for (const Scalar& v : vs) {
          auto s = checked_mul(r, v.i);
          if (!s) return std::nullopt;
          r = *s;
        }
        return make_int(r);
      }
      case Kind::FloorDiv: {
        auto q = py_floordiv(vs[0].i, vs[1].i);
        if (!q) return std::nullopt;
        return make_int(*q);
      }
      case Kind::Mod: {
        auto r = py_mod(vs[0].i, vs[1].i);
        if (!r) return std::nullopt;
        return make_int(*r);
      }
      case Kind::TrueDiv: {
        double d = as_double(vs[1]);
        if (d == 0.0) return std::nullopt;  // Python raises ZeroDivisionError
        return make_float(as_double(vs[0]) / d);
      }
      case Kind::Pow: {
        if (is_float) return make_float(std::pow(as_double(vs[0]), static_cast<double>(e.exponent())));
        auto r = detail::checked_pow(vs[0].i, e.exponent());
        if (!r) return std::nullopt;
        return make_int(*r);
      }
      case Kind::Min:
      case Kind::Max: {
        bool want_min = k == Kind::Min;
        Scalar r = vs[0];
        for (size_t i = 1; i < vs.size(); ++i) {
          bool better = is_float ? (want_min ? as_double(vs[i]) < as_double(r) : as_double(vs[i]) > as_double(r))
                                 : (want_min ? vs[i].i < r.i : vs[i].i > r.i);
          if (better) r = vs[i];
        }
        if (is_float) return make_float(as_double(r));
        return r;
      }
      case Kind::ToFloat: return make_float(as_double(vs[0]));
      case Kind::Eq:
      case Kind::Ne:
      case Kind::Lt:
      case Kind::Le: return eval_compare(k, vs[0], vs[1]);
      case Kind::Not: return make_bool(vs[0].i == 0);
      default: break;
    }
    internal_error(std::string("evaluate: unexpected kind ") + kind_name(k), __FILE__, __LINE__);
  }

  const std::function<std::optional<Scalar>(Expr)>& binding_;
  std::unordered_map<const Node*, std::optional<Scalar>> memo_;
};

}  // namespace

std::optional<Scalar> evaluate(Expr e, const std::function<std::optional<Scalar>(Expr symbol)>& binding) {
  if (e.is_null()) return std::nullopt;
  Evaluator ev(binding);
  return ev.eval(e);
}

}  // namespace toroid::sym
