// The operator registry: every overload toroid knows, built from its ATen schema string.
// The 193 Core ATen overloads come from data/core_aten_ops.tsv (src/ops/core_schemas.inc);
// common non-core overloads from src/ops/extra_schemas.inc.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "toroid/graph/op_info.h"
#include "toroid/ops/impl.h"
#include "toroid/ops/schema.h"

namespace toroid::ops {

struct OpEntry {
  std::string name;  // "aten.add.Tensor"
  OpSchema schema;
  // For core ops, how Inductor treats it: "decomposed", "lowered" or "fallback"; "extra" for
  // the non-core overloads.
  std::string treatment;
  bool core = false;
  MetaFn meta = nullptr;      // null until the op's family implements it
  KernelFn kernel = nullptr;  // reference kernel; null until implemented
  // Whether its meta and kernel take complex tensors (fft, casts, views); for the others a
  // complex tensor or dtype argument is a UserError (check_complex_args).
  bool complex = false;
};

// UserError "<op>: complex tensors are not supported ..." when `e` does not take complex
// tensors and a tensor or dtype argument is complex.
void check_complex_args(const OpEntry& e, const std::vector<Argument>& args, const std::vector<Kwarg>& kwargs);
void check_complex_args(const OpEntry& e, const RtArgs& args);
// Calls e's reference kernel after check_complex_args (InternalError if it has none). Every
// caller of kernels goes through here, so no kernel sees a complex tensor it cannot handle.
std::vector<RtValue> run_kernel(const OpEntry& e, const RtArgs& args, KernelContext& ctx);

// How a call's graph arguments become run-time values. Scalar expressions and values depend on
// the caller (the interpreter's environment, the executor's buffers, constant nodes); attribute
// constants and lists are converted the same way everywhere. A callback may throw, or return
// nullopt to give up.
struct ArgumentEvaluator {
  std::function<std::optional<RtValue>(SymExpr)> scalar;
  std::function<std::optional<RtValue>(const Value*)> value;
};
std::optional<RtValue> evaluate_argument(const Argument& a, const ArgumentEvaluator& ev);
// The graph argument bound to each of e's schema arguments, in schema order: the call's positional
// or keyword argument, or the schema's default. UserErrors from binding name the op and argument.
std::vector<const Argument*> bound_arguments(const OpEntry& e, const Node& call);
// The call's arguments bound to e's schema (defaults filled in) and evaluated; nullopt when a
// callback gave up.
std::optional<RtArgs> evaluate_call_args(const OpEntry& e, const Node& call, const ArgumentEvaluator& ev);

class OpRegistry {
 public:
  // The registry of every known overload (built once, thread-safe).
  static const OpRegistry& global();
  const OpEntry* find(std::string_view qualified_name) const;  // "aten.add.Tensor"
  std::span<const OpEntry> entries() const { return entries_; }

 private:
  OpRegistry();
  std::vector<OpEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// An OpInfoProvider backed by the schemas: mutation from alias annotations, and a check of
// every call's arguments and results against its schema (run by the verifier). Operators of
// the aten and prims namespaces must be registered; other namespaces (higher_order, user
// kernels) are left to their own checks.
std::unique_ptr<OpInfoProvider> make_schema_op_info();
// Installs it as toroid::op_info().
void install_schema_op_info();

}  // namespace toroid::ops
