// Meta functions of the remaining shape ops: cat, flip, repeat, select_scatter, slice_scatter,
// masked_scatter, resize_ (in place), sort and topk (values and int64 indices), _cdist_forward
// and _pdist_forward.
#include <set>

#include "meta_families.h"
#include "meta_helpers.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

// A float argument's constant value.
double const_float(MetaContext& ctx, SymExpr e, const char* what) {
  if (!e) ctx.fail(std::string(what) + " must be given");
  if (auto c = e.as_int()) return static_cast<double>(*c);
  if (e.kind() == sym::Kind::FloatConst) return e.float_value();
  ctx.fail(std::string(what) + " must be a constant number, not " + e.str());
}

// ---------------------------------------------------------------------------------------------
// cat

// A 1-d tensor of size 0: the legacy "empty" tensor that cat skips.
bool legacy_empty(MetaContext& ctx, const TensorMeta& t) {
  return t.rank() == 1 && (t.sizes[0].as_int() == std::optional<int64_t>(0) ||
                           (!t.sizes[0].as_int() && ctx.size_oblivious(sym::eq(t.sizes[0], I(0)))));
}

Results cat(const BoundArgs& a, MetaContext& ctx) {
  std::vector<Value*> vals = a.tensor_list("tensors");
  if (vals.empty()) ctx.fail("torch.cat(): expected a non-empty list of Tensors");
  std::vector<const TensorMeta*> ts;
  std::vector<Operand> ops;
  for (size_t i = 0; i < vals.size(); ++i) {
    if (!vals[i]) ctx.fail("torch.cat(): expected a list of Tensors, got None at position " + std::to_string(i));
    ts.push_back(&vals[i]->meta());
    ops.push_back(Operand::of(vals[i]->meta()));
    if (ts.back()->rank() == 0)
      ctx.fail("zero-dimensional tensor (at position " + std::to_string(i) + ") cannot be concatenated");
  }
  DType dtype = result_type(ops);
  Device dev = common_device(ctx, ops);
  // The output format: channels-last only when every input suggests the same one.
  std::optional<MemoryFormat> fmt;
  for (const TensorMeta* t : ts) {
    MemoryFormat f = suggest_memory_format(ctx, *t);
    if (f == MemoryFormat::Contiguous || (fmt && *fmt != f)) {
      fmt = MemoryFormat::Contiguous;
      break;
    }
    fmt = f;
  }
  int64_t dim = const_int(ctx, a.scalar("dim"), "dim");
  std::optional<size_t> valid;
  for (size_t i = 0; i < ts.size() && !valid; ++i)
    if (!legacy_empty(ctx, *ts[i])) valid = i;
  if (!valid) return {ResultSpec::tensor(fresh_contiguous(ctx, dtype, dev, {I(0)}))};
  const TensorMeta& ref = *ts[*valid];
  size_t d = static_cast<size_t>(wrap_dim(ctx, dim, ref.rank()));
  SymExpr total = I(0);
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorMeta& t = *ts[i];
    if (legacy_empty(ctx, t)) continue;
    if (t.rank() != ref.rank())
      ctx.fail("Tensors must have same number of dimensions: got " + std::to_string(ref.rank()) + " and " +
               std::to_string(t.rank()));
    for (size_t j = 0; j < t.sizes.size(); ++j)
      if (j != d && !is_eq(ctx, ref.sizes[j], t.sizes[j]))
        ctx.fail("Sizes of tensors must match except in dimension " + std::to_string(d) + ". Expected size " +
                 ref.sizes[j].str() + " but got size " + t.sizes[j].str() + " for tensor number " + std::to_string(i) +
                 " in the list.");
    total = total + t.sizes[d];
  }
  std::vector<SymExpr> sizes = ref.sizes;
  sizes[d] = simp(ctx, total);
  return {ResultSpec::tensor(fresh_format(ctx, dtype, dev, sizes, *fmt))};
}

// ---------------------------------------------------------------------------------------------
// flip, repeat

Results flip(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::set<int64_t> seen;
  for (SymExpr e : a.int_list("dims")) {
    int64_t d = wrap_dim(ctx, const_int(ctx, e, "dims"), x.rank());
    if (!seen.insert(d).second) ctx.fail("dim " + std::to_string(d) + " appears multiple times in the list of dims");
  }
  return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, x.sizes, preserve_strides(ctx, x)))};
}

Results repeat(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::vector<SymExpr> reps = a.int_list("repeats");
  if (reps.size() < x.sizes.size())
    ctx.fail("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  size_t lead = reps.size() - x.sizes.size();
  std::vector<SymExpr> out;
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i].as_int() && *reps[i].as_int() < 0)
      ctx.fail("Trying to create tensor with negative dimension " + reps[i].str() + ": " + shape_str(reps));
    out.push_back(simp(ctx, i < lead ? reps[i] : x.sizes[i - lead] * reps[i]));
  }
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

// ---------------------------------------------------------------------------------------------
// *_scatter: a copy of self with self's sizes, strides and storage offset (clone_preserve_strides).

TensorMeta clone_preserve_strides(MetaContext& ctx, const TensorMeta& x) {
  TensorMeta m = fresh(ctx, x.dtype, x.device, x.sizes, x.strides);
  m.offset = x.offset;
  return m;
}

void same_shape(MetaContext& ctx, const std::vector<SymExpr>& src, const std::vector<SymExpr>& slice) {
  bool ok = src.size() == slice.size();
  for (size_t i = 0; ok && i < src.size(); ++i) ok = is_eq(ctx, src[i], slice[i]);
  if (!ok)
    ctx.fail("Expected src to have a size equal to the slice of self. src size = " + shape_str(src) +
             ", slice size = " + shape_str(slice));
}

Results select_scatter(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  const TensorMeta& src = tensor_arg(a, ctx, "src");
  if (x.rank() == 0) ctx.fail("select() cannot be applied to a 0-dim tensor");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank()));
  SymExpr index = a.scalar("index"), size = x.sizes[d];
  if (!index) ctx.fail("index must be given");
  if (holds(ctx, sym::lt(index, sym::neg(size))) || is_le(ctx, size, index))
    ctx.fail("select(): index " + index.str() + " out of range for tensor of size " + shape_str(x.sizes) +
             " at dimension " + std::to_string(d));
  std::vector<SymExpr> slice = x.sizes;
  slice.erase(slice.begin() + static_cast<std::ptrdiff_t>(d));
  same_shape(ctx, src.sizes, slice);
  return {ResultSpec::tensor(clone_preserve_strides(ctx, x))};
}

// A slice bound clamped into [0, size] (negative bounds count from the end).
SymExpr clamp_bound(MetaContext& ctx, SymExpr e, SymExpr size) {
  if (auto c = e.as_int(); c && *c >= (int64_t{1} << 62)) return size;
  if (holds(ctx, sym::lt(e, I(0)))) e = simp(ctx, e + size);
  if (holds(ctx, sym::lt(e, I(0)))) return I(0);
  if (is_le(ctx, size, e)) return size;
  return e;
}

Results slice_scatter(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  const TensorMeta& src = tensor_arg(a, ctx, "src");
  if (x.rank() == 0) ctx.fail("slice() cannot be applied to a 0-dim tensor");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank()));
  int64_t step = const_int(ctx, a.scalar("step"), "step");
  if (step <= 0) ctx.fail("slice step must be positive");
  SymExpr size = x.sizes[d];
  SymExpr start = clamp_bound(ctx, a.is_none("start") ? I(0) : a.scalar("start"), size);
  SymExpr end = clamp_bound(ctx, a.is_none("end") ? size : a.scalar("end"), size);
  if (is_lt(ctx, end, start)) end = start;
  std::vector<SymExpr> slice = x.sizes;
  slice[d] = simp(ctx, sym::floordiv(end - start + (step - 1), I(step)));
  same_shape(ctx, src.sizes, slice);
  return {ResultSpec::tensor(clone_preserve_strides(ctx, x))};
}

Results masked_scatter(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  const TensorMeta& mask = tensor_arg(a, ctx, "mask");
  const TensorMeta& src = tensor_arg(a, ctx, "source");
  if (mask.dtype != DType::Bool)
    ctx.fail(std::string("masked_scatter_ only supports boolean masks, but got mask with dtype ") +
             dtype_short_name(mask.dtype));
  if (src.dtype != x.dtype)
    ctx.fail(std::string("masked_scatter: expected self and source to have same dtypes but got ") +
             dtype_short_name(x.dtype) + " and " + dtype_short_name(src.dtype));
  std::vector<std::vector<SymExpr>> shapes{x.sizes, mask.sizes};
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, broadcast_shapes(ctx, shapes)))};
}

// resize_: self, in place, with new sizes; the strides are contiguous (or of memory_format)
// unless the sizes are unchanged and no format is given.
Results resize_(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::vector<SymExpr> sizes = a.int_list("size");
  for (SymExpr s : sizes)
    if (s.as_int() && *s.as_int() < 0)
      ctx.fail("Trying to create tensor with negative dimension " + s.str() + ": " + shape_str(sizes));
  std::optional<MemoryFormat> f = a.memory_format("memory_format");
  if (f == MemoryFormat::Preserve) ctx.fail("Unsupported memory format Preserve");
  TensorMeta m = x;
  bool unchanged = sizes.size() == x.sizes.size();
  for (size_t i = 0; unchanged && i < sizes.size(); ++i) unchanged = sizes[i] == x.sizes[i];
  if (!unchanged || f) m.strides = format_strides(ctx, sizes, f.value_or(MemoryFormat::Contiguous));
  m.sizes = sizes;
  return {ResultSpec::tensor(m)};
}

// ---------------------------------------------------------------------------------------------
// sort, topk

Results sort(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank());
  // Dense strides: self's when non-overlapping and dense, else dense in self's dim order.
  std::vector<SymExpr> st = preserve_strides(ctx, x);
  return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, x.sizes, st)),
          ResultSpec::tensor(fresh(ctx, DType::Int64, x.device, x.sizes, st))};
}

Results topk(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank()));
  SymExpr k = a.scalar("k");
  if (!k) ctx.fail("k must be given");
  SymExpr slice = x.rank() == 0 ? I(1) : x.sizes[d];
  if (!holds(ctx, sym::le(I(0), k)) || !is_le(ctx, k, slice)) ctx.fail("selected index k out of range");
  std::vector<SymExpr> out = x.sizes;
  if (!out.empty()) out[d] = k;
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out)),
          ResultSpec::tensor(fresh_contiguous(ctx, DType::Int64, x.device, out))};
}

// ---------------------------------------------------------------------------------------------
// Pairwise distances

Results cdist(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x1 = tensor_arg(a, ctx, "x1");
  const TensorMeta& x2 = tensor_arg(a, ctx, "x2");
  if (x1.rank() < 2) ctx.fail("cdist only supports at least 2D tensors, X1 got: " + std::to_string(x1.rank()) + "D");
  if (x2.rank() < 2) ctx.fail("cdist only supports at least 2D tensors, X2 got: " + std::to_string(x2.rank()) + "D");
  if (!is_eq(ctx, x1.sizes.back(), x2.sizes.back()))
    ctx.fail("X1 and X2 must have the same number of columns. X1: " + x1.sizes.back().str() +
             " X2: " + x2.sizes.back().str());
  if (!is_floating(x1.dtype))
    ctx.fail(std::string("cdist only supports floating-point dtypes, X1 got: ") + dtype_short_name(x1.dtype));
  if (!is_floating(x2.dtype))
    ctx.fail(std::string("cdist only supports floating-point dtypes, X2 got: ") + dtype_short_name(x2.dtype));
  if (x1.dtype != x2.dtype)
    ctx.fail(std::string("cdist: X1 and X2 must have the same dtype, got ") + dtype_short_name(x1.dtype) + " and " +
             dtype_short_name(x2.dtype));
  if (!(const_float(ctx, a.scalar("p"), "p") >= 0)) ctx.fail("cdist only supports non-negative p values");
  if (!a.is_none("compute_mode")) {
    int64_t m = const_int(ctx, a.scalar("compute_mode"), "compute_mode");
    if (m < 0 || m > 2) ctx.fail("possible modes: None, 0, 1, 2, but was: " + std::to_string(m));
  }
  std::vector<std::vector<SymExpr>> batches{std::vector<SymExpr>(x1.sizes.begin(), x1.sizes.end() - 2),
                                            std::vector<SymExpr>(x2.sizes.begin(), x2.sizes.end() - 2)};
  std::vector<SymExpr> out = broadcast_shapes(ctx, batches);
  out.push_back(x1.sizes[x1.sizes.size() - 2]);
  out.push_back(x2.sizes[x2.sizes.size() - 2]);
  return {ResultSpec::tensor(fresh_contiguous(ctx, x1.dtype, x1.device, out))};
}

Results pdist(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  if (x.rank() != 2) ctx.fail("pdist only supports 2D tensors, got: " + std::to_string(x.rank()) + "D");
  if (!is_floating(x.dtype)) ctx.fail(std::string("pdist only supports floating-point dtypes, got ") + dtype_short_name(x.dtype));
  if (!(const_float(ctx, a.scalar("p"), "p") >= 0)) ctx.fail("pdist only supports non-negative p values");
  if (!is_contiguous(ctx, x.sizes, x.strides)) ctx.fail("_pdist_forward requires contiguous input");
  SymExpr n = x.sizes[0];
  SymExpr len = holds(ctx, sym::le(n, I(1))) ? I(0) : simp(ctx, sym::floordiv(n * (n - 1), I(2)));
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, {len}))};
}

}  // namespace

std::vector<MetaImpl> misc_meta_impls() {
  return {
      {"aten.cat.default", cat},
      {"aten.flip.default", flip},
      {"aten.repeat.default", repeat},
      {"aten.select_scatter.default", select_scatter},
      {"aten.slice_scatter.default", slice_scatter},
      {"aten.masked_scatter.default", masked_scatter},
      {"aten.resize_.default", resize_},
      {"aten.sort.default", sort},
      {"aten.topk.default", topk},
      {"aten._cdist_forward.default", cdist},
      {"aten._pdist_forward.default", pdist},
  };
}

}  // namespace toroid::ops
