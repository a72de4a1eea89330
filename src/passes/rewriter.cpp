#include "rewriter.h"

#include <algorithm>
#include <numeric>

#include "toroid/graph/replace.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::passes {

namespace {

const ops::OpSchema& schema_of(const Node* n) {
  const ops::OpEntry* e = ops::OpRegistry::global().find(n->target());
  if (e == nullptr) TOROID_INTERNAL_ERROR("Rewriter: no schema for " + n->target());
  return e->schema;
}

Argument int_list_arg(const std::vector<int64_t>& v) {
  Argument::List l;
  for (int64_t x : v) l.push_back(Argument::integer(x));
  return Argument(std::move(l));
}

Argument sym_list_arg(const std::vector<SymExpr>& v) {
  Argument::List l;
  for (SymExpr x : v) l.push_back(Argument(x));
  return Argument(std::move(l));
}

}  // namespace

std::vector<int64_t> int_values(const std::vector<SymExpr>& v, bool* ok) {
  std::vector<int64_t> out;
  for (SymExpr e : v) {
    std::optional<int64_t> c = e.is_null() ? std::nullopt : e.as_int();
    if (!c) {
      if (ok) *ok = false;
      return {};
    }
    out.push_back(*c);
  }
  if (ok) *ok = true;
  return out;
}

int64_t wrap_dim(int64_t d, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  return d < 0 ? d + r : d;
}

Rewriter::Rewriter(Graph& g, Node* n)
    : g_(g), node_(n), rep_(Graph::sharing_shape_env(g)), bound_(schema_of(n), n->args(), n->kwargs()) {}

Value* Rewriter::map(Value* v) {
  if (v == nullptr) return nullptr;
  auto it = inputs_.find(v);
  if (it != inputs_.end()) return it->second;
  Value* r;
  if (v->is_tensor()) {
    TensorMeta m = v->meta();
    auto [s, inserted] = storages_.try_emplace(m.storage, nullptr);
    if (inserted) s->second = rep_->new_storage();
    m.storage = s->second;
    r = rep_->add_input(v->name().empty() ? "in" : v->name(), std::move(m));
  } else {
    r = rep_->add_scalar_input(v->name().empty() ? "in" : v->name(), v->type(), v->scalar_value());
  }
  inputs_.emplace(v, r);
  g_args_.push_back(v);
  return r;
}

Value* Rewriter::in(std::string_view name) { return map(bound_.tensor(name)); }

std::optional<double> Rewriter::number(std::string_view name) const {
  SymExpr e = bound_.scalar(name);
  if (e.is_null()) return std::nullopt;
  if (e.kind() == sym::Kind::FloatConst) return e.float_value();
  if (e.kind() == sym::Kind::IntConst) return static_cast<double>(e.int_value());
  if (e.kind() == sym::Kind::BoolConst) return e.bool_value() ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<int64_t> Rewriter::integer(std::string_view name) const {
  SymExpr e = bound_.scalar(name);
  if (e.is_null()) return std::nullopt;
  if (e.kind() == sym::Kind::BoolConst) return e.bool_value() ? 1 : 0;
  return e.as_int();
}

bool Rewriter::flag(std::string_view name, bool dflt) const {
  std::optional<int64_t> v = integer(name);
  return v ? *v != 0 : dflt;
}

Node* Rewriter::call_node(std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs) {
  rep_->set_insertion_point_to_end();
  return ops::build_call(*rep_, std::move(op), std::move(args), std::move(kwargs));
}

Value* Rewriter::call(std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs) {
  return call_node(std::move(op), std::move(args), std::move(kwargs))->result();
}

Device Rewriter::device() const {
  for (Value* v : node_->results())
    if (v->is_tensor()) return v->meta().device;
  return Device::cpu();
}

DType Rewriter::computation_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d;
}

Value* Rewriter::cast(Value* x, DType d) {
  if (x->meta().dtype == d) return x;
  return call("aten._to_copy.default", {Argument(x)}, {Kwarg{"dtype", Argument(d)}});
}

Value* Rewriter::scalar_tensor(double v, DType d) {
  return call("aten.scalar_tensor.default", {Argument::floating(v)},
              {Kwarg{"dtype", Argument(d)}, Kwarg{"device", Argument(device())}});
}

Value* Rewriter::sum(Value* x, const std::vector<int64_t>& dims, bool keepdim) {
  return call("aten.sum.dim_IntList", {Argument(x), int_list_arg(dims), Argument::boolean(keepdim)});
}

Value* Rewriter::amax(Value* x, const std::vector<int64_t>& dims, bool keepdim) {
  return call("aten.amax.default", {Argument(x), int_list_arg(dims), Argument::boolean(keepdim)});
}

Value* Rewriter::reshape(Value* x, std::vector<SymExpr> sizes) {
  return call("aten.reshape.default", {Argument(x), sym_list_arg(sizes)});
}

Value* Rewriter::view(Value* x, std::vector<SymExpr> sizes) {
  return call("aten.view.default", {Argument(x), sym_list_arg(sizes)});
}

Value* Rewriter::unsqueeze(Value* x, int64_t dim) {
  return call("aten.unsqueeze.default", {Argument(x), Argument::integer(dim)});
}

Value* Rewriter::squeeze(Value* x, const std::vector<int64_t>& dims) {
  return call("aten.squeeze.dims", {Argument(x), int_list_arg(dims)});
}

bool Rewriter::same(SymExpr a, SymExpr b) const {
  if (a == b) return true;
  if (a.is_null() || b.is_null()) return false;
  const ShapeEnv& env = g_.shape_env();
  if (env.simplify(a) == env.simplify(b)) return true;
  return env.statically_known_true(sym::eq(a, b));
}

bool Rewriter::same_layout(const TensorMeta& a, const TensorMeta& b) const {
  if (a.dtype != b.dtype || a.rank() != b.rank() || !same(a.offset, b.offset)) return false;
  for (int64_t i = 0; i < a.rank(); ++i)
    if (!same(a.sizes[i], b.sizes[i]) || !same(a.strides[i], b.strides[i])) return false;
  return true;
}

// Brings `v` to `want`'s dtype, sizes and strides with a cast, a reshape, a clone into the
// wanted dimension order, and, for strides that differ only on size-1 dimensions, as_strided.
// Null when the wanted layout is not dense (nothing a fresh tensor could have).
Value* Rewriter::match_layout(Value* v, const TensorMeta& want) {
  if (!v->is_tensor()) return v;
  v = cast(v, want.dtype);
  if (same_layout(v->meta(), want)) return v;
  const ShapeEnv& env = g_.shape_env();
  int64_t rank = want.rank();
  bool same_sizes = v->meta().rank() == rank;
  for (int64_t i = 0; same_sizes && i < rank; ++i) same_sizes = same(v->meta().sizes[i], want.sizes[i]);
  if (!same_sizes) {
    if (!same(v->meta().numel(), want.numel())) return nullptr;
    v = reshape(v, want.sizes);
    if (same_layout(v->meta(), want)) return v;
  }
  if (!want.offset.as_int() || *want.offset.as_int() != 0) return nullptr;
  if (want.is_contiguous()) {
    v = call("aten.clone.default", {Argument(v)}, {Kwarg{"memory_format", Argument(MemoryFormat::Contiguous)}});
  } else {
    // Outermost dimension first: decreasing stride (by hint), ties by position.
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::vector<int64_t> hint(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) {
      std::optional<int64_t> h = env.int_hint(want.strides[static_cast<size_t>(i)]);
      if (!h) return nullptr;
      hint[static_cast<size_t>(i)] = *h;
    }
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return hint[static_cast<size_t>(a)] > hint[static_cast<size_t>(b)];
    });
    std::vector<int64_t> inverse(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) inverse[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    v = call("aten.permute.default", {Argument(v), int_list_arg(perm)});
    v = call("aten.clone.default", {Argument(v)}, {Kwarg{"memory_format", Argument(MemoryFormat::Contiguous)}});
    v = call("aten.permute.default", {Argument(v), int_list_arg(inverse)});
  }
  if (same_layout(v->meta(), want)) return v;
  // Remaining differences must be strides of size-1 dimensions, which address nothing.
  for (int64_t i = 0; i < rank; ++i) {
    size_t k = static_cast<size_t>(i);
    if (!same(v->meta().strides[k], want.strides[k]) && !env.statically_known_true(sym::eq(want.sizes[k], SymExpr::integer(1))))
      return nullptr;
  }
  return call("aten.as_strided.default", {Argument(v), sym_list_arg(want.sizes), sym_list_arg(want.strides)});
}

bool Rewriter::commit(std::vector<Value*> outs) {
  if (outs.size() != node_->num_results()) TOROID_INTERNAL_ERROR("Rewriter::commit: wrong number of results for " + node_->target());
  std::vector<Argument> out_args;
  for (size_t i = 0; i < outs.size(); ++i) {
    Value* want = node_->result(i);
    Value* v = outs[i];
    if (v == nullptr) return false;
    if (want->is_tensor()) {
      v = match_layout(v, want->meta());
      if (v == nullptr) {
        TOROID_LOG("passes", "decompose: cannot give result " + std::to_string(i) + " of " + node_->describe() +
                                 " its strides; keeping the op");
        return false;
      }
    }
    out_args.push_back(Argument(v));
  }
  rep_->set_output(std::move(out_args));
  std::vector<Node*> matched{node_};
  std::vector<Value*> replaced = node_->results();
  TOROID_LOG("passes", "decompose: " + node_->describe());
  replace_by_example(g_, matched, *rep_, g_args_, replaced);
  return true;
}

}  // namespace toroid::passes
