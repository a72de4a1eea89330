// Helpers shared by the meta functions: PyTorch's type promotion, broadcasting of symbolic
// shapes, and the output strides of TensorIterator (pointwise ops follow their inputs' layout).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/ops/impl.h"

namespace toroid::ops::meta {

// ---------------------------------------------------------------------------------------------
// Type promotion

// torch.promote_types (complex wins over floats and grows to hold f64).
DType promote_types(DType a, DType b);
// PyTorch's combine_categories: a lower-priority participant of result_type only counts when
// it is of a higher category (bool < integer < floating < complex). UserError when it would
// need complex32.
DType combine_categories(DType higher, DType lower);

// An operand of a pointwise op: a tensor, or a Python number (a scalar constant or scalar value,
// which ATen wraps into a 0-dim "wrapped number" tensor).
struct Operand {
  const TensorMeta* tensor = nullptr;  // null for a number
  DType number_dtype = DType::Int64;   // for numbers: Bool, Int64 or Float64
  SymExpr number;                      // for numbers: the value, when known

  bool is_tensor() const { return tensor != nullptr; }
  static Operand of(const TensorMeta& m) { return Operand{&m, DType::Int64, {}}; }
  static Operand of_number(SymExpr e);  // by the expression's type
};

// The argument `name` as an operand (a tensor, or a number: wrapped scalars are accepted for
// Tensor arguments). UserError if it is neither.
Operand operand(const BoundArgs& args, std::string_view name);

// torch.result_type: dim > 0 tensors beat zero-dim tensors, which beat Python numbers; a lower
// category only wins when it is a higher kind (bool < integer < floating < complex). A Python float
// counts as the default dtype (float32).
DType result_type(std::span<const Operand> ops);

// How an op computes its result dtype from the promoted one (torch._prims_common names).
enum class Promotion {
  Default,     // the promoted dtype
  IntToFloat,  // integral (and bool) -> float32: sin, exp, true division
  AlwaysBool,  // comparisons, isnan, logical ops
  BoolToLong,  // pow
  NoPromote,   // the first tensor's dtype (elu, hardtanh: scalar arguments do not promote)
};
DType apply_promotion(DType promoted, Promotion kind);

// ---------------------------------------------------------------------------------------------
// Shapes

std::string shape_str(const std::vector<SymExpr>& sizes);  // "[2, s0]"

// Broadcasts shapes as torch.broadcast_shapes: sizes align on the right, a size 1 stretches.
// Two symbolic sizes not provably equal are decided as PyTorch does (guards on == 1 / ==).
// UserError "shapes [2, 3] and [4] cannot be broadcast".
std::vector<SymExpr> broadcast_shapes(MetaContext& ctx, std::span<const std::vector<SymExpr>> shapes);

// Wraps a possibly negative dim into [0, rank) (rank 0 accepts -1 and 0). UserError when out
// of range ("dim 3 is out of range for a tensor of rank 2").
int64_t wrap_dim(MetaContext& ctx, int64_t dim, int64_t rank);
// A constant int from an argument expression (UserError if symbolic or null).
int64_t const_int(MetaContext& ctx, SymExpr e, std::string_view what);

// ---------------------------------------------------------------------------------------------
// Strides

bool is_contiguous(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides);
bool is_channels_last(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides);
bool is_channels_last_3d(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides);
// Tensor.is_contiguous(memory_format) (UserError for preserve_format).
bool is_contiguous_as(MetaContext& ctx, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& strides,
                      MemoryFormat f);
bool is_non_overlapping_and_dense(MetaContext& ctx, const std::vector<SymExpr>& sizes,
                                  const std::vector<SymExpr>& strides);

// Strides of a fresh tensor in a memory format (Contiguous, ChannelsLast (rank 4),
// ChannelsLast3d (rank 5)). UserError for a format the rank does not support.
std::vector<SymExpr> format_strides(MetaContext& ctx, const std::vector<SymExpr>& sizes, MemoryFormat f);

// PyTorch's suggest_memory_format: ChannelsLast / ChannelsLast3d when the strides say so.
MemoryFormat suggest_memory_format(MetaContext& ctx, const TensorMeta& m);

// The output strides of a TensorIterator op with output `shape` and these tensor inputs
// (numbers excluded): contiguous, channels-last, or the inputs' own strides when all agree
// (its fast setup), else the inputs' dimension order (reorder_dimensions) made dense.
// `has_numbers`: some operands are wrapped Python numbers (0-dim), which rule out the fast setup.
std::vector<SymExpr> elementwise_strides(MetaContext& ctx, const std::vector<SymExpr>& shape,
                                         std::span<const TensorMeta* const> inputs, bool has_numbers = false);

// empty_like(memory_format=preserve): the input's strides when it is non-overlapping and dense,
// else dense strides in its dimension order.
std::vector<SymExpr> preserve_strides(MetaContext& ctx, const TensorMeta& like);
// empty_like(memory_format=f) for any f (null = preserve), and _to_copy's result (PyTorch 2.11
// lays out both alike: a non-dense input gets dense strides in its dims' order).
std::vector<SymExpr> like_strides(MetaContext& ctx, const TensorMeta& like, std::optional<MemoryFormat> f);

// The same rules on concrete sizes (one implementation): the reference kernels lay out their
// results with these, so that they match the meta functions.
struct ConcreteLayout {
  const std::vector<int64_t>* sizes;
  const std::vector<int64_t>* strides;
};
std::vector<int64_t> format_strides(const std::vector<int64_t>& sizes, MemoryFormat f);  // UserError as above
bool is_contiguous_as(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, MemoryFormat f);
MemoryFormat suggest_memory_format(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
std::vector<int64_t> elementwise_strides(const std::vector<int64_t>& shape, std::span<const ConcreteLayout> inputs,
                                         bool has_numbers = false);
std::vector<int64_t> like_strides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                  std::optional<MemoryFormat> f);

// A fresh tensor (new storage, offset 0).
TensorMeta fresh(MetaContext& ctx, DType dtype, Device device, std::vector<SymExpr> sizes,
                 std::vector<SymExpr> strides);
TensorMeta fresh_contiguous(MetaContext& ctx, DType dtype, Device device, std::vector<SymExpr> sizes);

// The device shared by the tensor operands (a CPU zero-dim tensor may join any device).
// UserError for two devices.
Device common_device(MetaContext& ctx, std::span<const Operand> ops);

}  // namespace toroid::ops::meta
