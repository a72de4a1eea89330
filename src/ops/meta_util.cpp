// Type promotion, broadcasting and output strides, as PyTorch computes them.
#include "toroid/ops/meta_util.h"

#include <algorithm>
#include <numeric>

#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"

namespace toroid::ops::meta {

// ---------------------------------------------------------------------------------------------
// Type promotion

namespace {

int int_rank(DType d) {  // signed widths in order; u8 handled apart
  switch (d) {
    case DType::Int8: return 1;
    case DType::Int16: return 2;
    case DType::Int32: return 3;
    case DType::Int64: return 4;
    default: return 0;
  }
}

int float_rank(DType d) {
  switch (d) {
    case DType::Float16:
    case DType::BFloat16: return 1;
    case DType::Float32: return 2;
    case DType::Float64: return 3;
    default: return 0;
  }
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    // Complex wins; its width grows to hold a wider float (c64 with f64 is c128).
    if (a == DType::Complex128 || b == DType::Complex128 || a == DType::Float64 || b == DType::Float64)
      return DType::Complex128;
    return DType::Complex64;
  }
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    // f16 and bf16 have no common 16-bit type.
    if (float_rank(a) == 1 && float_rank(b) == 1) return DType::Float32;
    return float_rank(a) > float_rank(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  if (a == DType::UInt8) return b == DType::Int8 ? DType::Int16 : b;
  if (b == DType::UInt8) return a == DType::Int8 ? DType::Int16 : a;
  return int_rank(a) > int_rank(b) ? a : b;
}

DType combine_categories(DType higher, DType lower) {
  if (is_complex(higher)) return higher;
  if (is_complex(lower)) {
    // A complex of lower priority keeps a float's width (f64 with a c64 0-dim tensor is c128).
    if (!is_floating(higher)) return lower;
    if (std::optional<DType> c = complex_of(higher)) return *c;
    user_error(std::string("type promotion: no complex type for ") + dtype_short_name(higher) +
               " (complex32 is not supported)");
  }
  if (is_floating(higher)) return higher;
  if (higher == DType::Bool || is_floating(lower)) return promote_types(higher, lower);
  return higher;
}

Operand Operand::of_number(SymExpr e) {
  Operand o;
  o.number = e;
  o.number_dtype = e.is_bool() ? DType::Bool : e.is_float() ? DType::Float64 : DType::Int64;
  return o;
}

Operand operand(const BoundArgs& args, std::string_view name) {
  const Argument& a = args.get(name);
  if (a.is_scalar()) return Operand::of_number(a.scalar());
  if (a.is_value()) {
    const Value* v = a.value();
    if (v->is_tensor()) return Operand::of(v->meta());
    Operand o;
    o.number = v->scalar_value();
    o.number_dtype = v->type() == ValueType::Bool ? DType::Bool : v->type() == ValueType::Float ? DType::Float64
                                                                                                : DType::Int64;
    return o;
  }
  args.tensor(name);  // throws the UserError naming the argument
  user_error("argument '" + std::string(name) + "' of " + args.schema().qualified_name() + " must be a Tensor");
}

DType result_type(std::span<const Operand> ops) {
  std::optional<DType> dim, zero, wrapped;
  auto join = [](std::optional<DType>& acc, DType d) { acc = acc ? promote_types(*acc, d) : d; };
  for (const Operand& o : ops) {
    if (!o.is_tensor()) {
      // A wrapped Python float takes the default dtype.
      join(wrapped, o.number_dtype == DType::Float64 ? DType::Float32 : o.number_dtype);
    } else if (o.tensor->rank() == 0) {
      join(zero, o.tensor->dtype);
    } else {
      join(dim, o.tensor->dtype);
    }
  }
  // A lower-priority category only counts when it is of a higher kind.
  auto combine = [](std::optional<DType> higher, std::optional<DType> lower) -> std::optional<DType> {
    if (!higher || !lower) return higher ? higher : lower;
    return combine_categories(*higher, *lower);
  };
  std::optional<DType> r = combine(dim, combine(zero, wrapped));
  return r.value_or(DType::Float32);
}

DType apply_promotion(DType promoted, Promotion kind) {
  switch (kind) {
    case Promotion::Default:
    case Promotion::NoPromote: return promoted;
    case Promotion::IntToFloat: return is_floating(promoted) || is_complex(promoted) ? promoted : DType::Float32;
    case Promotion::AlwaysBool: return DType::Bool;
    case Promotion::BoolToLong: return promoted == DType::Bool ? DType::Int64 : promoted;
  }
  return promoted;
}

// ---------------------------------------------------------------------------------------------
// Shapes

std::string shape_str(const std::vector<SymExpr>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + sizes[i].str();
  return out + "]";
}

namespace {

bool is_const(SymExpr e, int64_t v) { return e.as_int() == std::optional<int64_t>(v); }

// Size-oblivious equality: structural, else decided (guarding on backed symbols).
bool eq(MetaContext& ctx, SymExpr a, SymExpr b) {
  if (a == b) return true;
  if (a.as_int() && b.as_int()) return false;
  return ctx.size_oblivious(sym::eq(a, b));
}
bool size_one(MetaContext& ctx, SymExpr s) { return eq(ctx, s, SymExpr::integer(1)); }
bool size_gt1(MetaContext& ctx, SymExpr s) {
  if (auto c = s.as_int()) return *c > 1;
  return ctx.size_oblivious(sym::lt(SymExpr::integer(1), s));
}
bool lt(MetaContext& ctx, SymExpr a, SymExpr b) {
  if (a == b) return false;
  if (a.as_int() && b.as_int()) return *a.as_int() < *b.as_int();
  return ctx.size_oblivious(sym::lt(a, b));
}
bool is_zero(MetaContext& ctx, SymExpr s) {
  if (auto c = s.as_int()) return *c == 0;
  return ctx.shapes.statically_known_true(sym::eq(s, SymExpr::integer(0)));
}

}  // namespace

std::vector<SymExpr> broadcast_shapes(MetaContext& ctx, std::span<const std::vector<SymExpr>> shapes) {
  std::vector<SymExpr> out;
  for (const std::vector<SymExpr>& s : shapes) {
    size_t n = std::max(out.size(), s.size());
    std::vector<SymExpr> r(n);
    for (size_t i = 0; i < n; ++i) {
      // Align on the right; a missing dim is 1.
      SymExpr a = i < n - out.size() ? SymExpr::integer(1) : out[i - (n - out.size())];
      SymExpr b = i < n - s.size() ? SymExpr::integer(1) : s[i - (n - s.size())];
      if (a == b) r[i] = a;
      else if (is_const(a, 1)) r[i] = b;
      else if (is_const(b, 1)) r[i] = a;
      else if (a.as_int() && b.as_int()) ctx.fail("shapes " + shape_str(out) + " and " + shape_str(s) + " cannot be broadcast");
      else if (size_one(ctx, a)) r[i] = b;
      else if (size_one(ctx, b)) r[i] = a;
      else if (ctx.guard(sym::eq(a, b))) r[i] = a;
      else ctx.fail("shapes " + shape_str(out) + " and " + shape_str(s) + " cannot be broadcast");
    }
    out = std::move(r);
  }
  return out;
}

int64_t wrap_dim(MetaContext& ctx, int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    ctx.fail("dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank) +
             " (expected to be in [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "])");
  return dim < 0 ? dim + r : dim;
}

int64_t const_int(MetaContext& ctx, SymExpr e, std::string_view what) {
  if (e.is_null()) ctx.fail(std::string(what) + " must be given");
  if (auto c = e.as_int()) return *c;
  if (auto c = ctx.shapes.simplify(e).as_int()) return *c;
  ctx.fail(std::string(what) + " must be a constant integer, not " + e.str());
}

// ---------------------------------------------------------------------------------------------
// Strides
//
// Each rule is written once, over a domain D: SymDom decides comparisons of symbolic sizes
// through the context (the meta functions), IntDom compares concrete ones (the reference
// kernels lay out their results with the same rules, so kernels and metas agree).

namespace {

struct SymDom {
  using T = SymExpr;
  MetaContext& ctx;
  static T lit(int64_t v) { return SymExpr::integer(v); }
  static bool is_lit(T e, int64_t v) { return is_const(e, v); }
  bool eq(T a, T b) const { return meta::eq(ctx, a, b); }
  bool lt(T a, T b) const { return meta::lt(ctx, a, b); }
  bool one(T s) const { return size_one(ctx, s); }
  bool gt1(T s) const { return size_gt1(ctx, s); }
  bool zero(T s) const { return is_zero(ctx, s); }
  static std::vector<T> contiguous(const std::vector<T>& sizes) { return toroid::contiguous_strides(sizes); }
  [[noreturn]] void fail(const std::string& m) const { ctx.fail(m); }
};

struct IntDom {
  using T = int64_t;
  static T lit(int64_t v) { return v; }
  static bool is_lit(T e, int64_t v) { return e == v; }
  static bool eq(T a, T b) { return a == b; }
  static bool lt(T a, T b) { return a < b; }
  static bool one(T s) { return s == 1; }
  static bool gt1(T s) { return s > 1; }
  static bool zero(T s) { return s == 0; }
  static std::vector<T> contiguous(const std::vector<T>& sizes) { return ops::contiguous_strides(sizes); }
  [[noreturn]] static void fail(const std::string& m) { user_error(m); }
};

template <class D>
using Vec = std::vector<typename D::T>;

template <class D>
bool contiguous_t(D& d, const Vec<D>& sizes, const Vec<D>& strides) {
  for (const auto& s : sizes)
    if (D::is_lit(s, 0)) return true;
  auto expected = D::lit(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    if (d.one(sizes[i])) continue;
    if (!d.eq(strides[i], expected)) return false;
    expected = expected * sizes[i];
  }
  return true;
}

template <class D>
bool channels_last_contiguous(D& d, const Vec<D>& sizes, const Vec<D>& strides, std::initializer_list<size_t> order) {
  auto expected = D::lit(1);
  for (size_t i : order) {
    if (d.one(sizes[i])) continue;
    if (!d.eq(strides[i], expected)) return false;
    expected = expected * sizes[i];
  }
  return true;
}

template <class D>
bool channels_last_t(D& d, const Vec<D>& sizes, const Vec<D>& strides) {
  return sizes.size() == 4 && channels_last_contiguous(d, sizes, strides, {1, 3, 2, 0});
}

template <class D>
bool channels_last_3d_t(D& d, const Vec<D>& sizes, const Vec<D>& strides) {
  return sizes.size() == 5 && channels_last_contiguous(d, sizes, strides, {1, 4, 3, 2, 0});
}

// Tensor.is_contiguous(memory_format): preserve_format is not a layout to test against.
template <class D>
bool contiguous_as_t(D& d, const Vec<D>& sizes, const Vec<D>& strides, MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return contiguous_t(d, sizes, strides);
    case MemoryFormat::ChannelsLast: return channels_last_t(d, sizes, strides);
    case MemoryFormat::ChannelsLast3d: return channels_last_3d_t(d, sizes, strides);
    case MemoryFormat::Preserve: break;
  }
  d.fail("is_contiguous does not support memory_format torch.preserve_format");
}

// c10's is_channels_last_strides_{2d,3d}: strides that look channels-last (not necessarily dense).
template <class D>
bool strides_like_channels_last(D& d, const Vec<D>& sizes, const Vec<D>& strides, std::initializer_list<size_t> order) {
  if (d.zero(strides[1])) return false;
  auto min = D::lit(0);
  for (size_t i : order) {
    if (d.zero(sizes[i])) return false;
    if (d.lt(strides[i], min)) return false;
    if (i == 0 && d.eq(min, strides[1])) return false;
    min = strides[i];
    if (d.gt1(sizes[i])) min = min * sizes[i];
  }
  return true;
}

template <class D>
bool dense_t(D& d, const Vec<D>& sizes, const Vec<D>& strides) {
  size_t n = sizes.size();
  if (n == 0) return true;
  if (n == 1) return !d.gt1(sizes[0]) || d.eq(strides[0], D::lit(1));
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Dims of size < 2 go last; the others by increasing stride.
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    bool sa = d.gt1(sizes[a]), sb = d.gt1(sizes[b]);
    if (!sa) return false;
    if (!sb) return true;
    return d.lt(strides[a], strides[b]);
  });
  auto require = D::lit(1);
  for (size_t i : perm) {
    if (!d.gt1(sizes[i])) return true;
    if (!d.eq(strides[i], require)) return false;
    require = require * sizes[i];
  }
  return true;
}

template <class D>
Vec<D> format_strides_t(D& d, const Vec<D>& sizes, MemoryFormat f) {
  if (f != MemoryFormat::ChannelsLast && f != MemoryFormat::ChannelsLast3d) return D::contiguous(sizes);
  size_t rank = f == MemoryFormat::ChannelsLast ? 4 : 5;
  if (sizes.size() != rank)
    d.fail(std::string("required rank ") + std::to_string(rank) + " tensor to use " + memory_format_torch_name(f) +
           " format, got rank " + std::to_string(sizes.size()));
  // Channels innermost, then the spatial dims from the last, then the batch.
  Vec<D> st(rank);
  st[1] = D::lit(1);
  auto running = sizes[1];
  for (size_t i = rank - 1; i >= 2; --i) {
    st[i] = running;
    running = running * sizes[i];
  }
  st[0] = running;
  return st;
}

template <class D>
MemoryFormat suggest_format_t(D& d, const Vec<D>& sizes, const Vec<D>& strides) {
  if (sizes.size() == 4 && strides_like_channels_last(d, sizes, strides, {1, 3, 2, 0})) return MemoryFormat::ChannelsLast;
  if (sizes.size() == 5 && strides_like_channels_last(d, sizes, strides, {1, 4, 3, 2, 0}))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

// Insertion sort with ambiguous comparisons, as TensorIterator's reorder_dimensions: starts
// from the reversed identity; cmp(d0, d1) > 0 moves d1 before d0, < 0 stops, 0 keeps looking.
template <typename Cmp>
std::vector<size_t> order_dims(size_t n, Cmp cmp) {
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (size_t i = 1; i < n; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      int c = cmp(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  return perm;
}

// Dense strides laying out the dims in `perm` order (innermost first).
template <class D>
Vec<D> dense_in_order(D& d, const Vec<D>& sizes, const std::vector<size_t>& perm, bool skip_size1) {
  Vec<D> out(sizes.size());
  auto running = D::lit(1);
  for (size_t i : perm) {
    out[i] = running;
    if (!skip_size1 || d.gt1(sizes[i])) running = running * sizes[i];
  }
  return out;
}

template <class D>
struct LayoutOf {
  const Vec<D>* sizes;
  const Vec<D>* strides;
};

template <class D>
Vec<D> elementwise_t(D& d, const Vec<D>& shape, std::span<const LayoutOf<D>> inputs, bool has_numbers) {
  size_t n = shape.size();
  if (inputs.empty() || n == 0) return D::contiguous(shape);
  // Fast setup: every operand of the output's shape and all contiguous, all channels-last, or
  // all dense with identical strides.
  bool same_shape = !has_numbers;
  for (const LayoutOf<D>& m : inputs) same_shape = same_shape && *m.sizes == shape;
  if (same_shape) {
    bool contiguous = true, cl = true, dense = true;
    for (const LayoutOf<D>& m : inputs) contiguous = contiguous && contiguous_t(d, *m.sizes, *m.strides);
    if (contiguous) return D::contiguous(shape);
    for (const LayoutOf<D>& m : inputs) cl = cl && channels_last_t(d, *m.sizes, *m.strides);
    if (cl) return format_strides_t(d, shape, MemoryFormat::ChannelsLast);
    for (const LayoutOf<D>& m : inputs) dense = dense && dense_t(d, *m.sizes, *m.strides);
    if (dense) {
      bool same = true;
      for (const LayoutOf<D>& m : inputs) same = same && *m.strides == *inputs.back().strides;
      if (same) return *inputs.back().strides;
    }
  }
  // General case: each input's strides over the output's dims (0 where broadcast).
  std::vector<Vec<D>> st;
  for (const LayoutOf<D>& m : inputs) {
    Vec<D> s(n, D::lit(0));
    size_t off = n - m.sizes->size();
    for (size_t i = 0; i < m.sizes->size(); ++i) {
      const auto& sz = (*m.sizes)[i];
      bool broadcast = sz != shape[off + i] && d.one(sz) && !d.one(shape[off + i]);
      s[off + i] = broadcast ? D::lit(0) : (*m.strides)[i];
    }
    st.push_back(std::move(s));
  }
  std::vector<size_t> perm = order_dims(n, [&](size_t d0, size_t d1) {
    for (const Vec<D>& s : st) {
      if (d.zero(s[d0]) || d.zero(s[d1])) continue;
      if (s[d0] != s[d1]) {
        if (d.lt(s[d0], s[d1])) return -1;
        if (d.lt(s[d1], s[d0])) return 1;
      }
      // Equal strides: the smaller size goes first.
      if (shape[d0] != shape[d1] && d.lt(shape[d1], shape[d0])) return 1;
    }
    return 0;
  });
  bool reversed_identity = true;
  for (size_t i = 0; i < n; ++i) reversed_identity = reversed_identity && perm[i] == n - 1 - i;
  if (reversed_identity) return D::contiguous(shape);
  return dense_in_order(d, shape, perm, false);
}

template <class D>
Vec<D> preserve_t(D& d, const Vec<D>& sizes, const Vec<D>& strides) {
  if (dense_t(d, sizes, strides)) return strides;
  std::vector<size_t> perm = order_dims(sizes.size(), [&](size_t d0, size_t d1) {
    const auto &s0 = strides[d0], &s1 = strides[d1];
    if (d.zero(s0) || d.zero(s1)) return 0;
    if (s0 != s1) {
      if (d.lt(s0, s1)) return -1;
      if (d.lt(s1, s0)) return 1;
    }
    if (sizes[d0] != sizes[d1] && d.lt(sizes[d1], sizes[d0])) return 1;
    return 0;
  });
  return dense_in_order(d, sizes, perm, true);
}

template <class D>
Vec<D> like_t(D& d, const Vec<D>& sizes, const Vec<D>& strides, std::optional<MemoryFormat> f) {
  if (!f || *f == MemoryFormat::Preserve) return preserve_t(d, sizes, strides);
  return format_strides_t(d, sizes, *f);
}

}  // namespace

bool is_contiguous(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides) {
  SymDom d{ctx};
  return contiguous_t(d, sizes, strides);
}

bool is_channels_last(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides) {
  SymDom d{ctx};
  return channels_last_t(d, sizes, strides);
}

bool is_channels_last_3d(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides) {
  SymDom d{ctx};
  return channels_last_3d_t(d, sizes, strides);
}

bool is_contiguous_as(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides,
                      MemoryFormat f) {
  SymDom d{ctx};
  return contiguous_as_t(d, sizes, strides, f);
}

bool is_non_overlapping_and_dense(MetaContext& ctx, const std::vector<SymExpr>& sizes,
                                  const std::vector<SymExpr>& strides) {
  SymDom d{ctx};
  return dense_t(d, sizes, strides);
}

std::vector<SymExpr> format_strides(MetaContext& ctx, const std::vector<SymExpr>& sizes, MemoryFormat f) {
  SymDom d{ctx};
  return format_strides_t(d, sizes, f);
}

MemoryFormat suggest_memory_format(MetaContext& ctx, const TensorMeta& m) {
  SymDom d{ctx};
  return suggest_format_t(d, m.sizes, m.strides);
}

std::vector<SymExpr> elementwise_strides(MetaContext& ctx, const std::vector<SymExpr>& shape,
                                         std::span<const TensorMeta* const> inputs, bool has_numbers) {
  SymDom d{ctx};
  std::vector<LayoutOf<SymDom>> in;
  for (const TensorMeta* m : inputs) in.push_back({&m->sizes, &m->strides});
  return elementwise_t<SymDom>(d, shape, in, has_numbers);
}

std::vector<SymExpr> preserve_strides(MetaContext& ctx, const TensorMeta& like) {
  SymDom d{ctx};
  return preserve_t(d, like.sizes, like.strides);
}

std::vector<SymExpr> like_strides(MetaContext& ctx, const TensorMeta& like, std::optional<MemoryFormat> f) {
  SymDom d{ctx};
  return like_t(d, like.sizes, like.strides, f);
}

// ---- concrete sizes -------------------------------------------------------------------------

bool is_contiguous_as(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, MemoryFormat f) {
  IntDom d;
  return contiguous_as_t(d, sizes, strides, f);
}

std::vector<int64_t> format_strides(const std::vector<int64_t>& sizes, MemoryFormat f) {
  IntDom d;
  return format_strides_t(d, sizes, f);
}

MemoryFormat suggest_memory_format(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  IntDom d;
  return suggest_format_t(d, sizes, strides);
}

std::vector<int64_t> elementwise_strides(const std::vector<int64_t>& shape, std::span<const ConcreteLayout> inputs,
                                         bool has_numbers) {
  IntDom d;
  std::vector<LayoutOf<IntDom>> in;
  for (const ConcreteLayout& m : inputs) in.push_back({m.sizes, m.strides});
  return elementwise_t<IntDom>(d, shape, in, has_numbers);
}

std::vector<int64_t> like_strides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                  std::optional<MemoryFormat> f) {
  IntDom d;
  return like_t(d, sizes, strides, f);
}

TensorMeta fresh(MetaContext& ctx, DType dtype, Device device, std::vector<SymExpr> sizes,
                 std::vector<SymExpr> strides) {
  TensorMeta m;
  m.dtype = dtype;
  m.device = device;
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.storage = ctx.new_storage();
  return m;
}

TensorMeta fresh_contiguous(MetaContext& ctx, DType dtype, Device device, std::vector<SymExpr> sizes) {
  std::vector<SymExpr> st = toroid::contiguous_strides(sizes);
  return fresh(ctx, dtype, device, std::move(sizes), std::move(st));
}

Device common_device(MetaContext& ctx, std::span<const Operand> ops) {
  std::optional<Device> dev;
  // Dim > 0 tensors decide; a CPU zero-dim tensor may join any device.
  for (const Operand& o : ops)
    if (o.is_tensor() && o.tensor->rank() > 0) {
      if (!dev) dev = o.tensor->device;
      else if (!(*dev == o.tensor->device))
        ctx.fail("expected all tensors to be on the same device, but found " + dev->str() + " and " +
                 o.tensor->device.str());
    }
  for (const Operand& o : ops)
    if (o.is_tensor() && o.tensor->rank() == 0) {
      if (!dev) dev = o.tensor->device;
      else if (!(*dev == o.tensor->device) && !o.tensor->device.is_cpu())
        ctx.fail("expected all tensors to be on the same device, but found " + dev->str() + " and " +
                 o.tensor->device.str());
    }
  return dev.value_or(Device::cpu());
}

}  // namespace toroid::ops::meta
