// Lowerings of reads at loaded positions (gather, index_select, embedding, index.Tensor) as
// IndirectLoads, as Inductor's indirect indexing: no index tensor is materialized, and a virtual
// operand (log_softmax before nll_loss's gather) is read in place of being stored.
#include "lowering.h"

#include "toroid/support/error.h"

namespace toroid::loop {

namespace {

// Placeholders for the data-dependent dims while a virtual body is rewritten.
SymExpr placeholder(size_t k) { return named_var('g', k); }

bool mentions(SymExpr e, const std::vector<SymExpr>& syms) {
  for (SymExpr s : e.free_symbols())
    for (SymExpr p : syms)
      if (s == p) return true;
  return false;
}

}  // namespace

Expr Lowering::inline_indirect(Expr body, const Index& idx, std::span<const IndirectDim> dims, const Value* v,
                               const Node* site, bool wrap) {
  ShapeEnv& env = graph.shape_env();
  const TensorMeta& m = v->meta();
  std::vector<SymExpr> ps;
  for (size_t k = 0; k < dims.size(); ++k) ps.push_back(placeholder(k));
  Expr e = substitute(body, [&](SymExpr s) -> SymExpr {
    for (size_t k = 0; k < dims.size(); ++k)
      if (s == index_var(dims[k].dim)) return ps[k];
    for (size_t k = 0; k < idx.size(); ++k)
      if (s == index_var(k)) return env.simplify(idx[k]);
    return s;
  });
  // Only loads may depend on the placeholders, and linearly (an index value or a nested
  // indirect read of them is not an address this IR can express).
  bool ok = true;
  visit(e, [&](Expr x) {
    if (x.op() == Op::Index && mentions(x.index(), ps)) ok = false;
    if (x.op() == Op::IndirectLoad) {
      bool uses = mentions(x.index(), ps);
      for (size_t k = 0; k < x.operands().size(); ++k) uses = uses || mentions(x.stride(k), ps) || mentions(x.size(k), ps);
      if (uses) ok = false;
    }
  });
  if (!ok) return Expr();
  int indirect = 0;
  Expr out = replace_loads(e, [&](Expr l) -> Expr {
    SymExpr at = env.simplify(l.index());
    if (!ok || !mentions(at, ps)) return l;
    auto with = [&](size_t one) {
      return env.simplify(sym::substitute(at, [&](SymExpr s) -> SymExpr {
        for (size_t k = 0; k < ps.size(); ++k)
          if (s == ps[k]) return SymExpr::integer(k == one ? 1 : 0);
        return s;
      }));
    };
    SymExpr base = with(ps.size());
    std::vector<IndirectIndex> positions;
    SymExpr rebuilt = base;
    for (size_t k = 0; k < ps.size(); ++k) {
      SymExpr stride = env.simplify(with(k) - base);
      if (mentions(stride, ps)) ok = false;
      rebuilt = rebuilt + stride * ps[k];
      positions.push_back(IndirectIndex{dims[k].pos, stride, m.sizes[dims[k].dim], static_cast<int64_t>(dims[k].dim)});
    }
    if (!ok || env.simplify(rebuilt) != at) {
      ok = false;
      return l;
    }
    ++indirect;
    return indirect_load(l.buffer(), base, positions, site, wrap);
  });
  // With no indirect read left, nothing would check the positions.
  return ok && indirect > 0 ? out : Expr();
}

namespace {

// Positions that are index arithmetic of the result's own variables (torch.roll: (arange(n) +
// shift) fmod n), proven within [0, size) by their ranges, read as a plain load: no check per
// element, no realized operand, and an address whose strides the emitters see.
std::optional<Index> direct_positions(const ShapeEnv& env, const TensorMeta& m, Index idx,
                                      std::span<const Lowering::IndirectDim> dims, const Node* site) {
  sym::FactsFn facts = loop_var_facts(env, site->result(0)->meta().sizes);
  for (const Lowering::IndirectDim& d : dims) {
    SymExpr p = index_arithmetic(d.pos, facts);
    if (!p || sym::bound(p, facts).lo < 0 || sym::bound(sym::simplify(m.sizes[d.dim] - p, facts), facts).lo < 1)
      return std::nullopt;
    idx[d.dim] = p;
  }
  return idx;
}

}  // namespace

Expr Lowering::load_indirect(const Value* v, Index idx, std::span<const IndirectDim> dims, const Node* site, bool wrap) {
  const TensorMeta& m = v->meta();
  TOROID_CHECK(idx.size() == m.sizes.size(), "load_indirect: index rank of " + describe_value(v));
  if (std::optional<Index> direct = direct_positions(graph.shape_env(), m, idx, dims, site)) return load(v, *direct);
  for (const IndirectDim& d : dims) idx[d.dim] = SymExpr::integer(0);
  if (!prog.owners.count(m.storage)) {
    auto it = boxes_.find(v);
    if (it != boxes_.end() && it->second.virtual_buffer)
      if (Expr e = inline_indirect(it->second.virtual_buffer->body, idx, dims, v, site, wrap)) {
        note_inlined(it->second.virtual_buffer);
        return e;
      }
    realize(v);
  }
  Buffer* owner = prog.owners.at(m.storage);
  std::vector<IndirectIndex> positions;
  for (const IndirectDim& d : dims)
    positions.push_back(IndirectIndex{d.pos, m.strides[d.dim], m.sizes[d.dim], static_cast<int64_t>(d.dim)});
  return indirect_load(owner, graph.shape_env().simplify(position(m.strides, m.offset, idx)), positions, site, wrap);
}

namespace {

using ops::BoundArgs;

std::optional<size_t> wrapped_dim(SymExpr dim, size_t rank) {
  std::optional<int64_t> d = dim.as_int();
  if (!d) return std::nullopt;
  int64_t w = *d < 0 ? *d + static_cast<int64_t>(rank) : *d;
  if (w < 0 || w >= static_cast<int64_t>(rank)) return std::nullopt;
  return static_cast<size_t>(w);
}

Expr as_position(Expr e) { return cast(e, DType::Int64); }

// out[i] = self[i with dim d replaced by index[i]]; index sizes <= self's off dim d.
void gather(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* self = a.tensor("self");
  const Value* index = a.tensor("index");
  size_t r = self->meta().rank();
  std::optional<size_t> d = wrapped_dim(a.scalar("dim"), r);
  bool fits = d && r > 0 && static_cast<size_t>(index->meta().rank()) == r;
  ShapeEnv& env = L.graph.shape_env();
  for (size_t k = 0; fits && k < r; ++k)
    if (k != *d) fits = env.statically_known_true(sym::le(index->meta().sizes[k], self->meta().sizes[k]));
  if (!fits) return L.fallback(n);  // the reference kernel reports shape errors
  Index idx = Lowering::vars(r);
  Lowering::IndirectDim dims[] = {{*d, as_position(L.load(index, idx))}};
  L.define_pointwise(n->result(0), L.load_indirect(self, idx, dims, n, false));
}

void index_select(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* self = a.tensor("self");
  const Value* index = a.tensor("index");
  size_t r = self->meta().rank();
  std::optional<size_t> d = wrapped_dim(a.scalar("dim"), r);
  if (!d || r == 0 || index->meta().rank() > 1) return L.fallback(n);
  Index idx = Lowering::vars(r);
  Index at;
  if (index->meta().rank() == 1) at.push_back(idx[*d]);
  Lowering::IndirectDim dims[] = {{*d, as_position(L.load(index, at))}};
  L.define_pointwise(n->result(0), L.load_indirect(self, idx, dims, n, false));
}

// padding_idx, scale_grad_by_freq and sparse only change the backward.
void embedding(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* weight = a.tensor("weight");
  const Value* indices = a.tensor("indices");
  if (weight->meta().rank() != 2) return L.fallback(n);
  size_t q = indices->meta().rank();
  Index idx = Lowering::vars(q + 1);
  Lowering::IndirectDim dims[] = {{0, as_position(L.load(indices, std::span<const SymExpr>(idx).first(q)))}};
  Index w{SymExpr::integer(0), idx[q]};
  L.define_pointwise(n->result(0), L.load_indirect(weight, w, dims, n, false));
}

// self[..., i1, i2, ...]: integer index tensors on adjacent dims, broadcast together; their
// dims are replaced by the broadcast shape in place. Masks and split indices run the reference.
void index_tensor(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* self = a.tensor("self");
  std::vector<Value*> list = a.tensor_list("indices");
  const std::vector<SymExpr>& out = n->result(0)->meta().sizes;
  size_t r = self->meta().rank();
  std::optional<size_t> first, last;
  for (size_t j = 0; j < list.size(); ++j) {
    if (!list[j]) continue;
    DType t = list[j]->meta().dtype;
    if (t != DType::Int64 && t != DType::Int32) return L.fallback(n);
    if (last && *last + 1 != j) return L.fallback(n);
    if (!first) first = j;
    last = j;
  }
  if (!first || list.size() > r) return L.fallback(n);
  size_t k = *last - *first + 1;
  if (out.size() + k < r) return L.fallback(n);
  size_t nb = out.size() + k - r;  // rank of the broadcast index shape
  std::vector<SymExpr> bshape(out.begin() + static_cast<std::ptrdiff_t>(*first),
                              out.begin() + static_cast<std::ptrdiff_t>(*first + nb));
  Index idx = Lowering::vars(out.size());
  std::span<const SymExpr> bidx = std::span<const SymExpr>(idx).subspan(*first, nb);
  Index src;
  std::vector<Lowering::IndirectDim> dims;
  for (size_t j = 0; j < r; ++j) {
    if (j < *first) {
      src.push_back(idx[j]);
    } else if (j <= *last) {
      src.push_back(SymExpr::integer(0));
      const Value* t = list[j];
      dims.push_back({j, as_position(L.load(t, Lowering::broadcast_index(t->meta(), bshape, bidx)))});
    } else {
      src.push_back(idx[j - k + nb]);
    }
  }
  L.define_pointwise(n->result(0), L.load_indirect(self, src, dims, n, true));
}

constexpr LowerRule kRules[] = {
    {"aten.gather.default", gather},
    {"aten.index_select.default", index_select},
    {"aten.embedding.default", embedding},
    {"aten.index.Tensor", index_tensor},
};

}  // namespace

std::span<const LowerRule> indexing_rules() { return kRules; }

}  // namespace toroid::loop
