#include "toroid/ops/user_kernel.h"

#include <optional>
#include <set>
#include <string>

#include "toroid/graph/graph.h"
#include "toroid/graph/verify.h"

namespace toroid::ops {

namespace {

bool int_scalar(const Argument& a) {
  return (a.is_scalar() && !a.scalar().is_null() && a.scalar().is_int()) ||
         (a.is_value() && a.value() != nullptr && a.value()->type() == ValueType::Int);
}

// "f32[8, s0]".
std::string type_of(const Value* v) {
  std::string s = std::string(dtype_short_name(v->meta().dtype)) + "[";
  for (size_t i = 0; i < v->meta().sizes.size(); ++i) s += (i ? ", " : "") + v->meta().sizes[i].str();
  return s + "]";
}

// A kwarg that must be a list of integer constants in [0, n), each once (`writes`,
// `tensors_to_clone`); their values, or none after reporting.
std::optional<std::vector<int64_t>> index_list(const Node& n, const Argument& a, const char* name, size_t limit, Diagnostics& d) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  if (!a.is_list()) {
    d.error(&n, std::string(name) + " of " + n.target() + " must be a list of tensor positions, got " + describe_argument(a));
    return std::nullopt;
  }
  for (const Argument& e : a.list()) {
    if (!e.is_scalar() || !e.scalar().is_constant() || !e.scalar().is_int()) {
      d.error(&n, std::string(name) + " of " + n.target() + " must hold integer constants, got " + describe_argument(e));
      return std::nullopt;
    }
    int64_t i = e.scalar().int_value();
    if (i < 0 || static_cast<size_t>(i) >= limit) {
      d.error(&n, std::string(name) + " of " + n.target() + " names tensor " + std::to_string(i) + " but the call passes " +
                      std::to_string(limit));
      return std::nullopt;
    }
    if (!seen.insert(i).second) {
      d.error(&n, std::string(name) + " of " + n.target() + " names tensor " + std::to_string(i) + " twice");
      return std::nullopt;
    }
    out.push_back(i);
  }
  return out;
}

void check_user_kernel(const Node& n, Diagnostics& d) {
  bool functional = n.target() == kUserKernelFunctional;
  const std::string& op = n.target();
  if (n.args().size() != 3 || n.args()[0].kind() != Argument::Kind::String || n.args()[0].str().empty() ||
      !n.args()[1].is_list() || !n.args()[2].is_list()) {
    d.error(&n, op + " takes a kernel name, a list of tensors and a list of scalars");
    return;
  }
  std::vector<const Value*> tensors;
  for (const Argument& t : n.args()[1].list()) {
    if (!t.is_value() || t.value() == nullptr || !t.value()->is_tensor()) {
      d.error(&n, "the tensors of " + op + " must be tensor values, got " + describe_argument(t));
      return;
    }
    tensors.push_back(t.value());
  }
  for (const Argument& s : n.args()[2].list())
    if (!s.is_scalar() && !(s.is_value() && s.value() != nullptr && !s.value()->is_tensor()))
      d.error(&n, "the scalars of " + op + " must be numbers, symbols or scalar values, got " + describe_argument(s));
  // Keyword arguments: which are allowed, which are needed.
  const std::set<std::string> allowed = {"kind", "source", "entry", "grid", "block",
                                         functional ? "tensors_to_clone" : "writes"};
  for (const Kwarg& k : n.kwargs())
    if (!allowed.count(k.name)) d.error(&n, "unknown keyword argument '" + k.name + "' for " + op);
  const Argument* kind = n.kwarg("kind");
  std::string kind_name = kind && kind->kind() == Argument::Kind::String ? kind->str() : "";
  if (kind_name != "cuda" && kind_name != "ptx" && kind_name != "cubin" && kind_name != "cpp")
    d.error(&n, op + " needs kind=\"cuda\", \"ptx\", \"cubin\" or \"cpp\"" +
                    (kind ? ", got " + describe_argument(*kind) : std::string()));
  for (const char* s : {"source", "entry"}) {
    const Argument* a = n.kwarg(s);
    if (a ? a->kind() != Argument::Kind::String : std::string(s) == "source")
      d.error(&n, op + " needs " + s + "= as a string" + (a ? ", got " + describe_argument(*a) : std::string()));
  }
  for (const char* dims : {"grid", "block"}) {
    const Argument* a = n.kwarg(dims);
    if (!a) {
      if (kind_name != "cpp" || std::string(dims) == "grid") d.error(&n, op + " needs " + dims + "=[...]");
      continue;
    }
    if (!a->is_list() || a->list().empty() || a->list().size() > 3) {
      d.error(&n, std::string(dims) + " of " + op + " must list 1 to 3 integer expressions, got " + describe_argument(*a));
      continue;
    }
    for (const Argument& e : a->list())
      if (!int_scalar(e)) d.error(&n, std::string(dims) + " of " + op + " must hold integers, got " + describe_argument(e));
  }
  const char* which = functional ? "tensors_to_clone" : "writes";
  const Argument* list = n.kwarg(which);
  if (!list) {
    d.error(&n, op + " needs " + which + "=[...] (the positions of the tensors the kernel writes)");
    return;
  }
  std::optional<std::vector<int64_t>> listed = index_list(n, *list, which, tensors.size(), d);
  if (!listed) return;
  const std::vector<int64_t>& picked = *listed;
  if (!functional) {
    if (n.num_results() != 0) d.error(&n, op + " writes its tensors in place and has no results");
    return;
  }
  if (n.num_results() != picked.size()) {
    d.error(&n, op + " returns one clone per tensors_to_clone entry (" + std::to_string(picked.size()) + "), not " +
                    std::to_string(n.num_results()));
    return;
  }
  for (size_t r = 0; r < picked.size(); ++r) {
    const Value* res = n.result(r);
    const Value* of = tensors[static_cast<size_t>(picked[r])];
    if (!res->is_tensor() || res->meta().dtype != of->meta().dtype || res->meta().sizes != of->meta().sizes)
      d.error(&n, "result " + std::to_string(r) + " of " + op + " (" + describe_value(res) + ": " +
                      (res->is_tensor() ? type_of(res) : std::string("a scalar")) + ") is not a clone of tensor " +
                      std::to_string(picked[r]) + " (" + describe_value(of) + ": " + type_of(of) + ")");
  }
}

}  // namespace

void register_user_kernel_checks() {
  register_subgraph_checker(kUserKernelMutation, check_user_kernel);
  register_subgraph_checker(kUserKernelFunctional, check_user_kernel);
}

}  // namespace toroid::ops
