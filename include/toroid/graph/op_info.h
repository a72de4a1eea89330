// What the graph layer needs to know about operators: which arguments a call mutates, and
// whether it is deterministic. Until operator schemas exist (ops layer), a default provider
// infers this from the overload name; the ops layer installs a schema-backed provider, and
// also a per-call checker that the verifier runs on every call node.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace toroid {

class Node;
struct Diagnostics;

class OpInfoProvider {
 public:
  virtual ~OpInfoProvider() = default;
  // Indices (into node.args()) of the arguments the call writes to. In-place ops ("add_",
  // "__iand__") and copy_ mutate their first argument. out= overloads (overload "out", "out*" or
  // "*_out") write their out keyword arguments instead: see mutated_kwargs.
  virtual std::vector<size_t> mutated_args(const Node& call) const;
  // Names of the keyword arguments the call writes to: for out= overloads, kwargs named "out"
  // or "out" followed by digits ("out0", "out1").
  virtual std::vector<std::string> mutated_kwargs(const Node& call) const;
  // True if the call writes any input or has another effect (so DCE must keep it). The default
  // also counts asserts, prints and sym_constrain_range*. Random ops are not side effects.
  virtual bool has_side_effects(const Node& call) const;
  // Random ops are not deterministic: CSE must not merge two of them.
  virtual bool is_deterministic(const Node& call) const;
  // Checks a call against its schema; reports problems to `diags`. Default: nothing.
  virtual void check_call(const Node& call, Diagnostics& diags) const;
};

// The provider in use (a default name-based one until another is installed).
const OpInfoProvider& op_info();
void set_op_info(std::unique_ptr<OpInfoProvider> provider);

// Name helpers: "aten.add_.Tensor" -> base "add_", overload "Tensor". With two parts
// ("higher_order.cond") the base is the second and the overload is empty; with one part the
// base is the whole name.
std::string op_base_name(const std::string& target);
std::string op_overload_name(const std::string& target);

}  // namespace toroid
