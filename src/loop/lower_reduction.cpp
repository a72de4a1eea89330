// Lowerings of the reductions: one Reduction buffer each, whose body reads the input at
// (output index, reduction index).
#include <algorithm>
#include <set>

#include "lowering.h"

namespace toroid::loop {
namespace {

using ops::BoundArgs;

std::vector<int64_t> wrap_dims(Lowering& L, const Node* n, std::vector<SymExpr> dims, int64_t rank) {
  std::set<int64_t> out;
  for (SymExpr d : dims) {
    std::optional<int64_t> v = d.as_int();
    if (!v) L.fail(n, "symbolic reduction dim " + d.str());
    int64_t w = *v < 0 ? *v + std::max<int64_t>(rank, 1) : *v;
    if (w < 0 || w >= std::max<int64_t>(rank, 1)) L.fail(n, "dim " + std::to_string(*v) + " out of range");
    if (rank > 0) out.insert(w);
  }
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d) out.insert(d);
  return {out.begin(), out.end()};
}

// Reduces `in` over `dims` into result `r` of node n.
void reduce(Lowering& L, const Node* n, const Value* r, const Value* in, const std::vector<int64_t>& dims,
            bool keepdim, ReduceOp op, DType body_dtype, double correction = 1.0) {
  const TensorMeta& m = in->meta();
  Index idx;
  std::vector<SymExpr> rsizes;
  size_t out_k = 0;
  for (int64_t d = 0; d < m.rank(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (reduced) {
      idx.push_back(reduction_var(rsizes.size()));
      rsizes.push_back(m.sizes[static_cast<size_t>(d)]);
      if (keepdim) ++out_k;
    } else {
      idx.push_back(index_var(out_k++));
    }
  }
  TOROID_CHECK(out_k == r->meta().sizes.size(), "reduction rank of " + n->describe());
  std::unique_ptr<Buffer> b = L.new_buffer(r, BufferKind::Reduction);
  b->body = cast(L.load(in, idx), body_dtype);
  b->reduction_sizes = std::move(rsizes);
  b->reduce = op;
  b->correction = correction;
  L.define_buffer(r, std::move(b));
}

std::vector<SymExpr> dim_list(const BoundArgs& a, const char* name) {
  if (a.is_none(name)) return {};
  return a.int_list(name);
}

template <ReduceOp R>
void sum_like(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  std::vector<SymExpr> dims = a.schema().argument_index("dim") ? dim_list(a, "dim") : std::vector<SymExpr>{};
  bool keepdim = a.schema().argument_index("keepdim") && a.scalar("keepdim") == SymExpr::boolean(true);
  DType out = n->result(0)->meta().dtype;
  reduce(L, n, n->result(0), in, wrap_dims(L, n, dims, in->meta().rank()), keepdim, R, compute_dtype(out));
}

// prod.dim_int, any.dim: a single int dim.
template <ReduceOp R>
void single_dim(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  bool keepdim = a.scalar("keepdim") == SymExpr::boolean(true);
  DType out = n->result(0)->meta().dtype;
  DType body = R == ReduceOp::Any || R == ReduceOp::All ? DType::Bool : compute_dtype(out);
  reduce(L, n, n->result(0), in, wrap_dims(L, n, {a.scalar("dim")}, in->meta().rank()), keepdim, R, body);
}

template <ReduceOp R>
void bool_reduce(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  std::vector<SymExpr> dims = a.schema().argument_index("dim") ? dim_list(a, "dim") : std::vector<SymExpr>{};
  bool keepdim = a.schema().argument_index("keepdim") && a.scalar("keepdim") == SymExpr::boolean(true);
  reduce(L, n, n->result(0), in, wrap_dims(L, n, dims, in->meta().rank()), keepdim, R, DType::Bool);
}

template <ReduceOp R>
void extremum(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  std::vector<SymExpr> dims = a.schema().argument_index("dim") ? dim_list(a, "dim") : std::vector<SymExpr>{};
  bool keepdim = a.schema().argument_index("keepdim") && a.scalar("keepdim") == SymExpr::boolean(true);
  reduce(L, n, n->result(0), in, wrap_dims(L, n, dims, in->meta().rank()), keepdim, R,
         compute_dtype(in->meta().dtype));
}

// argmax/argmin: dim=None reduces the flattened input.
template <ReduceOp R>
void arg_extremum(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  bool keepdim = a.scalar("keepdim") == SymExpr::boolean(true);
  DType body = compute_dtype(in->meta().dtype);
  if (a.is_none("dim")) {
    if (keepdim && in->meta().rank() > 0) L.fail(n, "argmax/argmin with dim=None and keepdim=True");
    reduce(L, n, n->result(0), in, wrap_dims(L, n, {}, in->meta().rank()), false, R, body);
    return;
  }
  reduce(L, n, n->result(0), in, wrap_dims(L, n, {a.scalar("dim")}, in->meta().rank()), keepdim, R, body);
}

// max.dim / min.dim: values and indices, two reductions of the same body.
template <ReduceOp V, ReduceOp I>
void extremum_dim(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  bool keepdim = a.scalar("keepdim") == SymExpr::boolean(true);
  std::vector<int64_t> dims = wrap_dims(L, n, {a.scalar("dim")}, in->meta().rank());
  DType body = compute_dtype(in->meta().dtype);
  reduce(L, n, n->result(0), in, dims, keepdim, V, body);
  reduce(L, n, n->result(1), in, dims, keepdim, I, body);
}

void mean_dim(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  bool keepdim = a.scalar("keepdim") == SymExpr::boolean(true);
  DType out = n->result(0)->meta().dtype;
  reduce(L, n, n->result(0), in, wrap_dims(L, n, dim_list(a, "dim"), in->meta().rank()), keepdim, ReduceOp::Mean,
         compute_dtype(out));
}

void var_correction(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  bool keepdim = a.scalar("keepdim") == SymExpr::boolean(true);
  double correction = 1.0;
  if (!a.is_none("correction")) {
    SymExpr c = a.scalar("correction");
    if (!c || !c.is_constant()) L.fail(n, "symbolic correction");
    correction = c.kind() == sym::Kind::FloatConst ? c.float_value() : static_cast<double>(c.int_value());
  }
  DType out = n->result(0)->meta().dtype;
  reduce(L, n, n->result(0), in, wrap_dims(L, n, dim_list(a, "dim"), in->meta().rank()), keepdim, ReduceOp::Var,
         compute_dtype(out), correction);
}

constexpr LowerRule kRules[] = {
    {"aten.sum.dim_IntList", sum_like<ReduceOp::Sum>},
    {"aten.sum.default", sum_like<ReduceOp::Sum>},
    {"aten.prod.default", sum_like<ReduceOp::Prod>},
    {"aten.prod.dim_int", single_dim<ReduceOp::Prod>},
    {"aten.amax.default", extremum<ReduceOp::Max>},
    {"aten.amin.default", extremum<ReduceOp::Min>},
    {"aten.max.default", extremum<ReduceOp::Max>},
    {"aten.min.default", extremum<ReduceOp::Min>},
    {"aten.argmax.default", arg_extremum<ReduceOp::ArgMax>},
    {"aten.argmin.default", arg_extremum<ReduceOp::ArgMin>},
    {"aten.max.dim", extremum_dim<ReduceOp::Max, ReduceOp::ArgMax>},
    {"aten.min.dim", extremum_dim<ReduceOp::Min, ReduceOp::ArgMin>},
    {"aten.any.default", bool_reduce<ReduceOp::Any>},
    {"aten.any.dims", bool_reduce<ReduceOp::Any>},
    {"aten.any.dim", single_dim<ReduceOp::Any>},
    {"aten.mean.dim", mean_dim},
    {"aten.var.correction", var_correction},
};

}  // namespace

std::span<const LowerRule> reduction_rules() { return kRules; }

void define_sum(Lowering& L, const Node* n, const Value* r, const Value* in, const std::vector<int64_t>& dims) {
  reduce(L, n, r, in, dims, false, ReduceOp::Sum, compute_dtype(r->meta().dtype));
}

}  // namespace toroid::loop
