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

}  // namespace

std::optional<UserKernelSource> user_kernel_source(const Node& n) {
  if (n.args().empty() || n.args()[0].kind() != Argument::Kind::String) return std::nullopt;
  const std::string& name = n.args()[0].str();
  auto str = [&](const char* k) {
    const Argument* a = n.kwarg(k);
    return a && a->kind() == Argument::Kind::String ? std::optional<std::string>(a->str()) : std::nullopt;
  };
  if (std::optional<std::string> source = str("source"))
    return UserKernelSource{name, str("kind").value_or(""), *source, str("entry").value_or(name), "", ""};
  if (const UserKernelEntry* e = n.graph()->find_user_kernel(name))
    return UserKernelSource{name, e->kind, e->source, e->entry, e->ttir, e->cubin};
  return std::nullopt;
}

std::vector<size_t> user_kernel_positions(const Node& n, const char* kwarg) {
  std::vector<size_t> out;
  if (const Argument* a = n.kwarg(kwarg); a && a->is_list())
    for (const Argument& e : a->list()) out.push_back(static_cast<size_t>(e.scalar().int_value()));
  return out;
}

std::string in_place_hazard(const Node& n, const Value* v) {
  NodeKind k = v->node()->kind();
  if (k == NodeKind::Input || k == NodeKind::Param) return "it is a graph input (the caller's memory)";
  if (k == NodeKind::Constant) return "it is a constant";
  size_t uses = 0;
  for (const Argument& t : n.args().at(1).list()) uses += t.is_value() && t.value() == v;
  if (uses > 1) return "the call passes it " + std::to_string(uses) + " times";
  for (const Node* u : v->users())
    if (u != &n) return "it is read by another node (" + (u->is_call() ? u->target() : std::string(node_kind_name(u->kind()))) + ")";
  if (!(v->meta().offset == SymExpr::integer(0))) return "it starts at an offset in its memory";
  for (const Node* other : v->node()->graph()->nodes())
    for (const Value* r : other->results())
      if (r != v && r->is_tensor() && r->meta().storage == v->meta().storage)
        return "it shares its memory with " + describe_value(r);
  return "";
}

namespace {

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
  std::set<std::string> allowed = {"kind", "source", "entry", "grid", "block", "writes", "shared", "aligned", "order"};
  if (functional) allowed.insert("tensors_to_clone");
  for (const Kwarg& k : n.kwargs())
    if (!allowed.count(k.name)) d.error(&n, "unknown keyword argument '" + k.name + "' for " + op);
  const Argument* kind = n.kwarg("kind");
  const UserKernelEntry* table = n.graph()->find_user_kernel(n.args()[0].str());
  std::string kind_name = kind && kind->kind() == Argument::Kind::String ? kind->str() : "";
  if (table && (kind || n.kwarg("source") || n.kwarg("entry"))) {
    d.error(&n, "kernel \"" + n.args()[0].str() + "\" is in the graph's kernel table, so " + op +
                    " takes no kind=, source= or entry=");
  } else if (table) {
    kind_name = table->kind;
  } else {
    if (kind_name != "cuda" && kind_name != "ptx" && kind_name != "cubin" && kind_name != "cpp")
      d.error(&n, op + " needs kind=\"cuda\", \"ptx\", \"cubin\" or \"cpp\"" +
                      (kind ? ", got " + describe_argument(*kind) : std::string()) +
                      " (or its name in the graph's kernel table)");
    for (const char* s : {"source", "entry"}) {
      const Argument* a = n.kwarg(s);
      if (a ? a->kind() != Argument::Kind::String : std::string(s) == "source")
        d.error(&n, op + " needs " + s + "= as a string" + (a ? ", got " + describe_argument(*a) : std::string()));
    }
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
  if (const Argument* shared = n.kwarg("shared");
      shared && (!shared->is_scalar() || !shared->scalar().is_constant() || !shared->scalar().is_int() ||
                 shared->scalar().int_value() < 0))
    d.error(&n, "shared of " + op + " must be a byte count (a non-negative integer), got " + describe_argument(*shared));
  if (const Argument* aligned = n.kwarg("aligned")) index_list(n, *aligned, "aligned", tensors.size(), d);
  // The kernel's parameters as positions in the call's tensors-then-scalars list: each once.
  if (const Argument* order = n.kwarg("order")) {
    size_t all = tensors.size() + n.args()[2].list().size();
    if (std::optional<std::vector<int64_t>> o = index_list(n, *order, "order", all, d); o && o->size() != all)
      d.error(&n, "order of " + op + " lists " + std::to_string(o->size()) + " parameters but the call passes " +
                      std::to_string(all) + " tensors and scalars");
  }
  // A position list the op needs: its positions, or none after reporting.
  auto required = [&](const char* name, const char* what) -> std::optional<std::vector<int64_t>> {
    const Argument* a = n.kwarg(name);
    if (!a) {
      d.error(&n, op + " needs " + name + "=[...] (" + what + ")");
      return std::nullopt;
    }
    return index_list(n, *a, name, tensors.size(), d);
  };
  std::optional<std::vector<int64_t>> listed = required("writes", "the positions of the tensors the kernel writes");
  if (!listed) return;
  const std::vector<int64_t>& writes = *listed;
  if (!functional) {
    if (n.num_results() != 0) d.error(&n, op + " writes its tensors in place and has no results");
    return;
  }
  std::optional<std::vector<int64_t>> cloned =
      required("tensors_to_clone", "the written tensors whose old value is read later");
  if (!cloned) return;
  for (int64_t c : *cloned)
    if (std::find(writes.begin(), writes.end(), c) == writes.end())
      d.error(&n, "tensors_to_clone of " + op + " names tensor " + std::to_string(c) + ", which writes does not name");
  if (n.num_results() != writes.size()) {
    d.error(&n, op + " returns one tensor per writes entry (" + std::to_string(writes.size()) + "), not " +
                    std::to_string(n.num_results()));
    return;
  }
  for (size_t r = 0; r < writes.size(); ++r) {
    const Value* res = n.result(r);
    const Value* of = tensors[static_cast<size_t>(writes[r])];
    if (!res->is_tensor() || res->meta().dtype != of->meta().dtype || res->meta().sizes != of->meta().sizes ||
        res->meta().strides != of->meta().strides) {
      d.error(&n, "result " + std::to_string(r) + " of " + op + " (" + describe_value(res) + ": " +
                      (res->is_tensor() ? type_of(res) : std::string("a scalar")) + ") does not have the type and strides of tensor " +
                      std::to_string(writes[r]) + " (" + describe_value(of) + ": " + type_of(of) + ")");
      continue;
    }
    if (std::find(cloned->begin(), cloned->end(), writes[r]) != cloned->end()) continue;
    // Written in place: nothing may read the old value after the kernel, so it may have no other
    // reader at all (a reader before it could be computed later), and must be memory the graph owns.
    if (std::string why = in_place_hazard(n, of); !why.empty())
      d.error(&n, "tensor " + std::to_string(writes[r]) + " (" + describe_value(of) + ") is written in place (not in "
                  "tensors_to_clone) but " + why);
  }
}

}  // namespace

void register_user_kernel_checks() {
  register_subgraph_checker(kUserKernelMutation, check_user_kernel);
  register_subgraph_checker(kUserKernelFunctional, check_user_kernel);
}

}  // namespace toroid::ops
