// Meta functions of views: each result shares its input's storage, with computed sizes,
// strides and storage offset (view/reshape, expand, permute, transpose, squeeze/unsqueeze,
// select, slice, diagonal, as_strided, split/unbind, alias/detach).
#include <set>

#include "meta_families.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

const TensorMeta& self_meta(const BoundArgs& a, MetaContext& ctx) {
  Value* x = a.tensor("self");
  if (!x) ctx.fail("argument 'self' must be a tensor, not None");
  return x->meta();
}

SymExpr simp(MetaContext& ctx, SymExpr e) { return ctx.shapes.simplify(e); }

// Equality of sizes: structural after simplification, else decided (guarded).
bool same(MetaContext& ctx, SymExpr a, SymExpr b) {
  if (a == b) return true;
  a = simp(ctx, a);
  b = simp(ctx, b);
  if (a == b) return true;
  if (a.as_int() && b.as_int()) return false;
  return ctx.guard(sym::eq(a, b));
}

bool is_one(MetaContext& ctx, SymExpr s) {
  if (auto c = s.as_int()) return *c == 1;
  return ctx.size_oblivious(sym::eq(s, SymExpr::integer(1)));
}

// A concrete value for a count that must be static (number of split results): a constant,
// or the hint with a guard.
int64_t concrete(MetaContext& ctx, SymExpr e, const char* what) {
  e = simp(ctx, e);
  if (auto c = e.as_int()) return *c;
  std::optional<int64_t> h = ctx.shapes.int_hint(e);
  if (!h) ctx.fail(std::string(what) + " `" + e.str() + "` must be known at compile time");
  ctx.guard(sym::eq(e, SymExpr::integer(*h)));
  return *h;
}

TensorMeta view_of(const TensorMeta& base, std::vector<SymExpr> sizes, std::vector<SymExpr> strides, SymExpr offset) {
  TensorMeta m = base;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.offset = std::move(offset);
  return m;
}

// The shape argument of view/reshape with a -1 inferred; the numel must match.
std::vector<SymExpr> infer_size(MetaContext& ctx, const TensorMeta& m, std::vector<SymExpr> shape) {
  SymExpr numel = simp(ctx, m.numel());
  std::optional<size_t> infer;
  SymExpr known = SymExpr::integer(1);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].as_int() == std::optional<int64_t>(-1)) {
      if (infer) ctx.fail("only one dimension can be inferred");
      infer = i;
    } else if (shape[i].as_int() && *shape[i].as_int() < 0) {
      ctx.fail("invalid shape dimension " + shape[i].str());
    } else {
      known = known * shape[i];
    }
  }
  known = simp(ctx, known);
  auto bad = [&] { ctx.fail("shape '" + shape_str(shape) + "' is invalid for input of size " + numel.str()); };
  if (infer) {
    if (known.as_int() == std::optional<int64_t>(0)) bad();
    SymExpr q = simp(ctx, sym::floordiv(numel, known));
    if (!same(ctx, q * known, numel)) bad();
    shape[*infer] = q;
  } else if (!same(ctx, known, numel)) {
    bad();
  }
  return shape;
}

// c10's computeStride: strides of a view of (sizes, strides) as `shape`, or nullopt when the
// view would span non-contiguous chunks.
std::optional<std::vector<SymExpr>> view_strides(MetaContext& ctx, const TensorMeta& m, const std::vector<SymExpr>& shape) {
  const std::vector<SymExpr>& os = m.sizes;
  const std::vector<SymExpr>& ost = m.strides;
  if (os.empty() || m.is_contiguous()) return contiguous_strides(shape);
  SymExpr numel = simp(ctx, m.numel());
  if (numel.as_int() == std::optional<int64_t>(0)) return os == shape ? ost : contiguous_strides(shape);
  std::vector<SymExpr> out(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  SymExpr chunk = ost.back();
  SymExpr tensor_numel = SymExpr::integer(1), view_numel = SymExpr::integer(1);
  for (int64_t d = static_cast<int64_t>(os.size()) - 1; d >= 0; --d) {
    tensor_numel = simp(ctx, tensor_numel * os[static_cast<size_t>(d)]);
    bool chunk_end = d == 0;
    if (!chunk_end) {
      size_t p = static_cast<size_t>(d - 1);
      chunk_end = !is_one(ctx, os[p]) && !same(ctx, ost[p], tensor_numel * chunk);
    }
    if (!chunk_end) continue;
    while (view_d >= 0) {
      SymExpr nd = shape[static_cast<size_t>(view_d)];
      bool less = !same(ctx, view_numel, tensor_numel) && ctx.guard(sym::lt(view_numel, tensor_numel));
      if (!less && !is_one(ctx, nd)) break;
      out[static_cast<size_t>(view_d)] = simp(ctx, view_numel * chunk);
      view_numel = simp(ctx, view_numel * nd);
      --view_d;
    }
    if (!same(ctx, view_numel, tensor_numel)) return std::nullopt;
    if (d > 0) {
      chunk = ost[static_cast<size_t>(d - 1)];
      tensor_numel = SymExpr::integer(1);
      view_numel = SymExpr::integer(1);
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Results view(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<SymExpr> shape = infer_size(ctx, m, a.int_list(a.schema().arguments[1].name));
  std::optional<std::vector<SymExpr>> st = view_strides(ctx, m, shape);
  if (!st)
    ctx.fail("view size is not compatible with input tensor's size and stride (at least one dimension spans "
             "across two contiguous subspaces); use .reshape(...) instead");
  return {ResultSpec::tensor(view_of(m, shape, *st, m.offset))};
}

// reshape is a view when one exists, else a contiguous copy.
Results reshape(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<SymExpr> shape = infer_size(ctx, m, a.int_list("shape"));
  if (std::optional<std::vector<SymExpr>> st = view_strides(ctx, m, shape))
    return {ResultSpec::tensor(view_of(m, shape, *st, m.offset))};
  return {ResultSpec::tensor(fresh_contiguous(ctx, m.dtype, m.device, shape))};
}

Results expand(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<SymExpr> target = a.int_list("size");
  size_t n = target.size(), r = m.sizes.size();
  if (n < r)
    ctx.fail("the number of sizes provided (" + std::to_string(n) +
             ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(r) + ")");
  std::vector<SymExpr> sizes(n), strides(n);
  for (size_t i = 0; i < n; ++i) {
    SymExpr t = target[i];
    bool keep = t.as_int() == std::optional<int64_t>(-1);
    if (i < n - r) {
      if (keep) ctx.fail("the expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension " + std::to_string(i));
      sizes[i] = t;
      strides[i] = SymExpr::integer(0);
      continue;
    }
    SymExpr s = m.sizes[i - (n - r)], st = m.strides[i - (n - r)];
    if (keep || same(ctx, s, t)) {
      sizes[i] = s;
      strides[i] = st;
    } else if (is_one(ctx, s)) {
      sizes[i] = t;
      strides[i] = SymExpr::integer(0);
    } else {
      ctx.fail("the expanded size of the tensor (" + t.str() + ") must match the existing size (" + s.str() +
               ") at non-singleton dimension " + std::to_string(i) + "; target sizes: " + shape_str(target) +
               ", tensor sizes: " + shape_str(m.sizes));
    }
  }
  return {ResultSpec::tensor(view_of(m, sizes, strides, m.offset))};
}

Results permute(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<SymExpr> dims = a.int_list("dims");
  if (static_cast<int64_t>(dims.size()) != m.rank())
    ctx.fail("number of dims don't match in permute: input has " + std::to_string(m.rank()) + " dims but " +
             std::to_string(dims.size()) + " were given");
  std::vector<SymExpr> sizes, strides;
  std::set<int64_t> seen;
  for (SymExpr e : dims) {
    int64_t d = wrap_dim(ctx, const_int(ctx, e, "dim"), m.rank());
    if (!seen.insert(d).second) ctx.fail("repeated dim " + std::to_string(d) + " in permute");
    sizes.push_back(m.sizes[static_cast<size_t>(d)]);
    strides.push_back(m.strides[static_cast<size_t>(d)]);
  }
  return {ResultSpec::tensor(view_of(m, sizes, strides, m.offset))};
}

Results transpose_dims(MetaContext& ctx, const TensorMeta& m, int64_t d0, int64_t d1) {
  TensorMeta r = m;
  if (m.rank() == 0) {
    wrap_dim(ctx, d0, 0);
    wrap_dim(ctx, d1, 0);
    return {ResultSpec::tensor(r)};
  }
  size_t a = static_cast<size_t>(wrap_dim(ctx, d0, m.rank())), b = static_cast<size_t>(wrap_dim(ctx, d1, m.rank()));
  std::swap(r.sizes[a], r.sizes[b]);
  std::swap(r.strides[a], r.strides[b]);
  return {ResultSpec::tensor(r)};
}

Results transpose(const BoundArgs& a, MetaContext& ctx) {
  return transpose_dims(ctx, self_meta(a, ctx), const_int(ctx, a.scalar("dim0"), "dim0"),
                        const_int(ctx, a.scalar("dim1"), "dim1"));
}

Results t(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (m.rank() > 2)
    ctx.fail("t() expects a tensor with <= 2 dimensions, but self is " + std::to_string(m.rank()) + "D");
  if (m.rank() < 2) return {ResultSpec::tensor(m)};
  return transpose_dims(ctx, m, 0, 1);
}

Results alias(const BoundArgs& a, MetaContext& ctx) { return {ResultSpec::tensor(self_meta(a, ctx))}; }

Results squeeze_dims(MetaContext& ctx, const TensorMeta& m, const std::vector<bool>& which) {
  std::vector<SymExpr> sizes, strides;
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    if (which[i] && is_one(ctx, m.sizes[i])) continue;
    sizes.push_back(m.sizes[i]);
    strides.push_back(m.strides[i]);
  }
  return {ResultSpec::tensor(view_of(m, sizes, strides, m.offset))};
}

Results squeeze(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  const std::string& ov = a.schema().overload;
  std::vector<bool> which(m.sizes.size(), ov == "default");
  if (ov != "default") {
    std::vector<SymExpr> dims = ov == "dim" ? std::vector<SymExpr>{a.scalar("dim")} : a.int_list("dim");
    for (SymExpr e : dims) {
      int64_t d = wrap_dim(ctx, const_int(ctx, e, "dim"), m.rank());
      if (m.rank() > 0) which[static_cast<size_t>(d)] = true;
    }
  }
  return squeeze_dims(ctx, m, which);
}

Results unsqueeze(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank() + 1));
  std::vector<SymExpr> sizes = m.sizes, strides = m.strides;
  SymExpr st = d >= m.sizes.size() ? SymExpr::integer(1) : simp(ctx, m.sizes[d] * m.strides[d]);
  sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(d), SymExpr::integer(1));
  strides.insert(strides.begin() + static_cast<std::ptrdiff_t>(d), st);
  return {ResultSpec::tensor(view_of(m, sizes, strides, m.offset))};
}

Results select(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (m.rank() == 0) ctx.fail("select() cannot be applied to a 0-dim tensor");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank()));
  SymExpr size = m.sizes[d], index = a.scalar("index");
  if (!index) ctx.fail("index must be given");
  auto out_of_range = [&] {
    ctx.fail("select(): index " + index.str() + " out of range for tensor of size " + shape_str(m.sizes) +
             " at dimension " + std::to_string(d));
  };
  if (ctx.guard(sym::lt(index, SymExpr::integer(0)))) {
    if (ctx.guard(sym::lt(index, sym::neg(size)))) out_of_range();
    index = simp(ctx, index + size);
  } else if (ctx.guard(sym::le(size, index))) {
    out_of_range();
  }
  std::vector<SymExpr> sizes = m.sizes, strides = m.strides;
  sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(d));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(d));
  return {ResultSpec::tensor(view_of(m, sizes, strides, simp(ctx, m.offset + index * m.strides[d])))};
}

// Clamps a slice bound into [0, size] as PyTorch does (negative bounds count from the end).
SymExpr clamp_bound(MetaContext& ctx, SymExpr e, SymExpr size) {
  if (auto c = e.as_int(); c && *c >= (int64_t{1} << 62)) return size;  // "to the end"
  if (e.as_int() == std::optional<int64_t>(0)) return e;
  if (ctx.guard(sym::lt(e, SymExpr::integer(0)))) e = simp(ctx, e + size);
  if (ctx.guard(sym::lt(e, SymExpr::integer(0)))) return SymExpr::integer(0);
  if (e != size && ctx.guard(sym::le(size, e))) return size;
  return e;
}

// A narrowed view of dim d: [start, start + len) with step.
TensorMeta narrow(MetaContext& ctx, const TensorMeta& m, size_t d, SymExpr start, SymExpr len, int64_t step = 1) {
  std::vector<SymExpr> sizes = m.sizes, strides = m.strides;
  sizes[d] = step == 1 ? simp(ctx, len) : simp(ctx, sym::floordiv(len + (step - 1), SymExpr::integer(step)));
  strides[d] = simp(ctx, m.strides[d] * step);
  return view_of(m, sizes, strides, simp(ctx, m.offset + start * m.strides[d]));
}

Results slice(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (m.rank() == 0) ctx.fail("slice() cannot be applied to a 0-dim tensor");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank()));
  int64_t step = const_int(ctx, a.scalar("step"), "step");
  if (step <= 0) ctx.fail("slice step must be positive");
  SymExpr size = m.sizes[d];
  SymExpr start = a.is_none("start") ? SymExpr::integer(0) : a.scalar("start");
  SymExpr end = a.is_none("end") ? size : a.scalar("end");
  start = clamp_bound(ctx, start, size);
  end = clamp_bound(ctx, end, size);
  if (end != start && ctx.guard(sym::lt(end, start))) end = start;
  return {ResultSpec::tensor(narrow(ctx, m, d, start, end - start, step))};
}

Results diagonal(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  int64_t off = const_int(ctx, a.scalar("offset"), "offset");
  size_t d1 = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim1"), "dim1"), m.rank()));
  size_t d2 = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim2"), "dim2"), m.rank()));
  if (d1 == d2) ctx.fail("diagonal dimensions cannot be identical " + std::to_string(d1) + ", " + std::to_string(d2));
  SymExpr zero = SymExpr::integer(0), o = SymExpr::integer(off);
  SymExpr len, offset = m.offset;
  if (off >= 0) {
    len = simp(ctx, sym::max(sym::min(m.sizes[d1], m.sizes[d2] - off), zero));
    offset = offset + o * m.strides[d2];
  } else {
    len = simp(ctx, sym::max(sym::min(m.sizes[d1] + off, m.sizes[d2]), zero));
    offset = offset - o * m.strides[d1];
  }
  // An empty diagonal keeps the base offset.
  if (ctx.size_oblivious(sym::eq(len, zero))) offset = m.offset;
  std::vector<SymExpr> sizes, strides;
  for (size_t i = 0; i < m.sizes.size(); ++i) {
    if (i == d1 || i == d2) continue;
    sizes.push_back(m.sizes[i]);
    strides.push_back(m.strides[i]);
  }
  sizes.push_back(len);
  strides.push_back(simp(ctx, m.strides[d1] + m.strides[d2]));
  return {ResultSpec::tensor(view_of(m, sizes, strides, simp(ctx, offset)))};
}

Results as_strided(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  std::vector<SymExpr> sizes = a.int_list("size"), strides = a.int_list("stride");
  if (sizes.size() != strides.size())
    ctx.fail("mismatch in length of strides and shape (" + std::to_string(strides.size()) + " vs " +
             std::to_string(sizes.size()) + ")");
  for (SymExpr s : strides)
    if (s.as_int() && *s.as_int() < 0) ctx.fail("as_strided: negative strides are not supported, got " + shape_str(strides));
  SymExpr offset = a.is_none("storage_offset") ? m.offset : a.scalar("storage_offset");
  return {ResultSpec::tensor(view_of(m, sizes, strides, offset))};
}

Results split_sizes(MetaContext& ctx, const TensorMeta& m, size_t d, const std::vector<SymExpr>& lens) {
  Results out;
  SymExpr start = SymExpr::integer(0);
  for (SymExpr len : lens) {
    out.push_back(ResultSpec::tensor(narrow(ctx, m, d, start, len)));
    start = simp(ctx, start + len);
  }
  return out;
}

Results split_with_sizes(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (m.rank() == 0) ctx.fail("split expects at least a 1-dimensional tensor");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank()));
  std::vector<SymExpr> lens = a.int_list("split_sizes");
  for (SymExpr l : lens)
    if (l.as_int() && *l.as_int() < 0) ctx.fail("split_with_sizes expects split_sizes have only non-negative entries");
  SymExpr total = SymExpr::integer(0);
  for (SymExpr l : lens) total = total + l;
  if (!same(ctx, total, m.sizes[d]))
    ctx.fail("split_with_sizes expects split_sizes to sum exactly to " + m.sizes[d].str() +
             " (input tensor's size at dimension " + std::to_string(d) + "), but got split_sizes=" + shape_str(lens));
  return split_sizes(ctx, m, d, lens);
}

Results split(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (m.rank() == 0) ctx.fail("split expects at least a 1-dimensional tensor");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank()));
  SymExpr split_size = a.scalar("split_size"), dim_size = m.sizes[d];
  int64_t ss = concrete(ctx, split_size, "split_size");
  if (ss < 0) ctx.fail("split expects split_size be non-negative, but got split_size=" + std::to_string(ss));
  int64_t ds = concrete(ctx, dim_size, "split dimension size");
  if (ss == 0 && ds != 0) ctx.fail("split_size can only be 0 if dimension size is 0, but got dimension size of " + std::to_string(ds));
  int64_t n = ss == 0 ? 1 : std::max<int64_t>((ds + ss - 1) / ss, 1);
  std::vector<SymExpr> lens(static_cast<size_t>(n), split_size);
  lens.back() = simp(ctx, dim_size - split_size * (n - 1));
  return split_sizes(ctx, m, d, lens);
}

Results unbind(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& m = self_meta(a, ctx);
  if (m.rank() == 0) ctx.fail("dimension specified as 0 but tensor has no dimensions");
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), m.rank()));
  int64_t n = concrete(ctx, m.sizes[d], "unbind dimension size");
  Results out;
  std::vector<SymExpr> sizes = m.sizes, strides = m.strides;
  sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(d));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(d));
  for (int64_t i = 0; i < n; ++i)
    out.push_back(ResultSpec::tensor(view_of(m, sizes, strides, simp(ctx, m.offset + m.strides[d] * i))));
  return out;
}

}  // namespace

std::vector<MetaImpl> view_meta_impls() {
  return {
      {"aten.view.default", view}, {"aten._unsafe_view.default", view}, {"aten.reshape.default", reshape},
      {"aten.expand.default", expand}, {"aten.permute.default", permute}, {"aten.transpose.int", transpose},
      {"aten.t.default", t}, {"aten.squeeze.default", squeeze}, {"aten.squeeze.dim", squeeze},
      {"aten.squeeze.dims", squeeze}, {"aten.unsqueeze.default", unsqueeze}, {"aten.select.int", select},
      {"aten.slice.Tensor", slice}, {"aten.diagonal.default", diagonal}, {"aten.alias.default", alias},
      {"aten.detach.default", alias}, {"aten.as_strided.default", as_strided},
      {"aten.split_with_sizes.default", split_with_sizes}, {"aten.split.Tensor", split},
      {"aten.unbind.int", unbind},
  };
}

}  // namespace toroid::ops
