// Small helpers shared by the meta families of convolution, pooling, padding, resampling,
// embedding/loss and the remaining ops (meta_conv.cpp, meta_pool.cpp, meta_pad.cpp,
// meta_nn.cpp, meta_misc.cpp). Private to src/ops.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "toroid/ops/meta_util.h"

namespace toroid::ops::meta {

// The tensor argument `name`; UserError if it is None.
inline const TensorMeta& tensor_arg(const BoundArgs& a, MetaContext& ctx, const char* name) {
  Value* x = a.tensor(name);
  if (!x) ctx.fail(std::string("argument '") + name + "' must be a tensor, not None");
  return x->meta();
}

inline SymExpr simp(MetaContext& ctx, SymExpr e) { return ctx.shapes.simplify(e); }

// Decides a size condition: constants directly, symbolic ones from ranges or else with a guard
// (as torch._check on a backed size does).
inline bool holds(MetaContext& ctx, SymExpr cond) {
  if (cond.kind() == sym::Kind::BoolConst) return cond.bool_value();
  SymExpr s = simp(ctx, cond);
  if (s.kind() == sym::Kind::BoolConst) return s.bool_value();
  return ctx.guard(cond);
}

// UserError with message() unless `cond` holds.
inline void check(MetaContext& ctx, SymExpr cond, const std::function<std::string()>& message) {
  if (!holds(ctx, cond)) ctx.fail(message());
}

inline bool is_eq(MetaContext& ctx, SymExpr a, SymExpr b) { return a == b || holds(ctx, sym::eq(a, b)); }
inline bool is_lt(MetaContext& ctx, SymExpr a, SymExpr b) { return a != b && holds(ctx, sym::lt(a, b)); }
inline bool is_le(MetaContext& ctx, SymExpr a, SymExpr b) { return a == b || holds(ctx, sym::le(a, b)); }
inline SymExpr I(int64_t v) { return SymExpr::integer(v); }

// A list argument whose entries must be constant ints (window parameters: kernel sizes,
// strides, paddings, dilations). Entries beyond +-2^31 are rejected, so that products of two
// of them cannot overflow.
inline std::vector<int64_t> const_list(const BoundArgs& a, MetaContext& ctx, const char* name) {
  std::vector<int64_t> out;
  for (SymExpr e : a.int_list(name)) {
    int64_t v = const_int(ctx, e, name);
    if (v > (int64_t{1} << 31) || v < -(int64_t{1} << 31))
      ctx.fail(std::string(name) + " value " + std::to_string(v) + " is out of range");
    out.push_back(v);
  }
  return out;
}

// A bool argument (false when None).
inline bool flag(const BoundArgs& a, const char* name) {
  SymExpr e = a.scalar(name);
  if (!e) return false;
  if (e.is_bool()) return e.bool_value();
  if (auto c = e.as_int()) return *c != 0;
  return false;
}

// A bool[N] argument such as output_mask.
inline std::vector<bool> bool_list(const BoundArgs& a, MetaContext& ctx, const char* name) {
  const Argument& arg = a.get(name);
  std::vector<bool> out;
  if (!arg.is_list()) ctx.fail(std::string("argument '") + name + "' must be a list of bools");
  for (const Argument& e : arg.list()) {
    if (!e.is_scalar() || e.scalar().kind() != sym::Kind::BoolConst)
      ctx.fail(std::string("argument '") + name + "' must be a list of constant bools");
    out.push_back(e.scalar().bool_value());
  }
  return out;
}

// "(a, b)" and "AxBxC" renderings used in PyTorch's messages.
inline std::string join(const std::vector<SymExpr>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i].str();
  return out;
}
inline std::string join(const std::vector<int64_t>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

// A fresh tensor in memory format f (Contiguous, ChannelsLast, ChannelsLast3d).
inline TensorMeta fresh_format(MetaContext& ctx, DType d, Device dev, std::vector<SymExpr> sizes, MemoryFormat f) {
  std::vector<SymExpr> st = format_strides(ctx, sizes, f);
  return fresh(ctx, d, dev, std::move(sizes), std::move(st));
}

// What toroid returns for an output that PyTorch leaves undefined (a false output_mask entry):
// the graph has no "None" tensor result, so it is an empty 1-d tensor of size 0.
inline ResultSpec undefined_result(MetaContext& ctx, DType d, Device dev) {
  return ResultSpec::tensor(fresh_contiguous(ctx, d, dev, {I(0)}));
}

}  // namespace toroid::ops::meta
