// Type promotion, broadcasting and output strides, as PyTorch computes them.
#include "toroid/ops/meta_util.h"

#include <algorithm>
#include <numeric>

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

bool is_contiguous(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides) {
  for (const SymExpr& s : sizes)
    if (is_const(s, 0)) return true;
  SymExpr expected = SymExpr::integer(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    if (size_one(ctx, sizes[i])) continue;
    if (!eq(ctx, strides[i], expected)) return false;
    expected = expected * sizes[i];
  }
  return true;
}

namespace {

bool channels_last_contiguous(MetaContext& ctx, const std::vector<SymExpr>& sizes,
                              const std::vector<SymExpr>& strides, std::initializer_list<size_t> order) {
  SymExpr expected = SymExpr::integer(1);
  for (size_t d : order) {
    if (size_one(ctx, sizes[d])) continue;
    if (!eq(ctx, strides[d], expected)) return false;
    expected = expected * sizes[d];
  }
  return true;
}

// c10's is_channels_last_strides_{2d,3d}: strides that look channels-last (not necessarily dense).
bool strides_like_channels_last(MetaContext& ctx, const std::vector<SymExpr>& sizes,
                                const std::vector<SymExpr>& strides, std::initializer_list<size_t> order) {
  if (is_zero(ctx, strides[1])) return false;
  SymExpr min = SymExpr::integer(0);
  for (size_t d : order) {
    if (is_zero(ctx, sizes[d])) return false;
    if (lt(ctx, strides[d], min)) return false;
    if (d == 0 && eq(ctx, min, strides[1])) return false;
    min = strides[d];
    if (size_gt1(ctx, sizes[d])) min = min * sizes[d];
  }
  return true;
}

}  // namespace

bool is_channels_last(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides) {
  return sizes.size() == 4 && channels_last_contiguous(ctx, sizes, strides, {1, 3, 2, 0});
}

bool is_channels_last_3d(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides) {
  return sizes.size() == 5 && channels_last_contiguous(ctx, sizes, strides, {1, 4, 3, 2, 0});
}

bool is_non_overlapping_and_dense(MetaContext& ctx, const std::vector<SymExpr>& sizes,
                                  const std::vector<SymExpr>& strides) {
  size_t n = sizes.size();
  if (n == 0) return true;
  if (n == 1) return !size_gt1(ctx, sizes[0]) || eq(ctx, strides[0], SymExpr::integer(1));
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Dims of size < 2 go last; the others by increasing stride.
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    bool sa = size_gt1(ctx, sizes[a]), sb = size_gt1(ctx, sizes[b]);
    if (!sa) return false;
    if (!sb) return true;
    return lt(ctx, strides[a], strides[b]);
  });
  SymExpr require = SymExpr::integer(1);
  for (size_t d : perm) {
    if (!size_gt1(ctx, sizes[d])) return true;
    if (!eq(ctx, strides[d], require)) return false;
    require = require * sizes[d];
  }
  return true;
}

std::vector<SymExpr> format_strides(MetaContext& ctx, const std::vector<SymExpr>& sizes, MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous:
    case MemoryFormat::Preserve: return contiguous_strides(sizes);
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: {
      size_t rank = f == MemoryFormat::ChannelsLast ? 4 : 5;
      if (sizes.size() != rank)
        ctx.fail(std::string("required rank ") + std::to_string(rank) + " tensor to use " +
                 memory_format_torch_name(f) + " format, got rank " + std::to_string(sizes.size()));
      // Channels innermost, then the spatial dims from the last, then the batch.
      std::vector<SymExpr> st(rank);
      st[1] = SymExpr::integer(1);
      SymExpr running = sizes[1];
      for (size_t d = rank - 1; d >= 2; --d) {
        st[d] = running;
        running = running * sizes[d];
      }
      st[0] = running;
      return st;
    }
  }
  return contiguous_strides(sizes);
}

MemoryFormat suggest_memory_format(MetaContext& ctx, const TensorMeta& m) {
  if (m.rank() == 4 && strides_like_channels_last(ctx, m.sizes, m.strides, {1, 3, 2, 0}))
    return MemoryFormat::ChannelsLast;
  if (m.rank() == 5 && strides_like_channels_last(ctx, m.sizes, m.strides, {1, 4, 3, 2, 0}))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

namespace {

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

}  // namespace

std::vector<SymExpr> elementwise_strides(MetaContext& ctx, const std::vector<SymExpr>& shape,
                                         std::span<const TensorMeta* const> inputs, bool has_numbers) {
  size_t n = shape.size();
  if (inputs.empty() || n == 0) return contiguous_strides(shape);
  // Fast setup: every operand of the output's shape and all contiguous, all channels-last, or
  // all dense with identical strides.
  bool same_shape = !has_numbers;
  for (const TensorMeta* m : inputs) same_shape = same_shape && m->sizes == shape;
  if (same_shape) {
    bool contiguous = true, cl = true, dense = true;
    for (const TensorMeta* m : inputs) contiguous = contiguous && is_contiguous(ctx, m->sizes, m->strides);
    if (contiguous) return contiguous_strides(shape);
    for (const TensorMeta* m : inputs) cl = cl && is_channels_last(ctx, m->sizes, m->strides);
    if (cl) return format_strides(ctx, shape, MemoryFormat::ChannelsLast);
    for (const TensorMeta* m : inputs) dense = dense && is_non_overlapping_and_dense(ctx, m->sizes, m->strides);
    if (dense) {
      bool same = true;
      for (const TensorMeta* m : inputs) same = same && m->strides == inputs.back()->strides;
      if (same) return inputs.back()->strides;
    }
  }
  // General case: each input's strides over the output's dims (0 where broadcast).
  std::vector<std::vector<SymExpr>> st;
  for (const TensorMeta* m : inputs) {
    std::vector<SymExpr> s(n, SymExpr::integer(0));
    size_t off = n - m->sizes.size();
    for (size_t i = 0; i < m->sizes.size(); ++i) {
      bool broadcast = m->sizes[i] != shape[off + i] && size_one(ctx, m->sizes[i]) && !size_one(ctx, shape[off + i]);
      s[off + i] = broadcast ? SymExpr::integer(0) : m->strides[i];
    }
    st.push_back(std::move(s));
  }
  std::vector<size_t> perm = order_dims(n, [&](size_t d0, size_t d1) {
    for (const std::vector<SymExpr>& s : st) {
      if (is_zero(ctx, s[d0]) || is_zero(ctx, s[d1])) continue;
      if (s[d0] != s[d1]) {
        if (lt(ctx, s[d0], s[d1])) return -1;
        if (lt(ctx, s[d1], s[d0])) return 1;
      }
      // Equal strides: the smaller size goes first.
      if (shape[d0] != shape[d1] && lt(ctx, shape[d1], shape[d0])) return 1;
    }
    return 0;
  });
  bool reversed_identity = true;
  for (size_t i = 0; i < n; ++i) reversed_identity = reversed_identity && perm[i] == n - 1 - i;
  if (reversed_identity) return contiguous_strides(shape);
  std::vector<SymExpr> out(n);
  SymExpr running = SymExpr::integer(1);
  for (size_t d : perm) {
    out[d] = running;
    running = running * shape[d];
  }
  return out;
}

std::vector<SymExpr> preserve_strides(MetaContext& ctx, const TensorMeta& like) {
  if (is_non_overlapping_and_dense(ctx, like.sizes, like.strides)) return like.strides;
  size_t n = like.sizes.size();
  std::vector<size_t> perm = order_dims(n, [&](size_t d0, size_t d1) {
    SymExpr s0 = like.strides[d0], s1 = like.strides[d1];
    if (is_zero(ctx, s0) || is_zero(ctx, s1)) return 0;
    if (s0 != s1) {
      if (lt(ctx, s0, s1)) return -1;
      if (lt(ctx, s1, s0)) return 1;
    }
    if (like.sizes[d0] != like.sizes[d1] && lt(ctx, like.sizes[d1], like.sizes[d0])) return 1;
    return 0;
  });
  std::vector<SymExpr> out(n);
  SymExpr running = SymExpr::integer(1);
  for (size_t d : perm) {
    out[d] = running;
    if (size_gt1(ctx, like.sizes[d])) running = running * like.sizes[d];
  }
  return out;
}

std::vector<SymExpr> like_strides(MetaContext& ctx, const TensorMeta& like, std::optional<MemoryFormat> f) {
  if (!f || *f == MemoryFormat::Preserve) return preserve_strides(ctx, like);
  return format_strides(ctx, like.sizes, *f);
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
  std::vector<SymExpr> st = contiguous_strides(sizes);
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
