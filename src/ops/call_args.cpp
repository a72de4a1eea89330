// Evaluating a graph call's arguments into a kernel's RtArgs, shared by the reference
// interpreter, constant folding and the compiled executor's fallback calls.
#include "toroid/ops/registry.h"

namespace toroid::ops {

RtValue rt_scalar(const sym::Scalar& s) {
  if (s.type == sym::Type::Float) return RtValue::floating(s.f);
  if (s.type == sym::Type::Bool) return RtValue::boolean(s.i != 0);
  return RtValue::integer(s.i);
}

std::optional<RtValue> evaluate_argument(const Argument& a, const ArgumentEvaluator& ev) {
  switch (a.kind()) {
    case Argument::Kind::None: return RtValue();
    case Argument::Kind::Scalar: return ev.scalar(a.scalar());
    case Argument::Kind::String: return RtValue::string(a.str());
    case Argument::Kind::DType: return RtValue(a.dtype());
    case Argument::Kind::Device: return RtValue(a.device());
    case Argument::Kind::Layout: return RtValue(a.layout());
    case Argument::Kind::MemoryFormat: return RtValue(a.memory_format());
    case Argument::Kind::Value: return ev.value(a.value());
    case Argument::Kind::List: {
      RtValue::List l;
      for (const Argument& e : a.list()) {
        std::optional<RtValue> x = evaluate_argument(e, ev);
        if (!x) return std::nullopt;
        l.push_back(std::move(*x));
      }
      return RtValue(std::move(l));
    }
  }
  return std::nullopt;
}

std::vector<const Argument*> bound_arguments(const OpEntry& e, const Node& call) {
  std::vector<std::string> kw_names;
  for (const Kwarg& k : call.kwargs()) kw_names.push_back(k.name);
  std::vector<int> where = bind_positions(e.schema, call.args().size(), kw_names);
  std::vector<const Argument*> out;
  for (size_t i = 0; i < where.size(); ++i)
    out.push_back(where[i] >= 0    ? &call.args()[static_cast<size_t>(where[i])]
                  : where[i] <= -2 ? &call.kwargs()[static_cast<size_t>(-where[i] - 2)].value
                                   : &e.schema.arguments[i].default_value);
  return out;
}

std::optional<RtArgs> evaluate_call_args(const OpEntry& e, const Node& call, const ArgumentEvaluator& ev) {
  std::vector<RtValue> values;
  for (const Argument* a : bound_arguments(e, call)) {
    std::optional<RtValue> v = evaluate_argument(*a, ev);
    if (!v) return std::nullopt;
    values.push_back(std::move(*v));
  }
  return RtArgs(e.schema, std::move(values));
}

}  // namespace toroid::ops
