// Meta functions of embeddings, losses and normalization backward: embedding, _embedding_bag
// (4 results), embedding_dense_backward, nll_loss_forward/nll_loss_backward,
// native_layer_norm_backward and native_group_norm_backward (output_mask).
//
// A false output_mask entry makes PyTorch return an undefined tensor (None). A graph value
// cannot be None, so toroid returns an empty 1-d tensor of size 0 in its place (meta_helpers.h,
// undefined_result); consumers must not read it. docs/ops.md states this convention.
#include "meta_families.h"
#include "meta_helpers.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

void index_types(MetaContext& ctx, const TensorMeta& t, const char* arg, int pos, const char* op) {
  if (t.dtype != DType::Int64 && t.dtype != DType::Int32)
    ctx.fail("Expected tensor for argument #" + std::to_string(pos) + " '" + arg +
             "' to have one of the following scalar types: Long, Int; but got " + dtype_short_name(t.dtype) +
             " instead (while checking arguments for " + op + ")");
}

Results embedding(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& w = tensor_arg(a, ctx, "weight");
  const TensorMeta& idx = tensor_arg(a, ctx, "indices");
  if (w.rank() != 2) ctx.fail("'weight' must be 2-D");
  index_types(ctx, idx, "indices", 1, "embedding");
  std::vector<SymExpr> out = idx.sizes;
  out.push_back(w.sizes[1]);
  return {ResultSpec::tensor(fresh_contiguous(ctx, w.dtype, w.device, out))};
}

Results embedding_dense_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& g = tensor_arg(a, ctx, "grad_output");
  const TensorMeta& idx = tensor_arg(a, ctx, "indices");
  index_types(ctx, idx, "indices", 1, "embedding_backward");
  if (g.rank() < idx.rank())
    ctx.fail("expected grad_output of rank at least " + std::to_string(idx.rank()) + " (the indices' rank), got " +
             shape_str(g.sizes));
  SymExpr n = a.scalar("num_weights");
  if (!n) ctx.fail("num_weights must be given");
  if (n.as_int() && *n.as_int() < 0) ctx.fail("num_weights must be non-negative, got " + n.str());
  std::vector<SymExpr> out{n};
  out.insert(out.end(), g.sizes.begin() + idx.rank(), g.sizes.end());
  return {ResultSpec::tensor(fresh_contiguous(ctx, g.dtype, g.device, out))};
}

// _embedding_bag -> (output [bags, D], offset2bag, bag_size, max_indices). On the CPU the
// index results take the offsets' dtype: offset2bag is [0] on the fast sum path (f32/f16/bf16
// weight with unit inner stride, no padding_idx, unit-stride per_sample_weights) and
// [indices.size(0)] otherwise; bag_size is [bags]; max_indices is [bags, D] in max mode, else
// [bags]. On CUDA they take the indices' dtype, bag_size is [offsets.size(0)] and max_indices
// is [0] unless in max mode.
Results embedding_bag(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& w = tensor_arg(a, ctx, "weight");
  const TensorMeta& idx = tensor_arg(a, ctx, "indices");
  const TensorMeta& off = tensor_arg(a, ctx, "offsets");
  Value* psw_v = a.tensor("per_sample_weights");
  const TensorMeta* psw = psw_v ? &psw_v->meta() : nullptr;
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    ctx.fail(std::string("expected indices to be long or int, got ") + dtype_short_name(idx.dtype));
  if (off.dtype != DType::Int64 && off.dtype != DType::Int32)
    ctx.fail(std::string("expected offsets to be long or int, got ") + dtype_short_name(off.dtype));
  if (idx.dtype != off.dtype)
    ctx.fail(std::string("expected indices and offsets to have the same dtype, got ") + dtype_short_name(idx.dtype) +
             " and " + dtype_short_name(off.dtype));
  if (!is_floating(w.dtype))
    ctx.fail(std::string("expected weight to be floating point type, got ") + dtype_short_name(w.dtype));
  if (w.rank() != 2) ctx.fail("weight has to be a 2D Tensor, but got Tensor of dimension " + std::to_string(w.rank()));
  if (idx.rank() != 1) ctx.fail("expected indices to be a 1D tensor, got " + std::to_string(idx.rank()) + "D");
  if (off.rank() != 1) ctx.fail("expected offsets to be a 1D tensor, got " + std::to_string(off.rank()) + "D");
  int64_t mode = const_int(ctx, a.scalar("mode"), "mode");
  if (mode < 0 || mode > 2) ctx.fail("mode has to be one of sum (0), mean (1) or max (2), got " + std::to_string(mode));
  bool last = flag(a, "include_last_offset");
  int64_t padding_idx = const_int(ctx, a.scalar("padding_idx"), "padding_idx");
  SymExpr bags = off.sizes[0];
  if (last) {
    check(ctx, sym::le(I(1), bags), [] { return std::string("include_last_offset: numBags should be at least 1"); });
    bags = simp(ctx, bags - 1);
  }
  if (psw) {
    if (mode != 0) ctx.fail("embedding_bag: per_sample_weights only supported with mode='sum'");
    if (psw->dtype != w.dtype)
      ctx.fail(std::string("expected weight (") + dtype_short_name(w.dtype) + ") and per_sample_weights (" +
               dtype_short_name(psw->dtype) + ") to have same dtype");
    if (psw->rank() != 1)
      ctx.fail("expected per_sample_weights to be 1D tensor, got " + std::to_string(psw->rank()) + "D");
    if (!is_eq(ctx, psw->numel(), idx.numel()))
      ctx.fail("expected per_sample_weights.numel() (" + simp(ctx, psw->numel()).str() +
               " to be the same as indices.numel() (" + simp(ctx, idx.numel()).str() + ")");
  }
  SymExpr dim = w.sizes[1];
  Results r;
  r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, w.dtype, w.device, {bags, dim})));
  if (!off.device.is_cpu()) {
    r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, idx.dtype, idx.device, {idx.sizes[0]})));
    r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, idx.dtype, idx.device, {off.sizes[0]})));
    std::vector<SymExpr> mx = mode == 2 ? std::vector<SymExpr>{bags, dim} : std::vector<SymExpr>{I(0)};
    r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, idx.dtype, idx.device, mx)));
    return r;
  }
  auto unit = [&](SymExpr s) { return s.as_int() == std::optional<int64_t>(1); };
  bool fast_dtype = w.dtype == DType::Float32 || w.dtype == DType::Float16 || w.dtype == DType::BFloat16;
  bool fast = fast_dtype && unit(w.strides[1]) && padding_idx < 0 && (!psw || unit(psw->strides[0]));
  SymExpr o2b = (mode == 1 || mode == 2 || !fast) ? idx.sizes[0] : I(0);
  r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, off.dtype, off.device, {o2b})));
  r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, off.dtype, off.device, {bags})));
  std::vector<SymExpr> mx = mode == 2 ? std::vector<SymExpr>{bags, dim} : std::vector<SymExpr>{bags};
  r.push_back(ResultSpec::tensor(fresh_contiguous(ctx, off.dtype, off.device, mx)));
  return r;
}

// ---------------------------------------------------------------------------------------------
// nll_loss

struct NllShape {
  bool per_sample;  // reduction none on a 2-d input: one loss per row
};

NllShape nll_checks(const BoundArgs& a, MetaContext& ctx, const TensorMeta& x, const TensorMeta& t) {
  if (x.rank() < 1 || x.rank() > 2) ctx.fail("input tensor should be 1D or 2D");
  if (t.rank() > 1) ctx.fail("0D or 1D target tensor expected, multi-target not supported");
  bool no_batch = x.rank() == 1 && t.rank() == 0;
  if (!no_batch && (t.rank() == 0 || !is_eq(ctx, x.sizes[0], t.sizes[0])))
    ctx.fail("size mismatch (got input: " + shape_str(x.sizes) + ", target: " + shape_str(t.sizes) + ")");
  if (!is_floating(x.dtype)) ctx.fail(std::string("nll_loss: expected a floating input, got ") + dtype_short_name(x.dtype));
  if (t.dtype != DType::Int64 && t.dtype != DType::UInt8)
    ctx.fail(std::string("expected scalar type Long for target but found ") + dtype_short_name(t.dtype));
  SymExpr classes = x.sizes.back();
  if (Value* wv = a.tensor("weight")) {
    const TensorMeta& w = wv->meta();
    if (w.rank() != 1 || !is_eq(ctx, w.numel(), classes))
      ctx.fail("weight tensor should be defined either for all " + classes.str() +
               " classes or no classes but got weight tensor of shape: " + shape_str(w.sizes));
  }
  int64_t red = const_int(ctx, a.scalar("reduction"), "reduction");
  if (red < 0 || red > 2) ctx.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(red));
  return NllShape{red == 0 && x.rank() == 2};
}

Results nll_loss_forward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  const TensorMeta& t = tensor_arg(a, ctx, "target");
  NllShape s = nll_checks(a, ctx, x, t);
  std::vector<SymExpr> out = s.per_sample ? std::vector<SymExpr>{x.sizes[0]} : std::vector<SymExpr>{};
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out)),
          ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, {}))};
}

Results nll_loss_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& g = tensor_arg(a, ctx, "grad_output");
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  const TensorMeta& t = tensor_arg(a, ctx, "target");
  const TensorMeta& tw = tensor_arg(a, ctx, "total_weight");
  NllShape s = nll_checks(a, ctx, x, t);
  if (!is_eq(ctx, tw.numel(), I(1)))
    ctx.fail("expected total_weight to be a single element tensor, got: " + shape_str(tw.sizes) + " (" +
             simp(ctx, tw.numel()).str() + " elements)");
  if (s.per_sample) {
    if (g.rank() != 1 || !is_eq(ctx, g.sizes[0], x.sizes[0]))
      ctx.fail("Expected a tensor of dimension 1 and tensor.size[0] == " + x.sizes[0].str() + " but got: dimension " +
               std::to_string(g.rank()) + " and tensor.size " + shape_str(g.sizes));
  } else if (g.rank() > 1 || !is_eq(ctx, g.numel(), I(1))) {
    ctx.fail("Expected a single element grad_output tensor, but got: " + shape_str(g.sizes));
  }
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, x.sizes))};
}

// ---------------------------------------------------------------------------------------------
// Normalization backward

std::vector<bool> output_mask(const BoundArgs& a, MetaContext& ctx) {
  std::vector<bool> m = bool_list(a, ctx, "output_mask");
  if (m.size() != 3) ctx.fail("output_mask must have 3 entries, got " + std::to_string(m.size()));
  return m;
}

void same_sizes(MetaContext& ctx, const TensorMeta& x, const TensorMeta& y, const char* xn, const char* yn) {
  bool ok = x.rank() == y.rank();
  for (size_t i = 0; ok && i < x.sizes.size(); ++i) ok = is_eq(ctx, x.sizes[i], y.sizes[i]);
  if (!ok)
    ctx.fail(std::string("expected ") + xn + " and " + yn + " to have the same shape, but got " + shape_str(x.sizes) +
             " and " + shape_str(y.sizes));
}

// dX like the input (contiguous), dW like the weight and dB like the bias (undefined when
// masked out or when the parameter is None).
Results native_layer_norm_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& go = tensor_arg(a, ctx, "grad_out");
  const TensorMeta& x = tensor_arg(a, ctx, "input");
  std::vector<SymExpr> ns = a.int_list("normalized_shape");
  same_sizes(ctx, go, x, "grad_out", "input");
  bool ok = !ns.empty() && ns.size() <= x.sizes.size();
  size_t axis = ok ? x.sizes.size() - ns.size() : 0;
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = is_eq(ctx, ns[i], x.sizes[axis + i]);
  if (!ok)
    ctx.fail("given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " + shape_str(ns).substr(1) +
             ", but got input of size " + shape_str(x.sizes));
  std::vector<bool> m = output_mask(a, ctx);
  Value* w = a.tensor("weight");
  Value* b = a.tensor("bias");
  Results r;
  r.push_back(m[0] ? ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, x.sizes))
                   : undefined_result(ctx, x.dtype, x.device));
  auto param = [&](bool want, Value* p) {
    if (!want || !p) return undefined_result(ctx, x.dtype, x.device);
    return ResultSpec::tensor(fresh_contiguous(ctx, p->meta().dtype, p->meta().device, p->meta().sizes));
  };
  r.push_back(param(m[1], w));
  r.push_back(param(m[2], b));
  return r;
}

// dX in the input's layout (its suggested memory format on the CPU, contiguous on CUDA, as the
// forward); dgamma and dbeta of shape [C].
Results native_group_norm_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& go = tensor_arg(a, ctx, "grad_out");
  const TensorMeta& x = tensor_arg(a, ctx, "input");
  const TensorMeta& mean = tensor_arg(a, ctx, "mean");
  const TensorMeta& rstd = tensor_arg(a, ctx, "rstd");
  Value* gamma = a.tensor("weight");
  SymExpr n = a.scalar("N"), c = a.scalar("C"), hxw = a.scalar("HxW");
  if (!n || !c || !hxw) ctx.fail("N, C and HxW must be given");
  int64_t group = const_int(ctx, a.scalar("group"), "group");
  if (group <= 0) ctx.fail("expected group to be positive, got " + std::to_string(group));
  same_sizes(ctx, x, go, "input", "grad_out");
  same_sizes(ctx, mean, rstd, "mean", "rstd");
  check(ctx, sym::eq(x.numel(), n * c * hxw),
        [&] { return "Expect input to have " + simp(ctx, n * c * hxw).str() + " elements"; });
  if (mean.rank() != 2 || !is_eq(ctx, mean.sizes[0], n) || !is_eq(ctx, mean.sizes[1], I(group)))
    ctx.fail("Expect mean to have shape (" + n.str() + ", " + std::to_string(group) + "), but got " +
             shape_str(mean.sizes));
  if (gamma && !is_eq(ctx, gamma->meta().numel(), c))
    ctx.fail("Expect gamma to have " + c.str() + " elements but got " + simp(ctx, gamma->meta().numel()).str());
  check(ctx, sym::eq(sym::mod(c, I(group)), I(0)), [&] {
    return "Expect number of channels " + c.str() + " to be evenly-divisible by number of groups " +
           std::to_string(group);
  });
  std::vector<bool> m = output_mask(a, ctx);
  MemoryFormat f = x.device.is_cpu() ? suggest_memory_format(ctx, x) : MemoryFormat::Contiguous;
  DType pd = gamma ? gamma->meta().dtype : x.dtype;
  Results r;
  r.push_back(m[0] ? ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, x.sizes, f))
                   : undefined_result(ctx, x.dtype, x.device));
  for (size_t i = 1; i < 3; ++i)
    r.push_back(m[i] ? ResultSpec::tensor(fresh_contiguous(ctx, pd, x.device, {c})) : undefined_result(ctx, pd, x.device));
  return r;
}

}  // namespace

std::vector<MetaImpl> nn_meta_impls() {
  return {
      {"aten.embedding.default", embedding},
      {"aten.embedding_dense_backward.default", embedding_dense_backward},
      {"aten._embedding_bag.default", embedding_bag},
      {"aten.nll_loss_forward.default", nll_loss_forward},
      {"aten.nll_loss_backward.default", nll_loss_backward},
      {"aten.native_layer_norm_backward.default", native_layer_norm_backward},
      {"aten.native_group_norm_backward.default", native_group_norm_backward},
  };
}

}  // namespace toroid::ops
