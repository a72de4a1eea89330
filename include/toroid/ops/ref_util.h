// Helpers shared by the reference kernels (src/ops/ref_*.cpp): C++ value types per dtype,
// loads and stores with PyTorch's casting rules, dims and broadcasting, element iteration over
// strided operands, and type promotion.
#pragma once

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "toroid/graph/half.h"
#include "toroid/graph/types.h"
#include "toroid/ops/host_tensor.h"
#include "toroid/ops/meta_util.h"
#include "toroid/ops/rt_value.h"
#include "toroid/support/error.h"

namespace toroid::ops {

// 16-bit floats: stored as bits, computed in float, rounded to nearest even once on conversion.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(float_to_f16(f)) {}
  operator float() const { return f16_to_float(bits); }
};
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(float_to_bf16(f)) {}
  operator float() const { return bf16_to_float(bits); }
};

// Calls f.template operator()<T>() with the C++ type stored for dtype d. Complex dtypes are a
// UserError: kernels that support them handle them before dispatching.
template <class F>
decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::Complex64:
    case DType::Complex128:
      user_error(std::string("reference kernels do not support ") + dtype_short_name(d) + " tensors here");
    case DType::Bool: return f.template operator()<bool>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Int8: return f.template operator()<int8_t>();
    case DType::Int16: return f.template operator()<int16_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Float16: return f.template operator()<Half>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
  }
  return f.template operator()<float>();
}

// ---- casting (PyTorch CPU rules on x86; float -> int out of range is defined, never UB) ----

// float -> int64: truncates toward zero; NaN and values outside int64 give INT64_MIN (what the
// x86 conversion instruction PyTorch CPU compiles to gives), never UB.
int64_t float_to_int64(double v);
// float -> 32-bit integer the same way (INT32_MIN when out of range), used for i32 and narrower
// (narrower types then wrap, as PyTorch CPU does: 300.0 -> u8 is 44).
int32_t float_to_int32(double v);

double load_double(DType d, const std::byte* p);
int64_t load_int(DType d, const std::byte* p);  // floats convert as above; bool 0/1
bool load_bool(DType d, const std::byte* p);    // != 0 (NaN is true)
void store_double(DType d, std::byte* p, double v);
void store_int(DType d, std::byte* p, int64_t v);  // wraps modulo 2^bits; bool is != 0
// Complex dtypes load and store their real part through the functions above (imag 0 on
// store); these carry both parts, and for real dtypes imag is 0 on load and dropped on store
// (bool: re != 0 || im != 0), as PyTorch casts.
std::complex<double> load_complex(DType d, const std::byte* p);
void store_complex(DType d, std::byte* p, std::complex<double> v);
// Rounds v to what dtype d can hold, returned as a double (f32/f16/bf16 round to nearest even).
double round_to(DType d, double v);
// Wraps v to integer dtype d (bool: 0/1).
int64_t wrap_to(DType d, int64_t v);

// Wrapping integer arithmetic (no signed-overflow UB).
inline int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
inline int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

// ---- dtypes -------------------------------------------------------------------------------

// PyTorch's names in messages: "Float", "Long", "Half", "BFloat16", "Bool", ...
const char* dtype_aten_name(DType d);
// torch.promote_types: the meta functions' implementation.
using meta::promote_types;
// Whether a value of dtype `from` may be written into an out/in-place tensor of dtype `to`
// (PyTorch's canCast: no float -> integral, no non-bool -> bool).
bool can_cast(DType from, DType to);
// One participant of type promotion.
struct PromoteArg {
  DType dtype;
  bool zero_dim = false;  // a 0-dim tensor
  bool wrapped = false;   // a Python number (Scalar argument)
};
DType result_type(std::span<const PromoteArg> args);
PromoteArg promote_arg(const HostTensor& t);
// A Scalar argument: int -> i64, float -> f64 (a float participant), bool -> bool.
PromoteArg promote_arg(const RtValue& scalar);
// A Scalar as a 0-dim tensor of its natural dtype (i64, f64 or bool).
HostTensor scalar_to_tensor(const RtValue& scalar);
DType scalar_dtype(const RtValue& scalar);

// ---- shapes and dims ----------------------------------------------------------------------

std::string shape_str(const std::vector<int64_t>& sizes);  // "[2, 3]"
// Wraps a possibly negative dim into [0, ndim); a 0-dim tensor accepts -1 and 0.
// UserError "op: Dimension out of range (expected to be in range of [-2, 1], but got 5)".
int64_t wrap_dim(const std::string& op, int64_t dim, int64_t ndim);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
int64_t numel_of(const std::vector<int64_t>& sizes);
std::vector<int64_t> broadcast_shapes(const std::string& op, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b);
// A view of t broadcast to `sizes` (stride 0 along expanded dims); UserError if impossible.
HostTensor broadcast_to(const std::string& op, const HostTensor& t, const std::vector<int64_t>& sizes);

// ---- iteration ----------------------------------------------------------------------------

// Visits every index of `sizes` in row-major order. ops[k] must have dim() == sizes.size()
// and sizes equal to `sizes` (or stride 0 where broadcast); fn gets one element pointer per
// operand.
template <size_t N, class F>
void for_each_element(const std::vector<int64_t>& sizes, const std::array<const HostTensor*, N>& ops, F&& fn) {
  const size_t nd = sizes.size();
  for (int64_t s : sizes)
    if (s == 0) return;
  std::array<std::byte*, N> ptr;
  std::array<int64_t, N> esz;
  for (size_t k = 0; k < N; ++k) {
    ptr[k] = ops[k]->data();
    esz[k] = ops[k]->element_size();
  }
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    fn(ptr);
    size_t d = nd;
    while (true) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) {
        for (size_t k = 0; k < N; ++k) ptr[k] += ops[k]->strides()[d] * esz[k];
        break;
      }
      for (size_t k = 0; k < N; ++k) ptr[k] -= ops[k]->strides()[d] * (sizes[d] - 1) * esz[k];
      idx[d] = 0;
    }
  }
}

// ---- result layouts (the meta functions' stride rules, on concrete sizes) ------------------

// empty_like(like, dtype, memory_format=f) (null: preserve), zero-filled.
HostTensor empty_like(const HostTensor& like, DType dtype, std::optional<MemoryFormat> f = std::nullopt);
// PyTorch's clone_preserve_strides: a copy of t in a new storage of t's storage size, with t's
// sizes, strides and offset (a t that overlaps itself is cloned with preserved format instead).
HostTensor clone_preserve_strides(const HostTensor& t);
// _to_copy's result: meta::like_strides, then the values of t cast to dtype.
HostTensor copy_as(const HostTensor& t, DType dtype, std::optional<MemoryFormat> f = std::nullopt);

// A tensor with the same values in a new contiguous storage, of dtype `dtype`.
HostTensor contiguous_as(const HostTensor& t, DType dtype);
// Whether writing to t would write one memory location twice (a stride-0 dim of size > 1).
bool has_internal_overlap(const HostTensor& t);

// ---- helpers of the larger kernels (norm, linalg, conv, pool, ...) -------------------------

// Visits every multi-index of `sizes` in row-major order (nothing when a size is 0).
template <class F>
void ref_for_each_index(const std::vector<int64_t>& sizes, F&& fn) {
  for (int64_t s : sizes)
    if (s <= 0) return;
  std::vector<int64_t> idx(sizes.size(), 0);
  while (true) {
    fn(static_cast<const std::vector<int64_t>&>(idx));
    size_t d = sizes.size();
    while (true) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}
// The values of t in row-major order, exactly (every dtype fits a double except int64 beyond
// 2^53: use to_int64_vec for integers).
std::vector<double> to_double_vec(const HostTensor& t);
std::vector<int64_t> to_int64_vec(const HostTensor& t);
// A new contiguous tensor of `dtype` and `sizes` from row-major values, each rounded once.
HostTensor from_double_vec(DType dtype, const std::vector<int64_t>& sizes, const std::vector<double>& v);
HostTensor from_int64_vec(DType dtype, const std::vector<int64_t>& sizes, const std::vector<int64_t>& v);
// Copies one element between tensors of possibly different dtypes (memcpy when equal).
void copy_one_element(DType dst_dtype, std::byte* dst, DType src_dtype, const std::byte* src);

// The strides of a channels-last (4-d) or channels-last-3d (5-d) tensor of these sizes.
std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes);
// `result` (contiguous, of like's rank) copied into channels-last strides of its own sizes when
// `like` is a non-contiguous channels-last 4-d/5-d tensor (PyTorch's suggest_memory_format), as
// kernels that keep the input's memory format do; else `result` itself.
HostTensor in_memory_format_of(const HostTensor& result, const HostTensor& like);

// Window/padding parameters (stride, padding, dilation, pads, ...) must lie within
// [-2^31, 2^31 - 1] (the range PyTorch's kernels compute in), so that size arithmetic on them
// cannot overflow: UserError "op: <name> value <v> is out of range" otherwise.
void require_int32_params(const std::string& op, const std::vector<int64_t>& values, const char* name);
// a * b and a + b, or a UserError naming op when the result does not fit in int64.
int64_t checked_mul(const std::string& op, int64_t a, int64_t b);
int64_t checked_add(const std::string& op, int64_t a, int64_t b);

// ---- messages -----------------------------------------------------------------------------

[[noreturn]] void kernel_error(const std::string& op, const std::string& message);

}  // namespace toroid::ops

// ---- the elementwise engine of the pointwise kernels -----------------------------------------

namespace toroid::ops {

// One input of a pointwise op: a tensor, or a Scalar argument held as a 0-dim tensor.
struct EwInput {
  HostTensor t;
  bool wrapped = false;  // a Python number (does not decide the result dtype, computes in opmath)
};
EwInput ew_input(const RtValue& v);
DType ew_result_type(std::span<const EwInput> in);
std::vector<int64_t> ew_shape(const std::string& op, std::span<const EwInput> in);

// A new (zero-filled) result of a TensorIterator op over `in`, laid out as PyTorch does: the
// meta functions' elementwise_strides on the inputs' concrete strides.
HostTensor ew_output(const std::string& op, std::span<const EwInput> in, DType dtype);

// out[i] = f(inputs converted to `compute`) over the broadcast shape, written into `res` (of
// that shape); floating compute passes doubles (16-bit dtypes load wrapped numbers at f32, the
// opmath type), integral compute passes int64 values already wrapped to `compute`.
template <size_t N, class F>
HostTensor ew_map_into(const std::string& op, const std::array<EwInput, N>& in, DType compute, HostTensor res, F&& f) {
  std::vector<int64_t> shape = ew_shape(op, in);
  if (res.sizes() != shape) TOROID_INTERNAL_ERROR("ew_map_into: result of the wrong shape");
  DType out = res.dtype();
  std::array<HostTensor, N> views;
  std::array<DType, N> src, load;
  std::array<const HostTensor*, N + 1> ops{&res};
  for (size_t k = 0; k < N; ++k) {
    views[k] = broadcast_to(op, in[k].t, shape);
    src[k] = in[k].t.dtype();
    bool opmath16 = in[k].wrapped && (compute == DType::Float16 || compute == DType::BFloat16);
    load[k] = opmath16 ? DType::Float32 : compute;
    ops[k + 1] = &views[k];
  }
  if (is_floating(compute)) {
    if constexpr (std::is_invocable_v<F&, const std::array<double, N>&>) {
      for_each_element<N + 1>(shape, ops, [&](const std::array<std::byte*, N + 1>& p) {
        std::array<double, N> v;
        for (size_t k = 0; k < N; ++k) v[k] = round_to(load[k], load_double(src[k], p[k + 1]));
        store_double(out, p[0], static_cast<double>(f(v)));
      });
    } else {
      kernel_error(op, std::string("not implemented for '") + dtype_aten_name(compute) + "'");
    }
  } else {
    if constexpr (std::is_invocable_v<F&, const std::array<int64_t, N>&>) {
      for_each_element<N + 1>(shape, ops, [&](const std::array<std::byte*, N + 1>& p) {
        std::array<int64_t, N> v;
        for (size_t k = 0; k < N; ++k) v[k] = wrap_to(compute, load_int(src[k], p[k + 1]));
        store_int(out, p[0], static_cast<int64_t>(f(v)));
      });
    } else {
      kernel_error(op, std::string("not implemented for '") + dtype_aten_name(compute) + "'");
    }
  }
  return res;
}

// ew_map_into a new result of dtype `out` laid out by ew_output.
template <size_t N, class F>
HostTensor ew_map(const std::string& op, const std::array<EwInput, N>& in, DType compute, DType out, F&& f) {
  return ew_map_into(op, in, compute, ew_output(op, in, out), std::forward<F>(f));
}

// Writes a computed result into an in-place self or an out= tensor: the shapes must match and
// the result dtype must be castable (PyTorch's rules); returns dst.
HostTensor write_result(const std::string& op, const HostTensor& dst, const HostTensor& result, DType result_dtype);

}  // namespace toroid::ops
