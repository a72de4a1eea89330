// Decompositions of layer, group and batch norm, after torch/_decomp/decompositions.py
// (_normalize, native_group_norm, native_batch_norm_helper). Statistics are computed in f32
// for f16/bf16 inputs; var.correction stays one op (the lowering uses a welford reduction).
#include "decompositions.h"
#include "toroid/sym/shape_env.h"

namespace toroid::passes {
namespace {

Argument int_list(const std::vector<int64_t>& v) {
  Argument::List l;
  for (int64_t x : v) l.push_back(Argument::integer(x));
  return Argument(std::move(l));
}

struct Normalized {
  Value* out;
  Value* mean;  // keepdim
  Value* rstd;  // keepdim
  Value* var;   // keepdim, biased
};

// (x - mean) * rsqrt(var + eps) over `dims` of x (already in its computation dtype).
Normalized normalize(Rewriter& rw, Value* x, const std::vector<int64_t>& dims, double eps) {
  Normalized r;
  r.var = rw.call("aten.var.correction", {Argument(x), int_list(dims)},
                  {Kwarg{"correction", Argument::integer(0)}, Kwarg{"keepdim", Argument::boolean(true)}});
  r.mean = rw.call("aten.mean.dim", {Argument(x), int_list(dims), Argument::boolean(true)});
  r.rstd = rw.unary("aten.rsqrt.default", rw.add(r.var, eps));
  r.out = rw.mul(rw.sub(x, r.mean), r.rstd);
  return r;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// Appends size-1 dimensions so a [C] tensor broadcasts along dim 1 of a rank-`rank` tensor.
Value* per_channel(Rewriter& rw, Value* v, int64_t rank) {
  for (int64_t i = 2; i < rank; ++i) v = rw.unsqueeze(v, -1);
  return v;
}

// Returns {out, mean, rstd} (mean and rstd keepdim), or nulls when not applicable.
Normalized layer_norm_impl(Rewriter& rw, bool* ok) {
  Value* x0 = rw.in("input");
  std::vector<SymExpr> shape = rw.args().int_list("normalized_shape");
  std::optional<double> eps = rw.number("eps");
  int64_t rank = x0->meta().rank();
  int64_t axis = rank - static_cast<int64_t>(shape.size());
  *ok = eps && !shape.empty() && axis >= 0;
  if (!*ok) return {};
  Value* w = rw.in("weight");
  Value* b = rw.in("bias");
  DType orig = rw.dtype_of(x0);
  Value* x = rw.cast(x0, Rewriter::computation_dtype(orig));
  Normalized r = normalize(rw, x, range(axis, rank), *eps);
  if (w) r.out = rw.mul(r.out, w);
  if (b) r.out = rw.add(r.out, b);
  r.out = rw.cast(r.out, orig);
  return r;
}

bool native_layer_norm(Rewriter& rw) {
  bool ok;
  Normalized r = layer_norm_impl(rw, &ok);
  if (!ok) return false;
  // mean and rstd take the node's dtype and shape ([..., 1, 1] on the CPU) in commit.
  return rw.commit({r.out, r.mean, r.rstd});
}

bool layer_norm(Rewriter& rw) {
  bool ok;
  Normalized r = layer_norm_impl(rw, &ok);
  if (!ok) return false;
  return rw.commit({r.out});
}

// Normalizes [N, group, C/group * HxW]; mean and rstd are [N, group].
bool native_group_norm(Rewriter& rw) {
  Value* x0 = rw.in("input");
  Value* w = rw.in("weight");
  Value* b = rw.in("bias");
  SymExpr N = rw.scalar("N"), C = rw.scalar("C"), HxW = rw.scalar("HxW");
  std::optional<int64_t> group = rw.integer("group");
  std::optional<double> eps = rw.number("eps");
  if (N.is_null() || C.is_null() || HxW.is_null() || !group || *group <= 0 || !eps) return false;
  int64_t rank = x0->meta().rank();
  if (rank < 2) return false;
  DType orig = rw.dtype_of(x0);
  SymExpr G = SymExpr::integer(*group);
  Value* xr = rw.reshape(x0, {N, G, sym::mul(sym::floordiv(C, G), HxW)});
  Value* x = rw.cast(xr, Rewriter::computation_dtype(orig));
  Normalized r = normalize(rw, x, {2}, *eps);
  Value* out = rw.view(r.out, x0->meta().sizes);
  if (w) out = rw.mul(out, per_channel(rw, w, rank));
  if (b) out = rw.add(out, per_channel(rw, b, rank));
  out = rw.cast(out, orig);
  return rw.commit({out, rw.squeeze(r.mean, {2}), rw.squeeze(r.rstd, {2})});
}

// A [0] tensor of the node's result dtype (the CPU kernels' save_mean/save_invstd in eval mode).
Value* empty_stat(Rewriter& rw, size_t result) {
  const TensorMeta& m = rw.node()->result(result)->meta();
  return rw.call("aten.full.default", {int_list({0}), Argument::floating(0.0)},
                 {Kwarg{"dtype", Argument(m.dtype)}, Kwarg{"device", Argument(m.device)}});
}

bool is_empty_stat(Rewriter& rw, size_t result) {
  const TensorMeta& m = rw.node()->result(result)->meta();
  return m.rank() == 1 && m.sizes[0] == SymExpr::integer(0);
}

// native_batch_norm_helper. `running_mean`/`running_var` may be null. With `update`, training
// writes the new running statistics into them with copy_ (the kernel mutates them).
bool batch_norm_impl(Rewriter& rw, Value* running_mean, Value* running_var, bool training, bool update) {
  Value* x0 = rw.in("input");
  Value* w = rw.in("weight");
  Value* b = rw.in("bias");
  std::optional<double> momentum = rw.number("momentum"), eps = rw.number("eps");
  int64_t rank = x0->meta().rank();
  if (!momentum || !eps || rank < 2) return false;
  DType orig = rw.dtype_of(x0);
  DType comp = Rewriter::computation_dtype(orig);
  std::vector<int64_t> dims{0};
  for (int64_t i = 2; i < rank; ++i) dims.push_back(i);

  Value* out;
  Value* save_mean;
  Value* save_rstd;
  if (training) {
    Value* x = rw.cast(x0, comp);
    Normalized r = normalize(rw, x, dims, *eps);
    out = r.out;
    save_mean = rw.squeeze(r.mean, dims);
    save_rstd = rw.squeeze(r.rstd, dims);
    if (update && running_mean) {
      Value* m = rw.add(rw.mul(save_mean, *momentum), rw.mul(running_mean, 1.0 - *momentum));
      rw.call("aten.copy_.default", {Argument(running_mean), Argument(rw.cast(m, rw.dtype_of(running_mean)))});
    }
    if (update && running_var) {
      // Unbiased: n / (n - 1) with n the elements per channel.
      SymExpr n = sym::floordiv(x0->meta().numel(), x0->meta().sizes[1]);
      Value* nt = rw.call("aten.scalar_tensor.default", {Argument(sym::to_float(n))},
                          {Kwarg{"dtype", Argument(comp)}, Kwarg{"device", Argument(rw.device())}});
      Value* unbiased = rw.mul(rw.squeeze(r.var, dims), rw.div(nt, rw.add(nt, -1.0)));
      Value* v = rw.add(rw.mul(unbiased, *momentum), rw.mul(running_var, 1.0 - *momentum));
      rw.call("aten.copy_.default", {Argument(running_var), Argument(rw.cast(v, rw.dtype_of(running_var)))});
    }
  } else {
    if (!running_mean || !running_var) return false;
    Value* mean = rw.cast(running_mean, comp);
    Value* var = rw.cast(running_var, comp);
    Value* invstd = rw.call("aten.reciprocal.default", {Argument(rw.unary("aten.sqrt.default", rw.add(var, *eps)))});
    out = rw.mul(rw.sub(x0, per_channel(rw, mean, rank)), per_channel(rw, invstd, rank));
    save_mean = is_empty_stat(rw, 1) ? empty_stat(rw, 1) : mean;
    save_rstd = is_empty_stat(rw, 2) ? empty_stat(rw, 2) : invstd;
  }
  if (w) out = rw.mul(out, per_channel(rw, w, rank));
  if (b) out = rw.add(out, per_channel(rw, b, rank));
  return rw.commit({rw.cast(out, orig), save_mean, save_rstd});
}

bool bn_no_training(Rewriter& rw) { return batch_norm_impl(rw, rw.in("running_mean"), rw.in("running_var"), false, false); }

bool bn_legit(Rewriter& rw) {
  bool training = rw.flag("training", true);
  return batch_norm_impl(rw, rw.in("running_mean"), rw.in("running_var"), training, training);
}

bool bn_legit_no_stats(Rewriter& rw) {
  if (!rw.flag("training", false)) return false;
  return batch_norm_impl(rw, nullptr, nullptr, true, false);
}

bool native_batch_norm(Rewriter& rw) {
  bool training = rw.flag("training", true);
  Value* rm = rw.in("running_mean");
  Value* rv = rw.in("running_var");
  // The schema declares no mutation, so a functional graph must not gain copy_ nodes.
  if (training && (rm || rv) && rw.node()->graph()->functional()) return false;
  return batch_norm_impl(rw, rm, rv, training, training);
}

}  // namespace

std::vector<Decomposition> norm_decompositions() {
  return {
      {"aten.native_layer_norm.default", native_layer_norm},
      {"aten.layer_norm.default", layer_norm},
      {"aten.native_group_norm.default", native_group_norm},
      {"aten._native_batch_norm_legit_no_training.default", bn_no_training},
      {"aten._native_batch_norm_legit.default", bn_legit},
      {"aten._native_batch_norm_legit.no_stats", bn_legit_no_stats},
      {"aten.native_batch_norm.default", native_batch_norm},
  };
}

}  // namespace toroid::passes
