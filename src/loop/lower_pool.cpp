// Pooling: max_pool2d_with_indices and avg_pool2d as pointwise values over the output, the window
// unrolled (as Inductor does for small windows), so they fuse with what reads them and with their
// input's producer instead of running the reference kernel.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lowering.h"

namespace toroid::loop {

namespace {

using ops::BoundArgs;

// Past this many window elements a pool runs its reference kernel: every element is a load and
// a compare in the unrolled body.
constexpr int64_t kMaxUnrolledWindow = 64;

// Why a pool's window does not unroll (empty: it does): `constant` parameters, a floating
// `dtype`, at most kMaxUnrolledWindow `elements`.
std::string unrolled_window_problem(bool constant, DType dtype, int64_t elements) {
  if (!constant) return "a symbolic kernel size, stride, padding or dilation";
  if (!is_floating(dtype)) return std::string("no generated pool for ") + dtype_torch_name(dtype);
  if (elements > kMaxUnrolledWindow)
    return "a window of " + std::to_string(elements) + " elements (windows of at most " +
           std::to_string(kMaxUnrolledWindow) + " are unrolled)";
  return "";
}

// The op's 2-d parameter `name` as two constants (one value repeats; `fallback` when empty, as
// stride defaults to the kernel size); nullopt when one is symbolic.
std::optional<std::array<int64_t, 2>> pair_param(const BoundArgs& a, std::string_view name,
                                                 std::optional<std::array<int64_t, 2>> fallback = std::nullopt) {
  std::vector<SymExpr> v = a.int_list(name);
  if (v.empty()) return fallback;
  if (v.size() == 1) v.push_back(v[0]);
  std::array<int64_t, 2> out{};
  for (size_t i = 0; i < 2; ++i) {
    std::optional<int64_t> c = v[i].as_int();
    if (!c) return std::nullopt;
    out[i] = *c;
  }
  return out;
}

// 0 <= pos < size.
Expr in_range(SymExpr pos, SymExpr size) {
  Expr v = index_value(pos), zero = int_constant(0, DType::Int64);
  return binary(Op::LogicalAnd, binary(Op::Ge, v, zero), binary(Op::Lt, v, cast(index_value(size), DType::Int64)));
}

// Along one dim, the output position `o` whose window reaches input position `i` through window
// offset `offset` (o * stride - pad + offset == i): whether one exists within `out_size`, and `o`
// clamped into range (for loads; meaningful only where it exists).
Expr reaching(SymExpr i, int64_t pad, int64_t offset, int64_t stride, SymExpr out_size, SymExpr* o, SymExpr* clamped) {
  SymExpr t = i + pad - offset;  // = o * stride
  *o = sym::floordiv(t, stride);
  *clamped = sym::max(sym::min(*o, out_size - 1), SymExpr::integer(0));
  Expr zero = int_constant(0, DType::Int64);
  return binary(Op::LogicalAnd, binary(Op::Ge, index_value(t), zero),
                binary(Op::LogicalAnd, binary(Op::Eq, index_value(sym::mod(t, stride)), zero),
                       binary(Op::Lt, index_value(*o), cast(index_value(out_size), DType::Int64))));
}

// PyTorch's kernels walk the window in order and take an element when `val > max || isnan(val)`,
// starting from -inf at the first in-bounds position; out-of-bounds (padding) positions are
// skipped. The chains below do the same per output element.
void max_pool2d_with_indices(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  const TensorMeta& im = in->meta();
  std::optional<std::array<int64_t, 2>> k = pair_param(a, "kernel_size");
  std::optional<std::array<int64_t, 2>> s = k ? pair_param(a, "stride", k) : std::nullopt;
  std::optional<std::array<int64_t, 2>> p = pair_param(a, "padding");
  std::optional<std::array<int64_t, 2>> d = pair_param(a, "dilation");
  if (std::string why = unrolled_window_problem(k && s && p && d, im.dtype, k ? (*k)[0] * (*k)[1] : 0); !why.empty()) {
    L.fallback(n, why);
    return;
  }
  const Value* values = n->result(0);
  const Value* indices = n->result(1);
  const size_t rank = values->meta().sizes.size();
  DType cd = compute_dtype(im.dtype);
  Index idx = Lowering::vars(rank);
  SymExpr height = im.sizes[rank - 2], width = im.sizes[rank - 1];
  std::vector<Expr> inside, value, position;
  for (int64_t kh = 0; kh < (*k)[0]; ++kh)
    for (int64_t kw = 0; kw < (*k)[1]; ++kw) {
      SymExpr h = idx[rank - 2] * (*s)[0] - (*p)[0] + kh * (*d)[0];
      SymExpr w = idx[rank - 1] * (*s)[1] - (*p)[1] + kw * (*d)[1];
      inside.push_back(binary(Op::LogicalAnd, in_range(h, height), in_range(w, width)));
      Index src(idx.begin(), idx.end());  // clamped: a position outside is never read
      src[rank - 2] = sym::max(sym::min(h, height - 1), SymExpr::integer(0));
      src[rank - 1] = sym::max(sym::min(w, width - 1), SymExpr::integer(0));
      value.push_back(cast(L.load(in, src), cd));
      position.push_back(index_value(h * width + w));
    }
  Expr first = position.back();  // the first in-bounds position, in window order
  for (size_t i = position.size() - 1; i-- > 0;) first = where(inside[i], position[i], first);
  Expr best = constant(-std::numeric_limits<double>::infinity(), cd), at = first;
  for (size_t i = 0; i < value.size(); ++i) {
    Expr take = binary(Op::LogicalAnd, inside[i],
                       binary(Op::LogicalOr, binary(Op::Gt, value[i], best), unary(Op::IsNan, value[i])));
    best = where(take, value[i], best);
    at = where(take, position[i], at);
  }
  L.define_pointwise(values, cast(best, values->meta().dtype));
  L.define_pointwise(indices, at);
}

// An avg pool's parameters, when the window unrolls: constant kernel, stride and padding, a
// floating input, and a constant nonzero divisor_override if any (0 fails in the meta).
struct AvgWindow {
  std::array<int64_t, 2> k, s, p;
  SymExpr divisor;  // divisor_override, or null
  bool count_padding = true;
};

// Why not (empty: it unrolls).
std::string avg_window(const BoundArgs& a, DType dtype, AvgWindow* w) {
  std::optional<std::array<int64_t, 2>> k = pair_param(a, "kernel_size");
  std::optional<std::array<int64_t, 2>> s = k ? pair_param(a, "stride", k) : std::nullopt;
  std::optional<std::array<int64_t, 2>> p = pair_param(a, "padding");
  SymExpr divisor = a.scalar("divisor_override");
  if (!divisor.is_null() && divisor.as_int().value_or(0) == 0) return "a symbolic divisor_override";
  if (std::string why = unrolled_window_problem(k && s && p, dtype, k ? (*k)[0] * (*k)[1] : 0); !why.empty()) return why;
  *w = AvgWindow{*k, *s, *p, divisor, a.scalar("count_include_pad") != SymExpr::boolean(false)};
  return "";
}

// What PyTorch divides output position `o` (its two spatial indices) by, over an input of
// spatial `sizes`: the window clamped to the padded input (count_include_pad), or its in-bounds
// part, or divisor_override.
SymExpr avg_divisor(const AvgWindow& w, const SymExpr o[2], const SymExpr sizes[2]) {
  if (!w.divisor.is_null()) return w.divisor;
  SymExpr window = SymExpr::integer(1), valid = SymExpr::integer(1);
  for (size_t d = 0; d < 2; ++d) {
    SymExpr start = o[d] * w.s[d] - w.p[d];
    SymExpr end = sym::min(start + w.k[d], sizes[d] + w.p[d]);
    window = window * (end - start);
    valid = valid * sym::max(sym::min(end, sizes[d]) - sym::max(start, SymExpr::integer(0)), SymExpr::integer(0));
  }
  return w.count_padding ? window : valid;
}

// avg_pool2d as PyTorch computes it: the sum of the window's in-bounds elements over
// avg_divisor.
void avg_pool2d(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  const TensorMeta& im = in->meta();
  AvgWindow window;
  if (std::string why = avg_window(a, im.dtype, &window); !why.empty()) {
    L.fallback(n, why);
    return;
  }
  const AvgWindow* w = &window;
  const Value* out = n->result(0);
  const size_t rank = out->meta().sizes.size();
  DType cd = compute_dtype(im.dtype);
  Index idx = Lowering::vars(rank);
  const SymExpr sizes[2] = {im.sizes[rank - 2], im.sizes[rank - 1]};
  const SymExpr o[2] = {idx[rank - 2], idx[rank - 1]};
  Expr sum = constant(0.0, cd);
  for (int64_t kh = 0; kh < w->k[0]; ++kh)
    for (int64_t kw = 0; kw < w->k[1]; ++kw) {
      const SymExpr pos[2] = {o[0] * w->s[0] - w->p[0] + kh, o[1] * w->s[1] - w->p[1] + kw};
      Expr inside = binary(Op::LogicalAnd, in_range(pos[0], sizes[0]), in_range(pos[1], sizes[1]));
      Index src(idx.begin(), idx.end());  // clamped: a position outside is never read
      for (size_t d = 0; d < 2; ++d) src[rank - 2 + d] = sym::max(sym::min(pos[d], sizes[d] - 1), SymExpr::integer(0));
      sum = binary(Op::Add, sum, where(inside, cast(L.load(in, src), cd), constant(0.0, cd)));
    }
  L.define_pointwise(out, cast(binary(Op::Div, sum, cast(index_value(avg_divisor(*w, o, sizes)), cd)), out->meta().dtype));
}

// avg_pool2d_backward per input element: the gradient of each output position whose window
// holds it (one per window offset at most), over that position's divisor.
void avg_pool2d_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* grad = a.tensor("grad_output");
  const Value* out = n->result(0);
  const TensorMeta& om = out->meta();
  AvgWindow window;
  if (std::string why = avg_window(a, om.dtype, &window); !why.empty()) {
    L.fallback(n, why);
    return;
  }
  const AvgWindow* w = &window;
  const size_t rank = om.sizes.size();
  DType cd = compute_dtype(om.dtype);
  Index idx = Lowering::vars(rank);
  const SymExpr sizes[2] = {om.sizes[rank - 2], om.sizes[rank - 1]};
  const SymExpr out_sizes[2] = {grad->meta().sizes[rank - 2], grad->meta().sizes[rank - 1]};
  Expr sum = constant(0.0, cd);
  for (int64_t kh = 0; kh < w->k[0]; ++kh)
    for (int64_t kw = 0; kw < w->k[1]; ++kw) {
      const int64_t offset[2] = {kh, kw};
      Expr holds = int_constant(1, DType::Bool);
      SymExpr o[2];
      Index at(idx.begin(), idx.end());
      for (size_t d = 0; d < 2; ++d)
        holds = binary(Op::LogicalAnd, holds,
                       reaching(idx[rank - 2 + d], w->p[d], offset[d], w->s[d], out_sizes[d], &o[d], &at[rank - 2 + d]));
      Expr share = binary(Op::Div, cast(L.load(grad, at), cd), cast(index_value(avg_divisor(*w, o, sizes)), cd));
      sum = binary(Op::Add, sum, where(holds, share, constant(0.0, cd)));
    }
  L.define_pointwise(out, cast(sum, om.dtype));
}

// Adaptive pools: output position o of n over an input of m covers [floor(o*m/n), ceil((o+1)*m/n)).
struct AdaptiveDim {
  int64_t in = 0, out = 0;
  int64_t span = 0;    // the most input positions one output covers
  int64_t reach = 0;   // the most output positions covering one input position
};

// Both spatial dims, when their sizes are constants and the unrolled loops stay small.
std::optional<std::array<AdaptiveDim, 2>> adaptive_dims(const TensorMeta& in, const TensorMeta& out, DType dtype) {
  const size_t rank = in.sizes.size();
  if (!is_floating(dtype) || rank < 3 || out.sizes.size() != rank) return std::nullopt;
  std::array<AdaptiveDim, 2> dims;
  for (size_t d = 0; d < 2; ++d) {
    std::optional<int64_t> m = in.sizes[rank - 2 + d].as_int(), n = out.sizes[rank - 2 + d].as_int();
    if (!m || !n || *m <= 0 || *n <= 0) return std::nullopt;
    AdaptiveDim& a = dims[d];
    a.in = *m;
    a.out = *n;
    for (int64_t o = 0; o < *n; ++o) a.span = std::max(a.span, ((o + 1) * *m + *n - 1) / *n - o * *m / *n);
    for (int64_t i = 0; i < *m; ++i) a.reach = std::max(a.reach, ((i + 1) * *n + *m - 1) / *m - i * *n / *m);
  }
  if (dims[0].span * dims[1].span > kMaxUnrolledWindow || dims[0].reach * dims[1].reach > kMaxUnrolledWindow)
    return std::nullopt;
  return dims;
}

const std::string kAdaptiveNotUnrolled = "symbolic spatial sizes, a window of over " +
                                         std::to_string(kMaxUnrolledWindow) +
                                         " elements, or no generated pool for the dtype";

SymExpr adaptive_start(SymExpr o, const AdaptiveDim& d) { return sym::floordiv(o * d.in, d.out); }
SymExpr adaptive_end(SymExpr o, const AdaptiveDim& d) { return sym::floordiv((o + 1) * d.in + d.out - 1, d.out); }

// _adaptive_avg_pool2d: the mean of each output's window, unrolled to its largest span.
void adaptive_avg_pool2d(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  const Value* out = n->result(0);
  std::optional<std::array<AdaptiveDim, 2>> dims = adaptive_dims(in->meta(), out->meta(), in->meta().dtype);
  if (!dims) {
    L.fallback(n, kAdaptiveNotUnrolled);
    return;
  }
  const size_t rank = out->meta().sizes.size();
  DType cd = compute_dtype(in->meta().dtype);
  Index idx = Lowering::vars(rank);
  SymExpr start[2], end[2];
  for (size_t d = 0; d < 2; ++d) {
    start[d] = adaptive_start(idx[rank - 2 + d], (*dims)[d]);
    end[d] = adaptive_end(idx[rank - 2 + d], (*dims)[d]);
  }
  Expr sum = constant(0.0, cd);
  for (int64_t jh = 0; jh < (*dims)[0].span; ++jh)
    for (int64_t jw = 0; jw < (*dims)[1].span; ++jw) {
      const SymExpr pos[2] = {start[0] + jh, start[1] + jw};
      Expr inside = binary(Op::LogicalAnd, binary(Op::Lt, index_value(pos[0]), index_value(end[0])),
                           binary(Op::Lt, index_value(pos[1]), index_value(end[1])));
      Index src(idx.begin(), idx.end());
      for (size_t d = 0; d < 2; ++d) src[rank - 2 + d] = sym::min(pos[d], SymExpr::integer((*dims)[d].in - 1));
      sum = binary(Op::Add, sum, where(inside, cast(L.load(in, src), cd), constant(0.0, cd)));
    }
  SymExpr count = (end[0] - start[0]) * (end[1] - start[1]);
  L.define_pointwise(out, cast(binary(Op::Div, sum, cast(index_value(count), cd)), out->meta().dtype));
}

// _adaptive_avg_pool2d_backward per input element: each covering output's gradient over its
// window's size. The covering outputs of input position i along a dim run from
// floor(i*n/m) up to ceil((i+1)*n/m) - 1.
void adaptive_avg_pool2d_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* grad = a.tensor("grad_output");
  const Value* out = n->result(0);
  std::optional<std::array<AdaptiveDim, 2>> dims = adaptive_dims(out->meta(), grad->meta(), out->meta().dtype);
  if (!dims) {
    L.fallback(n, kAdaptiveNotUnrolled);
    return;
  }
  const size_t rank = out->meta().sizes.size();
  DType cd = compute_dtype(out->meta().dtype);
  Index idx = Lowering::vars(rank);
  SymExpr first[2], last[2];  // the covering outputs, inclusive
  for (size_t d = 0; d < 2; ++d) {
    const AdaptiveDim& ad = (*dims)[d];
    first[d] = sym::floordiv(idx[rank - 2 + d] * ad.out, ad.in);
    last[d] = sym::floordiv((idx[rank - 2 + d] + 1) * ad.out + ad.in - 1, ad.in) - 1;
  }
  Expr sum = constant(0.0, cd);
  for (int64_t jh = 0; jh < (*dims)[0].reach; ++jh)
    for (int64_t jw = 0; jw < (*dims)[1].reach; ++jw) {
      const SymExpr o[2] = {first[0] + jh, first[1] + jw};
      Expr covers = binary(Op::LogicalAnd, binary(Op::Le, index_value(o[0]), index_value(last[0])),
                           binary(Op::Le, index_value(o[1]), index_value(last[1])));
      Index at(idx.begin(), idx.end());
      SymExpr count = SymExpr::integer(1);
      for (size_t d = 0; d < 2; ++d) {
        SymExpr oc = sym::min(o[d], SymExpr::integer((*dims)[d].out - 1));
        at[rank - 2 + d] = oc;
        count = count * (adaptive_end(oc, (*dims)[d]) - adaptive_start(oc, (*dims)[d]));
      }
      Expr share = binary(Op::Div, cast(L.load(grad, at), cd), cast(index_value(count), cd));
      sum = binary(Op::Add, sum, where(covers, share, constant(0.0, cd)));
    }
  L.define_pointwise(out, cast(sum, out->meta().dtype));
}

// max_pool2d_with_indices_backward as a value per input element: for each window offset, the
// one output position whose window reaches this element through it (if any) gives its gradient
// when its index names this element. Every output position counts once: an element and an
// output position meet through at most one offset.
void max_pool2d_with_indices_backward(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* grad = a.tensor("grad_output");
  const Value* indices = a.tensor("indices");
  std::optional<std::array<int64_t, 2>> k = pair_param(a, "kernel_size");
  std::optional<std::array<int64_t, 2>> s = k ? pair_param(a, "stride", k) : std::nullopt;
  std::optional<std::array<int64_t, 2>> p = pair_param(a, "padding");
  std::optional<std::array<int64_t, 2>> d = pair_param(a, "dilation");
  const Value* out = n->result(0);
  const TensorMeta& om = out->meta();
  if (std::string why = unrolled_window_problem(k && s && p && d, om.dtype, k ? (*k)[0] * (*k)[1] : 0); !why.empty()) {
    L.fallback(n, why);
    return;
  }
  const size_t rank = om.sizes.size();
  DType cd = compute_dtype(om.dtype);
  Index idx = Lowering::vars(rank);
  const TensorMeta& gm = grad->meta();
  const SymExpr out_sizes[2] = {gm.sizes[rank - 2], gm.sizes[rank - 1]};
  Expr here = index_value(idx[rank - 2] * om.sizes[rank - 1] + idx[rank - 1]);
  Expr sum = constant(0.0, cd);
  for (int64_t kh = 0; kh < (*k)[0]; ++kh)
    for (int64_t kw = 0; kw < (*k)[1]; ++kw) {
      const int64_t offset[2] = {kh * (*d)[0], kw * (*d)[1]};
      Expr reaches = int_constant(1, DType::Bool);
      Index at(idx.begin(), idx.end());
      for (size_t dim = 0; dim < 2; ++dim) {
        SymExpr o;
        reaches = binary(Op::LogicalAnd, reaches,
                         reaching(idx[rank - 2 + dim], (*p)[dim], offset[dim], (*s)[dim], out_sizes[dim], &o, &at[rank - 2 + dim]));
      }
      Expr chosen = binary(Op::LogicalAnd, reaches, binary(Op::Eq, cast(L.load(indices, at), DType::Int64), here));
      sum = binary(Op::Add, sum, where(chosen, cast(L.load(grad, at), cd), constant(0.0, cd)));
    }
  L.define_pointwise(out, cast(sum, om.dtype));
}

constexpr LowerRule kRules[] = {
    {"aten.max_pool2d_with_indices_backward.default", max_pool2d_with_indices_backward},
    {"aten.max_pool2d_with_indices.default", max_pool2d_with_indices},
    {"aten.avg_pool2d.default", avg_pool2d},
    {"aten.avg_pool2d_backward.default", avg_pool2d_backward},
    {"aten._adaptive_avg_pool2d.default", adaptive_avg_pool2d},
    {"aten._adaptive_avg_pool2d_backward.default", adaptive_avg_pool2d_backward},
};

}  // namespace

std::span<const LowerRule> pool_rules() { return kRules; }

}  // namespace toroid::loop
