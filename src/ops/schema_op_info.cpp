// The schema-backed OpInfoProvider: which arguments a call mutates (from Tensor(a!)
// annotations), and the verifier's per-call check of arguments and results against the schema.
#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/verify.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/registry.h"
#include "toroid/ops/user_kernel.h"

namespace toroid::ops {
namespace {

bool registered_namespace(const std::string& target) {
  return target.rfind("aten.", 0) == 0 || target.rfind("prims.", 0) == 0;
}


// The scalar type of an argument that is a scalar constant or a scalar value.
std::optional<ValueType> scalar_type(const Argument& a) {
  if (a.is_scalar()) {
    SymExpr e = a.scalar();
    return e.is_bool() ? ValueType::Bool : e.is_float() ? ValueType::Float : ValueType::Int;
  }
  if (a.is_value() && !a.value()->is_tensor()) return a.value()->type();
  return std::nullopt;
}

bool matches_element(SchemaType::Base base, const Argument& a) {
  using B = SchemaType::Base;
  std::optional<ValueType> st = scalar_type(a);
  switch (base) {
    // ATen wraps a Python number passed for a Tensor into a 0-dim tensor (aten.mul.Tensor(x, 0.5)
    // is common in FX graphs), so scalars are accepted for Tensor arguments.
    case B::Tensor: return (a.is_value() && a.value()->is_tensor()) || st.has_value();
    case B::Int:
    case B::SymInt: return st == ValueType::Int;
    case B::Float:
    case B::SymFloat: return st == ValueType::Float || st == ValueType::Int;
    case B::Bool:
    case B::SymBool: return st == ValueType::Bool;
    case B::Scalar: return st.has_value();
    case B::Str: return a.kind() == Argument::Kind::String;
    case B::ScalarType: return a.kind() == Argument::Kind::DType;
    case B::Layout: return a.kind() == Argument::Kind::Layout;
    case B::Device: return a.kind() == Argument::Kind::Device;
    case B::MemoryFormat: return a.kind() == Argument::Kind::MemoryFormat;
    case B::Complex: return st == ValueType::Float || st == ValueType::Int;
    case B::Generator:
    case B::Dimname:
    case B::Storage:
    case B::Stream: return false;  // toroid graphs carry none of these (only None)
    case B::Any: return true;
  }
  return false;
}

bool matches(const SchemaType& t, const Argument& a) {
  if (a.is_none()) return t.optional;
  if (!t.is_list) return matches_element(t.base, a);
  // int[2] padding=0 style: a single int stands for a list of that int.
  if (!a.is_list()) return (t.base == SchemaType::Base::Int || t.base == SchemaType::Base::SymInt) && matches_element(t.base, a);
  for (const Argument& e : a.list()) {
    if (e.is_none() ? !t.element_optional : !matches_element(t.base, e)) return false;
  }
  return true;
}

bool result_matches(const SchemaType& t, const Value* v) {
  using B = SchemaType::Base;
  switch (t.base) {
    case B::Tensor: return v->is_tensor();
    case B::Int:
    case B::SymInt: return v->type() == ValueType::Int;
    case B::Float:
    case B::SymFloat: return v->type() == ValueType::Float;
    case B::Bool:
    case B::SymBool: return v->type() == ValueType::Bool;
    case B::Scalar: return !v->is_tensor();
    default: return true;
  }
}

class SchemaOpInfo : public OpInfoProvider {
 public:
  std::vector<size_t> mutated_args(const Node& call) const override {
    // A user kernel's mutation form writes (some of) its tensor list.
    if (call.is_call() && call.target() == kUserKernelMutation && call.args().size() > 1) return {1};
    const OpEntry* e = OpRegistry::global().find(call.target());
    if (!e) return OpInfoProvider::mutated_args(call);
    std::vector<size_t> out;
    for (size_t i : e->schema.mutated_arguments())
      if (i < call.args().size()) out.push_back(i);
    return out;
  }

  std::vector<std::string> mutated_kwargs(const Node& call) const override {
    const OpEntry* e = OpRegistry::global().find(call.target());
    if (!e) return OpInfoProvider::mutated_kwargs(call);
    std::vector<std::string> out;
    for (size_t i : e->schema.mutated_arguments())
      if (call.kwarg(e->schema.arguments[i].name)) out.push_back(e->schema.arguments[i].name);
    return out;
  }

  bool has_side_effects(const Node& call) const override {
    const OpEntry* e = OpRegistry::global().find(call.target());
    if (!e) return OpInfoProvider::has_side_effects(call);
    return e->schema.is_mutable() || OpInfoProvider::has_side_effects(call);
  }

  void check_call(const Node& call, Diagnostics& diags) const override {
    const std::string& op = call.target();
    const OpEntry* e = OpRegistry::global().find(op);
    if (!e) {
      if (registered_namespace(op)) diags.error(&call, "unknown operator '" + op + "' (no schema is registered for it)");
      return;
    }
    const OpSchema& s = e->schema;
    size_t errors_before = diags.items.size();
    check_schema(call, s, diags);
    // Re-derive the results only for calls that bind to their schema.
    if (diags.items.size() == errors_before) check_node_meta(call, diags);
  }

 private:
  static void check_schema(const Node& call, const OpSchema& s, Diagnostics& diags) {
    const std::string& op = call.target();
    size_t positional_max = 0;
    while (positional_max < s.arguments.size() && !s.arguments[positional_max].kwarg_only) ++positional_max;
    if (call.args().size() > positional_max) {
      diags.error(&call, op + " takes at most " + std::to_string(positional_max) + " positional arguments but " +
                             std::to_string(call.args().size()) + " were given");
      return;
    }
    std::vector<const Argument*> bound(s.arguments.size(), nullptr);
    for (size_t i = 0; i < call.args().size(); ++i) bound[i] = &call.args()[i];
    for (const Kwarg& k : call.kwargs()) {
      std::optional<size_t> idx = s.argument_index(k.name);
      if (!idx) {
        diags.error(&call, "unknown keyword argument '" + k.name + "' for " + op);
        continue;
      }
      if (bound[*idx]) {
        diags.error(&call, "argument '" + k.name + "' of " + op + " is given twice");
        continue;
      }
      bound[*idx] = &k.value;
    }
    for (size_t i = 0; i < s.arguments.size(); ++i) {
      const SchemaArgument& param = s.arguments[i];
      if (!bound[i]) {
        if (!param.has_default) diags.error(&call, "missing required argument '" + param.name + "' of " + op);
        continue;
      }
      if (!matches(param.type, *bound[i]))
        diags.error(&call, "argument '" + param.name + "' of " + op + " must be " + param.type.str() + ", not " +
                               argument_kind_name(*bound[i]) + " (" + describe_argument(*bound[i]) + ")");
    }
    if (s.returns_list) {
      for (const Value* v : call.results())
        if (!result_matches(s.returns[0].type, v))
          diags.error(&call, "result " + std::to_string(v->index()) + " of " + op + " must be " +
                                 schema_base_name(s.returns[0].type.base) + ", not " + value_type_name(v->type()));
      return;
    }
    if (call.num_results() != s.returns.size()) {
      diags.error(&call, op + " returns " + std::to_string(s.returns.size()) + " result" +
                             (s.returns.size() == 1 ? "" : "s") + " but the node has " +
                             std::to_string(call.num_results()));
      return;
    }
    for (size_t i = 0; i < s.returns.size(); ++i)
      if (!result_matches(s.returns[i].type, call.result(i)))
        diags.error(&call, "result " + std::to_string(i) + " of " + op + " must be " + s.returns[i].type.str() +
                               ", not " + value_type_name(call.result(i)->type()));
  }
};

}  // namespace

std::unique_ptr<OpInfoProvider> make_schema_op_info() { return std::make_unique<SchemaOpInfo>(); }

void install_schema_op_info() {
  set_op_info(make_schema_op_info());
  register_user_kernel_checks();
}

}  // namespace toroid::ops
