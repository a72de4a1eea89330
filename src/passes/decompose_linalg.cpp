// Decompositions of linear, matmul, baddbmm and nll_loss_forward into mm/bmm/addmm, views,
// gather and reductions, after ATen's matmul folding and torch/_decomp's _nll_loss_forward.
#include "decompositions.h"
#include "toroid/sym/shape_env.h"

namespace toroid::passes {
namespace {

Argument int_list(const std::vector<int64_t>& v) {
  Argument::List l;
  for (int64_t x : v) l.push_back(Argument::integer(x));
  return Argument(std::move(l));
}

SymExpr product(const std::vector<SymExpr>& sizes, size_t from, size_t to) {
  SymExpr p = SymExpr::integer(1);
  for (size_t i = from; i < to; ++i) p = sym::mul(p, sizes[i]);
  return p;
}

Value* transpose2d(Rewriter& rw, Value* w) { return rw.unary("aten.t.default", w); }

// a @ b for a of rank >= 1 and b of rank 1 or 2: folds a's leading dimensions into one mm.
Value* fold_mm(Rewriter& rw, Value* a, Value* b, Value* bias) {
  std::vector<SymExpr> as = a->meta().sizes;
  int64_t ra = a->meta().rank(), rb = b->meta().rank();
  std::vector<SymExpr> out_sizes(as.begin(), as.end() - 1);
  if (rb == 2) out_sizes.push_back(b->meta().sizes[1]);
  Value* a2 = ra == 1 ? rw.unsqueeze(a, 0) : ra == 2 ? a : rw.reshape(a, {product(as, 0, as.size() - 1), as.back()});
  Value* b2 = rb == 1 ? rw.unsqueeze(b, 1) : b;
  Value* r = bias ? rw.call("aten.addmm.default", {Argument(bias), Argument(a2), Argument(b2)})
                  : rw.binary("aten.mm.default", a2, b2);
  if (ra == 2 && rb == 2) return r;
  return rw.view(r, out_sizes);
}

bool linear(Rewriter& rw) {
  Value* x = rw.in("input");
  Value* w = rw.in("weight");
  Value* b = rw.in("bias");
  if (w->meta().rank() != 2 || x->meta().rank() < 1) return false;
  // addmm folds a bias only when it broadcasts against [M, N] (x's leading dims folded into M):
  // a vector always, a matrix only for a 2-D x. Other biases are added after.
  bool bias_in_addmm = b && (b->meta().rank() <= 1 || (b->meta().rank() == 2 && x->meta().rank() == 2));
  Value* r = fold_mm(rw, x, transpose2d(rw, w), bias_in_addmm ? b : nullptr);
  if (b && !bias_in_addmm) r = rw.add(r, b);
  return rw.commit({r});
}

// Broadcast batch sizes of two tensors whose batch sizes are equal or 1 (constants).
bool broadcast_batch(Rewriter& rw, const std::vector<SymExpr>& a, const std::vector<SymExpr>& b,
                     std::vector<SymExpr>* out) {
  size_t n = std::max(a.size(), b.size());
  out->assign(n, SymExpr::integer(1));
  const ShapeEnv& env = rw.graph().shape_env();
  for (size_t i = 0; i < n; ++i) {
    SymExpr x = i + a.size() >= n ? a[i + a.size() - n] : SymExpr::integer(1);
    SymExpr y = i + b.size() >= n ? b[i + b.size() - n] : SymExpr::integer(1);
    if (x == y || env.statically_known_true(sym::eq(x, y))) (*out)[i] = x;
    else if (x == SymExpr::integer(1)) (*out)[i] = y;
    else if (y == SymExpr::integer(1)) (*out)[i] = x;
    else return false;
  }
  return true;
}

// matmul by ranks, as ATen's matmul: dot, mv/mm by folding, else a broadcast bmm.
bool matmul(Rewriter& rw) {
  Value* a = rw.in("self");
  Value* b = rw.in("other");
  int64_t ra = a->meta().rank(), rb = b->meta().rank();
  if (ra == 0 || rb == 0) return false;
  if (ra == 1 && rb == 1) return rw.commit({rw.call("aten.sum.default", {Argument(rw.mul(a, b))})});
  if (rb <= 2) return rw.commit({fold_mm(rw, a, b, nullptr)});
  // rb >= 3: batch matmul. A rank-1 a is [1, k]; a rank-1 b cannot occur here.
  std::vector<SymExpr> as = a->meta().sizes, bs = b->meta().sizes;
  Value* a3 = ra == 1 ? rw.unsqueeze(a, 0) : a;
  std::vector<SymExpr> a3s = a3->meta().sizes;
  std::vector<SymExpr> abatch(a3s.begin(), a3s.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  std::vector<SymExpr> batch;
  if (!broadcast_batch(rw, abatch, bbatch, &batch)) return false;
  SymExpr n = a3s[a3s.size() - 2], k = a3s.back(), m = bs.back();
  SymExpr nb = product(batch, 0, batch.size());
  auto expand_to = [&](Value* v, SymExpr r, SymExpr c) {
    std::vector<SymExpr> sizes = batch;
    sizes.push_back(r);
    sizes.push_back(c);
    Argument::List l;
    for (SymExpr s : sizes) l.push_back(Argument(s));
    bool same = v->meta().sizes == sizes;
    Value* e = same ? v : rw.call("aten.expand.default", {Argument(v), Argument(std::move(l))});
    return batch.size() == 1 && same ? e : rw.reshape(e, {nb, r, c});
  };
  Value* r = rw.binary("aten.bmm.default", expand_to(a3, n, k), expand_to(b, k, m));
  std::vector<SymExpr> out = batch;
  if (ra != 1) out.push_back(n);
  out.push_back(m);
  return rw.commit({batch.size() == 1 ? r : rw.view(r, out)});
}

// baddbmm(self, b1, b2, beta, alpha) = beta * self + alpha * bmm(b1, b2).
bool baddbmm(Rewriter& rw) {
  Value* self = rw.in("self");
  Value* r = rw.binary("aten.bmm.default", rw.in("batch1"), rw.in("batch2"));
  SymExpr alpha = rw.scalar("alpha"), beta = rw.scalar("beta");
  if (alpha.is_null() || beta.is_null()) return false;
  auto is = [](SymExpr e, int64_t v) {
    return (e.as_int() && *e.as_int() == v) || (e.kind() == sym::Kind::FloatConst && e.float_value() == static_cast<double>(v));
  };
  if (!is(alpha, 1)) r = rw.call("aten.mul.Tensor", {Argument(r), Argument(alpha)});
  if (is(beta, 0)) return rw.commit({r});  // self is ignored, nan and inf included
  if (!is(beta, 1)) self = rw.call("aten.mul.Tensor", {Argument(self), Argument(beta)});
  return rw.commit({rw.add(self, r)});
}

// _nll_loss_forward: -gather(self * weight, target), ignore_index masked, then reduced.
bool nll_loss_forward(Rewriter& rw) {
  Value* self = rw.in("self");
  Value* target = rw.in("target");
  Value* weight = rw.in("weight");
  std::optional<int64_t> reduction = rw.integer("reduction");
  SymExpr ignore = rw.scalar("ignore_index");
  int64_t rank = self->meta().rank();
  if (!reduction || ignore.is_null() || rank < 1 || rank > 2 || target->meta().rank() > 1) return false;
  int64_t cdim = rank < 2 ? 0 : 1;
  DType dt = rw.dtype_of(self);
  Value* w = nullptr;
  if (weight) {
    w = weight;
    if (rank > 1) w = rw.view(weight, {SymExpr::integer(1), weight->meta().sizes[0]});
    self = rw.mul(self, w);
  }
  Value* keep = rw.call("aten.ne.Scalar", {Argument(target), Argument(ignore)});
  Value* zero_i = rw.call("aten.scalar_tensor.default", {Argument::integer(0)},
                          {Kwarg{"dtype", Argument(rw.dtype_of(target))}, Kwarg{"device", Argument(rw.device())}});
  Value* safe = rw.unsqueeze(rw.where(keep, target, zero_i), cdim);
  Value* picked = rw.squeeze(rw.call("aten.gather.default", {Argument(self), Argument::integer(cdim), Argument(safe)}), {cdim});
  Value* zero = rw.scalar_tensor(0.0, dt);
  Value* result = rw.where(keep, rw.unary("aten.neg.default", picked), zero);
  if (*reduction == 0 && rank > 1) return rw.commit({result, rw.call("aten.full.default", {int_list({}), Argument::floating(0.0)},
                                                                   {Kwarg{"dtype", Argument(dt)}, Kwarg{"device", Argument(rw.device())}})});
  Value* total;
  if (w) {
    Value* we = rw.call("aten.expand.default", {Argument(w), Argument(Argument::List(self->meta().sizes.begin(), self->meta().sizes.end()))});
    Value* ws = rw.squeeze(rw.call("aten.gather.default", {Argument(we), Argument::integer(cdim), Argument(safe)}), {cdim});
    total = rw.call("aten.sum.default", {Argument(rw.where(keep, ws, zero))});
  } else {
    total = rw.cast(rw.call("aten.sum.default", {Argument(keep)}), dt);
  }
  if (*reduction == 2) result = rw.call("aten.sum.default", {Argument(result)});
  else if (*reduction == 1) result = rw.div(rw.call("aten.sum.default", {Argument(result)}), total);
  return rw.commit({result, total});
}

}  // namespace

std::vector<Decomposition> linalg_decompositions() {
  return {
      {"aten.linear.default", linear},
      {"aten.matmul.default", matmul},
      {"aten.baddbmm.default", baddbmm},
      {"aten.nll_loss_forward.default", nll_loss_forward},
  };
}

}  // namespace toroid::passes
