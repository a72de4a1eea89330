// Binding symbols from concrete inputs and results, and checking ranges, divisors and guards.
#include <cmath>
#include <sstream>

#include "toroid/bind/binding.h"
#include "toroid/bind/inputs.h"
#include "toroid/ops/meta.h"

namespace toroid::bind {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string exprs_str(const std::vector<SymExpr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

std::string scalar_str(const sym::Scalar& s) {
  switch (s.type) {
    case sym::Type::Int: return std::to_string(s.i);
    case sym::Type::Bool: return s.i ? "true" : "false";
    case sym::Type::Float: {
      std::ostringstream os;
      os.precision(17);
      os << s.f;
      return os.str();
    }
  }
  return "?";
}

std::optional<int64_t> eval_int(const ShapeEnv& env, SymExpr e, const sym::Binding& b) {
  if (auto c = e.as_int()) return c;
  std::optional<sym::Scalar> s = env.evaluate(e, b);
  if (!s || s->type != sym::Type::Int) return std::nullopt;
  return s->i;
}

namespace {
// "(s0 = 3, s1 = 4)" for the expression's bound symbols; empty when it has none.
std::string symbol_values(SymExpr e, const sym::Binding& b) {
  std::string s;
  for (SymExpr sym : e.free_symbols()) {
    auto it = b.find(sym);
    s += (s.empty() ? "" : ", ") + sym.str() + " = " + (it == b.end() ? std::string("?") : scalar_str(it->second));
  }
  return s.empty() ? s : "(" + s + ")";
}
}  // namespace

std::string explain(SymExpr e, int64_t value, const sym::Binding& b) {
  if (!e.has_symbols()) return e.str();
  if (e.is_symbol()) return e.str() + " = " + std::to_string(value);
  return e.str() + " = " + std::to_string(value) + " " + symbol_values(e, b);
}

void check_bound_guards(const ShapeEnv& env, const sym::Binding& b, SymExpr only_mentioning) {
  for (const sym::Guard& g : env.guards()) {
    std::vector<SymExpr> syms = g.condition.free_symbols();
    bool relevant = only_mentioning.is_null();
    bool all_bound = true;
    for (SymExpr s : syms) {
      if (s == only_mentioning) relevant = true;
      if (!b.count(s)) all_bound = false;
    }
    if (!relevant || !all_bound) continue;
    std::optional<sym::Scalar> v = env.evaluate(g.condition, b);
    if (!v || v->i == 0) {
      std::string why = v ? "" : " (it cannot be evaluated)";
      user_error("guard " + g.condition.str() + " failed " + symbol_values(g.condition, b) + why, g.loc);
    }
  }
}

void bind_symbol(const ShapeEnv& env, sym::Binding& b, SymExpr symbol, sym::Scalar value, const std::string& where,
                 const SourceLoc& loc) {
  const sym::SymbolInfo* info = env.info(symbol);
  if (info != nullptr && value.type == sym::Type::Int) {
    if (!info->range.contains(value.i))
      user_error(symbol.str() + " = " + std::to_string(value.i) + " (" + where + ") is outside its range " +
                     info->range.str(),
                 loc);
    if (info->divisor > 1 && value.i % info->divisor != 0)
      user_error(symbol.str() + " = " + std::to_string(value.i) + " (" + where + ") is not a multiple of " +
                     std::to_string(info->divisor),
                 loc);
  }
  b[symbol] = value;
  check_bound_guards(env, b, symbol);
}

namespace {

const char* kind_text(const ops::RtValue& v) {
  switch (v.kind()) {
    case ops::RtValue::Kind::None: return "None";
    case ops::RtValue::Kind::Tensor: return "a tensor";
    case ops::RtValue::Kind::Int: return "an int";
    case ops::RtValue::Kind::Float: return "a float";
    case ops::RtValue::Kind::Bool: return "a bool";
    case ops::RtValue::Kind::List: return "a list";
    default: return "a constant";
  }
}

bool scalar_kind_ok(ValueType t, const ops::RtValue& x) {
  switch (t) {
    case ValueType::Int: return x.kind() == ops::RtValue::Kind::Int;
    case ValueType::Float: return x.kind() == ops::RtValue::Kind::Float || x.kind() == ops::RtValue::Kind::Int;
    case ValueType::Bool: return x.kind() == ops::RtValue::Kind::Bool;
    case ValueType::Tensor: return false;
  }
  return false;
}

sym::Scalar to_scalar(ValueType t, const ops::RtValue& x) {
  sym::Scalar s;
  if (t == ValueType::Float) {
    s.type = sym::Type::Float;
    s.f = x.to_double();
  } else {
    s.type = t == ValueType::Bool ? sym::Type::Bool : sym::Type::Int;
    s.i = x.to_int();
  }
  return s;
}

bool same_scalar(const sym::Scalar& a, const sym::Scalar& b) {
  if (a.type == sym::Type::Float || b.type == sym::Type::Float) {
    double x = a.type == sym::Type::Float ? a.f : static_cast<double>(a.i);
    double y = b.type == sym::Type::Float ? b.f : static_cast<double>(b.i);
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  return a.i == b.i;
}

}  // namespace

void bind_values(const ShapeEnv& env, sym::Binding& b, const std::vector<const Value*>& values,
                 const std::vector<ops::RtValue>& inputs, bool rebind_unbacked, bool check_strides) {
  TOROID_CHECK(values.size() == inputs.size(), "bind_values needs one input per value");
  auto may_bind = [&](SymExpr e) {
    if (e.is_null() || !e.is_symbol()) return false;  // a scalar input without a symbol binds none
    if (!b.count(e)) return true;
    const sym::SymbolInfo* info = env.info(e);
    return rebind_unbacked && info != nullptr && info->unbacked;
  };
  // First every bare symbol, so that expressions over several inputs' symbols can be checked.
  for (size_t i = 0; i < values.size(); ++i) {
    const Value* v = values[i];
    const ops::RtValue& x = inputs[i];
    const SourceLoc& loc = v->node()->loc();
    std::string what = "input " + describe_input(v);
    if (v->is_tensor()) {
      if (!x.is_tensor() || !x.tensor().defined())
        user_error(what + ": expected a tensor " + ops::describe_meta(v->meta()) + ", got " + kind_text(x), loc);
      const TensorMeta& m = v->meta();
      const ops::HostTensor& t = x.tensor();
      if (t.dtype() != m.dtype)
        user_error(what + ": dtype is " + dtype_short_name(t.dtype()) + " but the graph expects " +
                       dtype_short_name(m.dtype),
                   loc);
      if (t.dim() != m.rank())
        user_error(what + ": has " + std::to_string(t.dim()) + " dims " + ints_str(t.sizes()) +
                       " but the graph expects " + std::to_string(m.rank()) + " " + exprs_str(m.sizes),
                   loc);
      for (size_t d = 0; d < m.sizes.size(); ++d)
        if (may_bind(m.sizes[d]))
          bind_symbol(env, b, m.sizes[d], sym::Scalar{sym::Type::Int, t.sizes()[d], 0},
                      "size " + std::to_string(d) + " of " + what, loc);
    } else {
      if (!scalar_kind_ok(v->type(), x))
        user_error(what + ": expected " + value_type_name(v->type()) + ", got " + kind_text(x), loc);
      if (may_bind(v->scalar_value())) bind_symbol(env, b, v->scalar_value(), to_scalar(v->type(), x), what, loc);
    }
  }
  // Then check everything else (and bind symbols that only strides determine).
  for (size_t i = 0; i < values.size(); ++i) {
    const Value* v = values[i];
    const ops::RtValue& x = inputs[i];
    const SourceLoc& loc = v->node()->loc();
    std::string what = "input " + describe_input(v);
    if (!v->is_tensor()) {
      SymExpr e = v->scalar_value();
      if (e.is_null()) continue;
      std::optional<sym::Scalar> want = env.evaluate(e, b);
      sym::Scalar got = to_scalar(v->type(), x);
      if (!want)
        user_error(what + ": the graph's value " + e.str() + " has unbound symbols", loc);
      if (!same_scalar(*want, got))
        user_error(what + ": is " + scalar_str(got) + " but the graph expects " + e.str() + " = " + scalar_str(*want) +
                       " " + symbol_values(e, b),
                   loc);
      continue;
    }
    const TensorMeta& m = v->meta();
    const ops::HostTensor& t = x.tensor();
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      std::optional<int64_t> want = eval_int(env, m.sizes[d], b);
      if (!want)
        user_error(what + ": size " + std::to_string(d) + " is " + std::to_string(t.sizes()[d]) +
                       " but the graph's size " + m.sizes[d].str() + " has unbound symbols",
                   loc);
      if (*want != t.sizes()[d])
        user_error(what + ": size " + std::to_string(d) + " is " + std::to_string(t.sizes()[d]) +
                       " but the graph expects " + explain(m.sizes[d], *want, b),
                   loc);
    }
    for (size_t d = 0; d < m.strides.size() && check_strides && t.numel() > 0; ++d) {
      if (t.sizes()[d] <= 1) continue;  // the stride of a size-0/1 dim (or of an empty tensor) is never used
      if (may_bind(m.strides[d]))
        bind_symbol(env, b, m.strides[d], sym::Scalar{sym::Type::Int, t.strides()[d], 0},
                    "stride " + std::to_string(d) + " of " + what, loc);
      std::optional<int64_t> want = eval_int(env, m.strides[d], b);
      if (want && *want != t.strides()[d])
        user_error(what + ": stride " + std::to_string(d) + " is " + std::to_string(t.strides()[d]) +
                       " but the graph expects " + explain(m.strides[d], *want, b) + " (strides " +
                       ints_str(t.strides()) + ", expected " + exprs_str(m.strides) + ")",
                   loc);
    }
  }
}

std::string node_what(const Value* v) { return describe_value(v) + " (" + v->node()->target() + ")"; }

void node_error(const Node* n, const std::string& message) {
  if (n->loc().known()) user_error(message, n->loc());
  user_error(message + "; in: " + n->describe());
}


namespace {
sym::Binding bind_all(const Graph& g, const std::vector<ops::RtValue>& inputs, bool check_strides) {
  std::vector<const Value*> values = graph_inputs(g);
  if (values.size() != inputs.size())
    user_error("graph @" + g.name() + " takes " + std::to_string(values.size()) + " inputs (inputs, then params) but " +
               std::to_string(inputs.size()) + " were given");
  sym::Binding b;
  bind_values(g.shape_env(), b, values, inputs, false, check_strides);
  check_bound_guards(g.shape_env(), b);
  return b;
}
}  // namespace

sym::Binding bind_inputs(const Graph& g, const std::vector<ops::RtValue>& inputs) { return bind_all(g, inputs, true); }
sym::Binding bind_input_sizes(const Graph& g, const std::vector<ops::RtValue>& inputs) {
  return bind_all(g, inputs, false);
}

}  // namespace toroid::bind
