#include "toroid/graph/types.h"

#include <array>
#include <charconv>
#include <limits>

namespace toroid {

namespace {

struct DTypeNames {
  DType dtype;
  const char* short_name;
  const char* torch_name;
  int size;
};

constexpr std::array<DTypeNames, kNumDTypes> kDTypes = {{
    {DType::Bool, "bool", "torch.bool", 1},
    {DType::UInt8, "u8", "torch.uint8", 1},
    {DType::Int8, "i8", "torch.int8", 1},
    {DType::Int16, "i16", "torch.int16", 2},
    {DType::Int32, "i32", "torch.int32", 4},
    {DType::Int64, "i64", "torch.int64", 8},
    {DType::Float16, "f16", "torch.float16", 2},
    {DType::BFloat16, "bf16", "torch.bfloat16", 2},
    {DType::Float32, "f32", "torch.float32", 4},
    {DType::Float64, "f64", "torch.float64", 8},
    {DType::Complex64, "c64", "torch.complex64", 8},
    {DType::Complex128, "c128", "torch.complex128", 16},
}};

const DTypeNames& entry(DType d) {
  auto i = static_cast<size_t>(d);
  // An out-of-range enum value can only come from a cast bug; fall back rather than read past.
  return i < kDTypes.size() ? kDTypes[i] : kDTypes[static_cast<size_t>(DType::Float32)];
}

}  // namespace

const char* dtype_short_name(DType d) { return entry(d).short_name; }
const char* dtype_torch_name(DType d) { return entry(d).torch_name; }
int dtype_size(DType d) { return entry(d).size; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeNames& e : kDTypes) {
    if (name == e.short_name || name == e.torch_name) return e.dtype;
  }
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"torch.float", DType::Float32}, {"torch.half", DType::Float16}, {"torch.long", DType::Int64},
      {"torch.int", DType::Int32},     {"torch.double", DType::Float64}, {"torch.short", DType::Int16},
      {"torch.cfloat", DType::Complex64}, {"torch.cdouble", DType::Complex128},
  };
  for (const Alias& a : kAliases) {
    if (name == a.name) return a.dtype;
  }
  return std::nullopt;
}

bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

bool is_complex(DType d) { return d == DType::Complex64 || d == DType::Complex128; }

DType complex_value_type(DType d) {
  if (d == DType::Complex64) return DType::Float32;
  if (d == DType::Complex128) return DType::Float64;
  return d;
}

std::optional<DType> complex_of(DType d) {
  // f16 would be complex32, which toroid does not have (and bf16 has no complex type at all).
  if (is_complex(d)) return d;
  if (d == DType::Float64) return DType::Complex128;
  if (d == DType::Float32) return DType::Complex64;
  return std::nullopt;
}

std::optional<std::pair<int64_t, int64_t>> integer_limits(DType d) {
  switch (d) {
    case DType::UInt8: return std::pair<int64_t, int64_t>{0, 255};
    case DType::Int8: return std::pair<int64_t, int64_t>{-128, 127};
    case DType::Int16: return std::pair<int64_t, int64_t>{-32768, 32767};
    case DType::Int32: return std::pair<int64_t, int64_t>{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::Int64: return std::pair<int64_t, int64_t>{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    default: return std::nullopt;
  }
}

bool is_integral(DType d, bool include_bool) {
  switch (d) {
    case DType::Bool:
      return include_bool;
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return true;
    default:
      return false;
  }
}

std::string Device::str() const {
  if (type == Type::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

std::optional<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  constexpr std::string_view kPrefix = "cuda:";
  if (!text.starts_with(kPrefix)) return std::nullopt;
  std::string_view digits = text.substr(kPrefix.size());
  // Digits only: no sign, no spaces, no trailing junk, and it must fit in an int.
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int index = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return Device::cuda(index);
}

const char* layout_torch_name(Layout l) {
  switch (l) {
    case Layout::Strided:
      return "torch.strided";
    case Layout::SparseCoo:
      return "torch.sparse_coo";
    case Layout::SparseCsr:
      return "torch.sparse_csr";
  }
  return "torch.strided";
}

std::optional<Layout> parse_layout(std::string_view name) {
  for (Layout l : {Layout::Strided, Layout::SparseCoo, Layout::SparseCsr}) {
    if (name == layout_torch_name(l)) return l;
  }
  return std::nullopt;
}

const char* memory_format_torch_name(MemoryFormat m) {
  switch (m) {
    case MemoryFormat::Contiguous:
      return "torch.contiguous_format";
    case MemoryFormat::ChannelsLast:
      return "torch.channels_last";
    case MemoryFormat::ChannelsLast3d:
      return "torch.channels_last_3d";
    case MemoryFormat::Preserve:
      return "torch.preserve_format";
  }
  return "torch.contiguous_format";
}

std::optional<MemoryFormat> parse_memory_format(std::string_view name) {
  for (MemoryFormat m : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d,
                         MemoryFormat::Preserve}) {
    if (name == memory_format_torch_name(m)) return m;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_scalar_type_code(int64_t code) {
  switch (code) {
    case 0: return DType::UInt8;
    case 1: return DType::Int8;
    case 2: return DType::Int16;
    case 3: return DType::Int32;
    case 4: return DType::Int64;
    case 5: return DType::Float16;
    case 6: return DType::Float32;
    case 7: return DType::Float64;
    case 9: return DType::Complex64;
    case 10: return DType::Complex128;
    case 11: return DType::Bool;
    case 15: return DType::BFloat16;
    default: return std::nullopt;
  }
}

}  // namespace toroid
