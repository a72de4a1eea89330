#include "toroid/ops/ref_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "toroid/support/error.h"

namespace toroid::ops {

int64_t float_to_int64(double v) {
  // 2^63 is exactly representable; anything at or above it (or NaN) is out of range.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::trunc(v));
}

int32_t float_to_int32(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(std::trunc(v));
}

std::complex<double> load_complex(DType d, const std::byte* p) {
  if (d == DType::Complex64) {
    float v[2];
    std::memcpy(v, p, sizeof v);
    return {v[0], v[1]};
  }
  if (d == DType::Complex128) {
    double v[2];
    std::memcpy(v, p, sizeof v);
    return {v[0], v[1]};
  }
  return {load_double(d, p), 0.0};
}

void store_complex(DType d, std::byte* p, std::complex<double> v) {
  if (d == DType::Complex64) {
    float out[2] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
    std::memcpy(p, out, sizeof out);
  } else if (d == DType::Complex128) {
    double out[2] = {v.real(), v.imag()};
    std::memcpy(p, out, sizeof out);
  } else if (d == DType::Bool) {
    store_int(d, p, v.real() != 0.0 || v.imag() != 0.0);
  } else {
    store_double(d, p, v.real());
  }
}

double load_double(DType d, const std::byte* p) {
  if (is_complex(d)) return load_complex(d, p).real();
  return dispatch_dtype(d, [&]<class T>() -> double {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(v);
    else return static_cast<double>(v);
  });
}

int64_t load_int(DType d, const std::byte* p) {
  if (is_floating(d) || is_complex(d)) return float_to_int64(load_double(d, p));
  return dispatch_dtype(d, [&]<class T>() -> int64_t {
    if constexpr (std::is_integral_v<T>) {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return static_cast<int64_t>(v);
    } else {
      return 0;
    }
  });
}

bool load_bool(DType d, const std::byte* p) {
  if (is_complex(d)) return load_complex(d, p) != std::complex<double>(0.0, 0.0);
  if (is_floating(d)) return load_double(d, p) != 0.0;  // NaN != 0 is true
  return load_int(d, p) != 0;
}

void store_double(DType d, std::byte* p, double v) {
  if (is_complex(d)) return store_complex(d, p, {v, 0.0});
  dispatch_dtype(d, [&]<class T>() {
    T out;
    if constexpr (std::is_same_v<T, bool>) {
      out = v != 0.0;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      out = float_to_int64(v);
    } else if constexpr (std::is_integral_v<T>) {
      out = static_cast<T>(float_to_int32(v));  // narrower types wrap (modular since C++20)
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      out = T(static_cast<float>(v));  // double -> float -> 16 bits, as PyTorch does
    } else {
      out = static_cast<T>(v);
    }
    std::memcpy(p, &out, sizeof(T));
  });
}

void store_int(DType d, std::byte* p, int64_t v) {
  if (is_complex(d)) return store_complex(d, p, {static_cast<double>(v), 0.0});
  dispatch_dtype(d, [&]<class T>() {
    T out;
    if constexpr (std::is_same_v<T, bool>) out = v != 0;
    else if constexpr (std::is_integral_v<T>) out = static_cast<T>(v);
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) out = T(static_cast<float>(v));
    else out = static_cast<T>(v);
    std::memcpy(p, &out, sizeof(T));
  });
}

double round_to(DType d, double v) {
  switch (d) {
    case DType::Float64: return v;
    case DType::Float32: return static_cast<float>(v);
    case DType::Float16: return f16_to_float(float_to_f16(static_cast<float>(v)));
    case DType::BFloat16: return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    default: {
      std::byte buf[16];  // room for c128
      store_double(d, buf, v);
      return load_double(d, buf);
    }
  }
}

int64_t wrap_to(DType d, int64_t v) {
  if (is_floating(d)) return v;
  std::byte buf[16];  // room for c128
  store_int(d, buf, v);
  return load_int(d, buf);
}

const char* dtype_aten_name(DType d) {
  switch (d) {
    case DType::Bool: return "Bool";
    case DType::UInt8: return "Byte";
    case DType::Int8: return "Char";
    case DType::Int16: return "Short";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Complex64: return "ComplexFloat";
    case DType::Complex128: return "ComplexDouble";
  }
  return "?";
}

bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && !is_floating(to) && !is_complex(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

namespace {
// The dtype a group contributes, or nullopt-like flag when empty.
struct Group {
  bool any = false;
  DType d = DType::Bool;
  void add(DType x) {
    d = any ? promote_types(d, x) : x;
    any = true;
  }
};
// Combines a higher-priority group with a lower one: the lower one only matters when it is of a
// higher category (an int tensor plus a float scalar gives float).
Group combine(Group higher, Group lower) {
  if (!higher.any) return lower;
  if (!lower.any) return higher;
  return {true, meta::combine_categories(higher.d, lower.d)};
}
}  // namespace

DType result_type(std::span<const PromoteArg> args) {
  Group dim, zero, wrapped;
  for (const PromoteArg& a : args) {
    if (a.wrapped) {
      // Python floats participate as the default dtype (f32); ints as i64; bools as bool.
      wrapped.add(is_floating(a.dtype) ? DType::Float32 : a.dtype);
    } else if (a.zero_dim) {
      zero.add(a.dtype);
    } else {
      dim.add(a.dtype);
    }
  }
  Group r = combine(dim, combine(zero, wrapped));
  return r.any ? r.d : DType::Float32;
}

PromoteArg promote_arg(const HostTensor& t) { return {t.dtype(), t.dim() == 0, false}; }

DType scalar_dtype(const RtValue& scalar) {
  switch (scalar.kind()) {
    case RtValue::Kind::Bool: return DType::Bool;
    case RtValue::Kind::Int: return DType::Int64;
    case RtValue::Kind::Float: return DType::Float64;
    case RtValue::Kind::Tensor: return scalar.tensor().dtype();
    default: TOROID_INTERNAL_ERROR("scalar_dtype of a non-number");
  }
}

PromoteArg promote_arg(const RtValue& scalar) {
  if (scalar.is_tensor()) return promote_arg(scalar.tensor());
  return {scalar_dtype(scalar), true, true};
}

HostTensor scalar_to_tensor(const RtValue& scalar) {
  if (scalar.is_tensor()) return scalar.tensor();
  HostTensor t = HostTensor::zeros(scalar_dtype(scalar), {});
  if (scalar.kind() == RtValue::Kind::Float) t.set_double(0, scalar.to_double());
  else t.set_int(0, scalar.to_int());
  return t;
}

std::string shape_str(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

int64_t wrap_dim(const std::string& op, int64_t dim, int64_t ndim) {
  int64_t n = ndim <= 0 ? 1 : ndim;  // a scalar accepts dims -1 and 0
  if (dim < -n || dim >= n)
    kernel_error(op, "Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                         std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + n : dim;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = s;
    int64_t next;
    if (__builtin_mul_overflow(s, sizes[d] > 1 ? sizes[d] : 1, &next)) user_error("tensor too large: sizes " + shape_str(sizes));
    s = next;
  }
  return strides;
}

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) user_error("tensor too large: sizes " + shape_str(sizes));
  return n;
}

std::vector<int64_t> broadcast_shapes(const std::string& op, const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      kernel_error(op, "The size of tensor a (" + std::to_string(x) + ") must match the size of tensor b (" +
                           std::to_string(y) + ") at non-singleton dimension " + std::to_string(i) + " (shapes " +
                           shape_str(a) + " and " + shape_str(b) + ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

HostTensor broadcast_to(const std::string& op, const HostTensor& t, const std::vector<int64_t>& sizes) {
  if (t.sizes() == sizes) return t;
  size_t n = sizes.size();
  if (static_cast<size_t>(t.dim()) > n)
    kernel_error(op, "cannot broadcast " + shape_str(t.sizes()) + " to " + shape_str(sizes));
  size_t lead = n - static_cast<size_t>(t.dim());
  std::vector<int64_t> strides(n, 0);
  for (size_t i = lead; i < n; ++i) {
    int64_t s = t.sizes()[i - lead];
    if (s == sizes[i]) strides[i] = t.strides()[i - lead];
    else if (s == 1) strides[i] = 0;
    else
      kernel_error(op, "The expanded size of the tensor (" + std::to_string(sizes[i]) +
                           ") must match the existing size (" + std::to_string(s) + ") at non-singleton dimension " +
                           std::to_string(i) + ".  Target sizes: " + shape_str(sizes) +
                           ".  Tensor sizes: " + shape_str(t.sizes()));
  }
  return t.as_strided(sizes, strides, t.offset());
}

void copy_into(const std::string& op, const HostTensor& dst, const HostTensor& src) {
  HostTensor s = broadcast_to(op, src, dst.sizes());
  DType sd = s.dtype(), dd = dst.dtype();
  bool int_path = !is_floating(sd);
  bool complex_path = is_complex(sd) || is_complex(dd);
  for_each_element<2>(dst.sizes(), {&dst, &s}, [&](const std::array<std::byte*, 2>& p) {
    if (sd == dd) std::memcpy(p[0], p[1], static_cast<size_t>(dtype_size(dd)));
    else if (complex_path) store_complex(dd, p[0], load_complex(sd, p[1]));
    else if (int_path) store_int(dd, p[0], load_int(sd, p[1]));
    else store_double(dd, p[0], load_double(sd, p[1]));
  });
}

HostTensor empty_like(const HostTensor& like, DType dtype, std::optional<MemoryFormat> f) {
  return HostTensor::empty_strided(dtype, like.sizes(), meta::like_strides(like.sizes(), like.strides(), f));
}

HostTensor clone_preserve_strides(const HostTensor& t) {
  HostTensor out;
  if (has_internal_overlap(t)) {
    out = empty_like(t, t.dtype());
  } else {
    int64_t n = static_cast<int64_t>(t.storage()->nbytes()) / t.element_size();
    out = HostTensor::empty_strided(t.dtype(), {n}, {1}).as_strided(t.sizes(), t.strides(), t.offset());
  }
  copy_into("clone", out, t);
  return out;
}

HostTensor copy_as(const HostTensor& t, DType dtype, std::optional<MemoryFormat> f) {
  HostTensor out = HostTensor::empty_strided(dtype, t.sizes(), meta::like_strides(t.sizes(), t.strides(), f));
  copy_into("copy", out, t);
  return out;
}

HostTensor contiguous_as(const HostTensor& t, DType dtype) {
  HostTensor out = HostTensor::zeros(dtype, t.sizes());
  copy_into("copy", out, t);
  return out;
}

bool has_internal_overlap(const HostTensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[static_cast<size_t>(d)] > 1 && t.strides()[static_cast<size_t>(d)] == 0) return true;
  return false;
}

void kernel_error(const std::string& op, const std::string& message) { user_error(op + ": " + message); }

}  // namespace toroid::ops

namespace toroid::ops {

EwInput ew_input(const RtValue& v) {
  if (v.is_tensor()) return {v.tensor(), false};
  return {scalar_to_tensor(v), true};
}

DType ew_result_type(std::span<const EwInput> in) {
  std::vector<PromoteArg> args;
  for (const EwInput& e : in) args.push_back(e.wrapped ? PromoteArg{e.t.dtype(), true, true} : promote_arg(e.t));
  return result_type(args);
}

std::vector<int64_t> ew_shape(const std::string& op, std::span<const EwInput> in) {
  std::vector<int64_t> shape;
  for (const EwInput& e : in) shape = broadcast_shapes(op, shape, e.t.sizes());
  return shape;
}

HostTensor ew_output(const std::string& op, std::span<const EwInput> in, DType dtype) {
  std::vector<int64_t> shape = ew_shape(op, in);
  std::vector<meta::ConcreteLayout> layouts;
  bool numbers = false;
  for (const EwInput& e : in) {
    if (e.wrapped) numbers = true;
    else layouts.push_back({&e.t.sizes(), &e.t.strides()});
  }
  return HostTensor::empty_strided(dtype, shape, meta::elementwise_strides(shape, layouts, numbers));
}

HostTensor write_result(const std::string& op, const HostTensor& dst, const HostTensor& result, DType result_dtype) {
  if (!can_cast(result_dtype, dst.dtype()))
    kernel_error(op, std::string("result type ") + dtype_aten_name(result_dtype) +
                         " can't be cast to the desired output type " + dtype_aten_name(dst.dtype()));
  if (result.sizes() != dst.sizes())
    kernel_error(op, "output with shape " + shape_str(dst.sizes()) + " doesn't match the broadcast shape " +
                         shape_str(result.sizes()));
  if (has_internal_overlap(dst))
    kernel_error(op, "unsupported operation: more than one element of the written-to tensor refers to a single "
                     "memory location. Please clone() the tensor before performing the operation.");
  copy_into(op, dst, result);
  return dst;
}


// ---- helpers of the larger kernels ----------------------------------------------------------

std::vector<double> to_double_vec(const HostTensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  for_each_element<1>(t.sizes(), {&t}, [&](const std::array<std::byte*, 1>& p) { out.push_back(load_double(t.dtype(), p[0])); });
  return out;
}

std::vector<int64_t> to_int64_vec(const HostTensor& t) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numel()));
  for_each_element<1>(t.sizes(), {&t}, [&](const std::array<std::byte*, 1>& p) { out.push_back(load_int(t.dtype(), p[0])); });
  return out;
}

HostTensor from_double_vec(DType dtype, const std::vector<int64_t>& sizes, const std::vector<double>& v) {
  HostTensor r = HostTensor::zeros(dtype, sizes);
  if (static_cast<int64_t>(v.size()) != r.numel()) TOROID_INTERNAL_ERROR("from_double_vec: size mismatch");
  std::byte* p = r.data();
  int64_t es = r.element_size();
  for (size_t i = 0; i < v.size(); ++i) store_double(dtype, p + static_cast<int64_t>(i) * es, v[i]);
  return r;
}

HostTensor from_int64_vec(DType dtype, const std::vector<int64_t>& sizes, const std::vector<int64_t>& v) {
  HostTensor r = HostTensor::zeros(dtype, sizes);
  if (static_cast<int64_t>(v.size()) != r.numel()) TOROID_INTERNAL_ERROR("from_int64_vec: size mismatch");
  std::byte* p = r.data();
  int64_t es = r.element_size();
  for (size_t i = 0; i < v.size(); ++i) store_int(dtype, p + static_cast<int64_t>(i) * es, v[i]);
  return r;
}

void copy_one_element(DType dst_dtype, std::byte* dst, DType src_dtype, const std::byte* src) {
  if (dst_dtype == src_dtype) std::memcpy(dst, src, static_cast<size_t>(dtype_size(dst_dtype)));
  else if (is_complex(src_dtype) || is_complex(dst_dtype)) store_complex(dst_dtype, dst, load_complex(src_dtype, src));
  else if (is_floating(src_dtype)) store_double(dst_dtype, dst, load_double(src_dtype, src));
  else store_int(dst_dtype, dst, load_int(src_dtype, src));
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size(), 1);
  if (sizes.size() < 3) return contiguous_strides(sizes);
  int64_t s = 1;
  st[1] = s;
  s *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    st[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  st[0] = s;
  return st;
}

HostTensor in_memory_format_of(const HostTensor& result, const HostTensor& like) {
  if ((like.dim() != 4 && like.dim() != 5) || like.is_contiguous() || result.dim() != like.dim()) return result;
  std::vector<int64_t> cl = channels_last_strides(like.sizes());
  for (size_t d = 0; d < cl.size(); ++d)
    if (like.sizes()[d] != 1 && like.strides()[d] != cl[d]) return result;
  HostTensor out = HostTensor::empty_strided(result.dtype(), result.sizes(), channels_last_strides(result.sizes()));
  copy_into("in_memory_format_of", out, result);
  return out;
}

void require_int32_params(const std::string& op, const std::vector<int64_t>& values, const char* name) {
  for (int64_t v : values)
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      kernel_error(op, std::string(name) + " value " + std::to_string(v) + " is out of range (at most 2^31 in magnitude)");
}

int64_t checked_mul(const std::string& op, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) kernel_error(op, "size arithmetic overflows int64 (" + std::to_string(a) + " * " + std::to_string(b) + ")");
  return r;
}

int64_t checked_add(const std::string& op, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) kernel_error(op, "size arithmetic overflows int64 (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  return r;
}

}  // namespace toroid::ops
