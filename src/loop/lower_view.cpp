// Lowerings of the view ops as index functions, so that a view of a value that is not in memory
// (an inlined pointwise value) reads it without realizing it. A view of a realized buffer needs
// no function: its meta's strides and offset address the storage directly.
#include <algorithm>

#include "lowering.h"

namespace toroid::loop {
namespace {

using ops::BoundArgs;

int64_t const_dim(Lowering& L, const Node* n, SymExpr d, int64_t rank) {
  std::optional<int64_t> v = d.as_int();
  if (!v) L.fail(n, "symbolic dim " + d.str());
  int64_t w = *v < 0 ? *v + rank : *v;
  if (w < 0 || w >= std::max<int64_t>(rank, 1)) L.fail(n, "dim " + std::to_string(*v) + " out of range");
  return w;
}

// Defines the result as a view through fn when it shares the input's storage, else (reshape of
// a non-viewable input) as a pointwise copy with the same index function.
void view_or_copy(Lowering& L, const Node* n, const Value* base, IndexFn fn) {
  const Value* r = n->result(0);
  if (r->meta().storage == base->meta().storage) {
    L.define_view(r, base, std::move(fn));
    return;
  }
  Index idx = Lowering::vars(r->meta().sizes.size());
  L.define_pointwise(r, L.load(base, fn(idx)));
}

void permute(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  int64_t rank = base->meta().rank();
  std::vector<int64_t> perm;
  for (SymExpr d : a.int_list("dims")) perm.push_back(const_dim(L, n, d, rank));
  view_or_copy(L, n, base, [perm](std::span<const SymExpr> idx) {
    Index out(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) out[static_cast<size_t>(perm[k])] = idx[k];
    return out;
  });
}

void swap_dims(Lowering& L, const Node* n, const Value* base, int64_t d0, int64_t d1) {
  view_or_copy(L, n, base, [d0, d1](std::span<const SymExpr> idx) {
    Index out(idx.begin(), idx.end());
    if (!out.empty()) std::swap(out[static_cast<size_t>(d0)], out[static_cast<size_t>(d1)]);
    return out;
  });
}

void transpose(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  int64_t rank = base->meta().rank();
  swap_dims(L, n, base, const_dim(L, n, a.scalar("dim0"), rank), const_dim(L, n, a.scalar("dim1"), rank));
}

void t(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  int64_t rank = base->meta().rank();
  swap_dims(L, n, base, 0, rank < 2 ? 0 : 1);
}

void alias(Lowering& L, const Node* n, const BoundArgs& a) {
  view_or_copy(L, n, a.tensor("self"), [](std::span<const SymExpr> idx) { return Index(idx.begin(), idx.end()); });
}

void unsqueeze(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  int64_t d = const_dim(L, n, a.scalar("dim"), base->meta().rank() + 1);
  view_or_copy(L, n, base, [d](std::span<const SymExpr> idx) {
    Index out(idx.begin(), idx.end());
    out.erase(out.begin() + d);
    return out;
  });
}

// squeeze: the result keeps the base's dims except removed size-1 ones, which read index 0.
// With `dims` (squeeze.dim, squeeze.dims) exactly those of them whose size is 1 go; without
// (squeeze.default, or a size-1 dim whose size is symbolic), the base's dims are matched
// greedily against the result's.
void squeeze_generic(Lowering& L, const Node* n, const Value* base, const std::vector<int64_t>* dims) {
  const std::vector<SymExpr>& in = base->meta().sizes;
  const std::vector<SymExpr>& out = n->result(0)->meta().sizes;
  std::vector<int> keep(in.size(), -1);
  size_t k = 0;
  auto is_one = [&](size_t d) { return in[d].as_int() == std::optional<int64_t>(1); };
  size_t named_ones = 0;
  if (dims)
    for (size_t d = 0; d < in.size(); ++d)
      named_ones += is_one(d) && std::find(dims->begin(), dims->end(), static_cast<int64_t>(d)) != dims->end();
  if (dims && in.size() - named_ones == out.size()) {
    for (size_t d = 0; d < in.size(); ++d)
      if (!is_one(d) || std::find(dims->begin(), dims->end(), static_cast<int64_t>(d)) == dims->end())
        keep[d] = static_cast<int>(k++);
  } else {
    // Match greedily: a base dim is kept when it lines up with the next result dim.
    size_t removable = in.size() - out.size();
    for (size_t d = 0; d < in.size(); ++d) {
      if (is_one(d) && removable > 0 && (k >= out.size() || out[k] != in[d] || in.size() - d > out.size() - k)) {
        --removable;
        continue;
      }
      keep[d] = static_cast<int>(k++);
    }
  }
  if (k != out.size()) L.fail(n, "cannot match squeeze dims");
  view_or_copy(L, n, base, [keep](std::span<const SymExpr> idx) {
    Index r;
    for (int k2 : keep) r.push_back(k2 < 0 ? SymExpr::integer(0) : idx[static_cast<size_t>(k2)]);
    return r;
  });
}

void squeeze(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* self = a.tensor("self");
  int64_t rank = self->meta().rank();
  if (n->target() == "aten.squeeze.default" || rank == 0) {
    squeeze_generic(L, n, self, nullptr);
    return;
  }
  std::vector<int64_t> dims;
  if (n->target() == "aten.squeeze.dim") dims.push_back(const_dim(L, n, a.scalar("dim"), rank));
  else
    for (SymExpr d : a.int_list("dim")) dims.push_back(const_dim(L, n, d, rank));
  squeeze_generic(L, n, self, &dims);
}

void expand(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  std::vector<SymExpr> out = n->result(0)->meta().sizes;
  TensorMeta m = base->meta();
  view_or_copy(L, n, base, [m, out](std::span<const SymExpr> idx) { return Lowering::broadcast_index(m, out, idx); });
}

void slice(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  const TensorMeta& m = base->meta();
  const TensorMeta& r = n->result(0)->meta();
  int64_t d = const_dim(L, n, a.scalar("dim"), m.rank());
  SymExpr step = a.scalar("step");
  // The start is where the view begins: (r.offset - m.offset) / stride, from the metas, which
  // already clamped it.
  SymExpr stride = m.strides[static_cast<size_t>(d)];
  SymExpr start;
  if (stride.as_int() == std::optional<int64_t>(0) || r.sizes[static_cast<size_t>(d)].as_int() == std::optional<int64_t>(0)) {
    start = SymExpr::integer(0);
  } else {
    start = L.graph.shape_env().simplify(sym::floordiv(r.offset - m.offset, stride));
  }
  view_or_copy(L, n, base, [d, start, step](std::span<const SymExpr> idx) {
    Index out(idx.begin(), idx.end());
    out[static_cast<size_t>(d)] = start + idx[static_cast<size_t>(d)] * step;
    return out;
  });
}

void select(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  const TensorMeta& m = base->meta();
  int64_t d = const_dim(L, n, a.scalar("dim"), m.rank());
  SymExpr i = a.scalar("index");
  SymExpr size = m.sizes[static_cast<size_t>(d)];
  // A negative constant index counts from the end (the meta checked the range).
  if (i.as_int() && *i.as_int() < 0) i = size + i;
  view_or_copy(L, n, base, [d, i](std::span<const SymExpr> idx) {
    Index out(idx.begin(), idx.end());
    out.insert(out.begin() + d, i);
    return out;
  });
}

// view/reshape: element idx is the base's element at the same row-major position.
void reshape(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* base = a.tensor("self");
  std::vector<SymExpr> in = base->meta().sizes;
  std::vector<SymExpr> out = n->result(0)->meta().sizes;
  if (in == out) return alias(L, n, a);
  ShapeEnv* env = &L.graph.shape_env();
  view_or_copy(L, n, base, [in, out, env](std::span<const SymExpr> idx) {
    std::vector<SymExpr> ostrides = contiguous_strides(out), istrides = contiguous_strides(in);
    SymExpr linear = position(ostrides, SymExpr::integer(0), idx);
    Index r;
    for (size_t d = 0; d < in.size(); ++d) {
      SymExpr q = sym::floordiv(linear, istrides[d]);
      r.push_back(env->simplify(d == 0 ? q : sym::mod(q, in[d])));
    }
    return r;
  });
}

// slice_scatter: `self` with the slice [start:end:step] of dim `dim` replaced by `src`, as one
// pointwise value (the inverse of slice's index function): positions the slice holds read src,
// the others self. A symbolic start, step or slice length keeps the reference kernel.
void slice_scatter(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* self = a.tensor("self");
  const Value* src = a.tensor("src");
  const TensorMeta& m = self->meta();
  int64_t d = const_dim(L, n, a.scalar("dim"), m.rank());
  std::optional<int64_t> step = a.scalar("step").as_int();
  SymExpr size = m.sizes[static_cast<size_t>(d)];
  std::optional<int64_t> start = a.is_none("start") ? std::optional<int64_t>(0) : a.scalar("start").as_int();
  if (!step || !start) {
    L.fallback(n, "a symbolic start or step");
    return;
  }
  SymExpr first = SymExpr::integer(*start);
  if (*start < 0) first = sym::max(size + *start, SymExpr::integer(0));  // from the end, as the meta clamps it
  else if (std::optional<int64_t> s = size.as_int(); s && *start > *s) first = size;
  SymExpr count = src->meta().sizes[static_cast<size_t>(d)];
  Index idx = Lowering::vars(m.sizes.size());
  std::optional<int64_t> known = count.as_int();
  if (known == std::optional<int64_t>(0) || src->meta().numel().as_int() == std::optional<int64_t>(0)) {
    L.define_pointwise(n->result(0), L.load(self, idx));  // an empty slice: nothing of src to read
    return;
  }
  if (!known) {  // src's reads are clamped into it, which needs it non-empty
    L.fallback(n, "a slice of symbolic length");
    return;
  }
  SymExpr offset = idx[static_cast<size_t>(d)] - first;  // = k * step for the slice's k-th element
  SymExpr k = sym::floordiv(offset, *step);
  Expr zero = int_constant(0, DType::Int64);
  Expr inside = binary(Op::LogicalAnd, binary(Op::Ge, index_value(offset), zero),
                       binary(Op::LogicalAnd, binary(Op::Eq, index_value(sym::mod(offset, *step)), zero),
                              binary(Op::Lt, index_value(k), cast(index_value(count), DType::Int64))));
  Index from(idx.begin(), idx.end());  // clamped: a position outside the slice never reads src
  from[static_cast<size_t>(d)] = sym::max(sym::min(k, count - 1), SymExpr::integer(0));
  L.define_pointwise(n->result(0), where(inside, L.load(src, from), L.load(self, idx)));
}

constexpr LowerRule kRules[] = {
    {"aten.slice_scatter.default", slice_scatter},
    {"aten.permute.default", permute},     {"aten.transpose.int", transpose},
    {"aten.t.default", t},                 {"aten.alias.default", alias},
    {"aten.detach.default", alias},        {"aten.unsqueeze.default", unsqueeze},
    {"aten.squeeze.dim", squeeze},         {"aten.squeeze.dims", squeeze},
    {"aten.squeeze.default", squeeze},     {"aten.expand.default", expand},
    {"aten.slice.Tensor", slice},          {"aten.select.int", select},
    {"aten.view.default", reshape},        {"aten._unsafe_view.default", reshape},
    {"aten.reshape.default", reshape},
};

}  // namespace

std::span<const LowerRule> view_rules() { return kRules; }

}  // namespace toroid::loop
