// Meta functions of softmax and normalization: _softmax/_log_softmax (and their composite and
// backward forms), native_layer_norm, native_group_norm, native_batch_norm and the
// _native_batch_norm_legit family. Statistics use float32 for half inputs on CUDA (the
// accumulation type), the input dtype on the CPU.
#include "meta_families.h"
#include "meta_helpers.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

constexpr auto& arg = tensor_arg;

bool reduced_float(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// The dtype of mean/rstd outputs of PyTorch's param_scalar_type: the input's, float32 for a
// 16-bit input with a float32 weight (mixed types). Group norm's on either device, layer and
// batch norm's on the CPU.
DType param_dtype(const TensorMeta& x, const BoundArgs& a) {
  if (Value* w = a.tensor("weight"); w && reduced_float(x.dtype) && w->meta().dtype == DType::Float32)
    return DType::Float32;
  return x.dtype;
}

// The dtype of layer and batch norm's mean/rstd outputs: float32 for 16-bit inputs on CUDA.
DType stats_dtype(const TensorMeta& x, const BoundArgs& a) {
  if (reduced_float(x.dtype) && x.device.is_cuda()) return DType::Float32;
  return param_dtype(x, a);
}

Results softmax(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank());
  DType d = x.dtype;
  if (a.schema().argument_index("half_to_float")) {
    SymExpr h = a.scalar("half_to_float");
    if (h && h.is_bool() && h.bool_value()) {
      if (d != DType::Float16) ctx.fail("conversion is supported for half type only");
      d = DType::Float32;
    }
  } else if (std::optional<DType> given = a.dtype("dtype")) {
    d = *given;
  }
  if (!is_floating(d)) ctx.fail(std::string("softmax is not implemented for ") + dtype_short_name(d));
  return {ResultSpec::tensor(fresh_contiguous(ctx, d, x.device, x.sizes))};
}

Results softmax_backward(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& g = arg(a, ctx, "grad_output");
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), g.rank());
  return {ResultSpec::tensor(fresh_contiguous(ctx, a.dtype("input_dtype").value_or(g.dtype), g.device, g.sizes))};
}

// The input's leading dims before normalized_shape, checked against it.
size_t layer_norm_axis(const BoundArgs& a, MetaContext& ctx, const TensorMeta& x) {
  std::vector<SymExpr> ns = a.int_list("normalized_shape");
  if (ns.empty()) ctx.fail("expected normalized_shape to be at least 1-dimensional");
  bool ok = ns.size() <= x.sizes.size();
  size_t axis = ok ? x.sizes.size() - ns.size() : 0;
  for (size_t i = 0; ok && i < ns.size(); ++i)
    ok = ns[i] == x.sizes[axis + i] || ctx.guard(sym::eq(ns[i], x.sizes[axis + i]));
  if (!ok)
    ctx.fail("given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " +
             shape_str(ns).substr(1) + ", but got input of size " + shape_str(x.sizes));
  for (const char* p : {"weight", "bias"})
    if (Value* v = a.tensor(p))
      if (v->meta().sizes.size() != ns.size())
        ctx.fail(std::string("expected ") + p + " to be of same shape as normalized_shape, but got " + p +
                 " of shape " + shape_str(v->meta().sizes));
  return axis;
}

Results native_layer_norm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "input");
  size_t axis = layer_norm_axis(a, ctx, x);
  std::vector<SymExpr> stat(x.sizes.begin(), x.sizes.begin() + static_cast<std::ptrdiff_t>(axis));
  stat.resize(x.sizes.size(), SymExpr::integer(1));
  DType sd = stats_dtype(x, a);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, x.sizes)),
          ResultSpec::tensor(fresh_contiguous(ctx, sd, x.device, stat)),
          ResultSpec::tensor(fresh_contiguous(ctx, sd, x.device, stat))};
}

Results layer_norm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "input");
  layer_norm_axis(a, ctx, x);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, x.sizes))};
}

Results native_group_norm(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "input");
  SymExpr n = a.scalar("N"), c = a.scalar("C");
  int64_t group = const_int(ctx, a.scalar("group"), "group");
  if (group <= 0) ctx.fail("expected group to be positive, got " + std::to_string(group));
  if (auto cc = c.as_int(); cc && *cc % group != 0)
    ctx.fail("expected number of channels in input to be divisible by num_groups, but got input of shape " +
             shape_str(x.sizes) + " and num_groups=" + std::to_string(group));
  // CPU kernels keep the input's memory format; CUDA ones write contiguous outputs.
  std::vector<SymExpr> st = x.device.is_cpu() ? format_strides(ctx, x.sizes, suggest_memory_format(ctx, x))
                                              : contiguous_strides(x.sizes);
  DType sd = param_dtype(x, a);  // on CUDA too, unlike layer and batch norm
  std::vector<SymExpr> stat{n, SymExpr::integer(group)};
  return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, x.sizes, st)),
          ResultSpec::tensor(fresh_contiguous(ctx, sd, x.device, stat)),
          ResultSpec::tensor(fresh_contiguous(ctx, sd, x.device, stat))};
}

// Batch norm: the output in the input's suggested format; save_mean/save_invstd of size C when
// training, empty otherwise.
Results batch_norm(const BoundArgs& a, MetaContext& ctx, bool training) {
  const TensorMeta& x = arg(a, ctx, "input");
  if (x.rank() < 2) ctx.fail("expected an input with at least 2 dims, got " + std::to_string(x.rank()));
  std::vector<SymExpr> st = format_strides(ctx, x.sizes, suggest_memory_format(ctx, x));
  DType sd = stats_dtype(x, a);
  // Eval mode: the CPU kernels return empty saved statistics, the CUDA ones the running mean
  // and 1/sqrt(var + eps) (one per channel), as PyTorch's native_batch_norm_helper says.
  SymExpr c = training || !x.device.is_cpu() ? x.sizes[1] : SymExpr::integer(0);
  return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, x.sizes, st)),
          ResultSpec::tensor(fresh_contiguous(ctx, sd, x.device, {c})),
          ResultSpec::tensor(fresh_contiguous(ctx, sd, x.device, {c}))};
}

bool training_flag(const BoundArgs& a) {
  SymExpr t = a.scalar("training");
  return t && t.is_bool() && t.bool_value();
}

}  // namespace

std::vector<MetaImpl> norm_meta_impls() {
  return {
      {"aten._softmax.default", softmax}, {"aten._log_softmax.default", softmax},
      {"aten.softmax.int", softmax}, {"aten.log_softmax.int", softmax},
      {"aten._softmax_backward_data.default", softmax_backward},
      {"aten._log_softmax_backward_data.default", softmax_backward},
      {"aten.native_layer_norm.default", native_layer_norm}, {"aten.layer_norm.default", layer_norm},
      {"aten.native_group_norm.default", native_group_norm},
      {"aten.native_batch_norm.default", [](const BoundArgs& a, MetaContext& c) { return batch_norm(a, c, training_flag(a)); }},
      {"aten._native_batch_norm_legit.default", [](const BoundArgs& a, MetaContext& c) { return batch_norm(a, c, training_flag(a)); }},
      {"aten._native_batch_norm_legit.no_stats", [](const BoundArgs& a, MetaContext& c) { return batch_norm(a, c, training_flag(a)); }},
      {"aten._native_batch_norm_legit_no_training.default", [](const BoundArgs& a, MetaContext& c) { return batch_norm(a, c, false); }},
  };
}

}  // namespace toroid::ops
