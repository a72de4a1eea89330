// Scalar types and tensor attributes: dtype, device, layout, memory format.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <string_view>

namespace toroid {

enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,   // two f32: real, imaginary
  Complex128,  // two f64
};
inline constexpr int kNumDTypes = 12;

// Short names used in tensor types of the text format: bool u8 i8 i16 i32 i64 f16 bf16 f32 f64
// c64 c128.
const char* dtype_short_name(DType d);
// PyTorch names used as argument constants: torch.bool, torch.uint8, ..., torch.float64.
const char* dtype_torch_name(DType d);
// Accepts either form ("f32" or "torch.float32"), plus torch aliases (torch.float, torch.half,
// torch.long, torch.int, torch.double, torch.short, torch.cfloat, torch.cdouble).
std::optional<DType> parse_dtype(std::string_view name);
// c10::ScalarType enum codes, as schemas write integer dtype defaults (randperm's dtype=4).
std::optional<DType> dtype_from_scalar_type_code(int64_t code);
int dtype_size(DType d);  // bytes per element
bool is_floating(DType d);  // real floating types only, as torch.is_floating_point
bool is_complex(DType d);
bool is_integral(DType d, bool include_bool = false);
// The smallest and largest value of an integer dtype (bool excluded); nullopt for the others.
std::optional<std::pair<int64_t, int64_t>> integer_limits(DType d);
// c64 -> f32, c128 -> f64; other dtypes unchanged.
DType complex_value_type(DType d);
// PyTorch's toComplexType: f32 -> c64, f64 -> c128, complex unchanged; nullopt otherwise (f16
// would be complex32, which toroid lacks).
std::optional<DType> complex_of(DType d);

struct Device {
  enum class Type : uint8_t { CPU, CUDA };
  Type type = Type::CPU;
  int index = -1;  // -1 for cpu; >= 0 for cuda

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {Type::CUDA, index}; }
  bool is_cpu() const { return type == Type::CPU; }
  bool is_cuda() const { return type == Type::CUDA; }
  // "cpu", "cuda:0"
  std::string str() const;
  friend bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
};
// Accepts "cpu", "cuda" (index 0), "cuda:N".
std::optional<Device> parse_device(std::string_view text);

enum class Layout : uint8_t { Strided, SparseCoo, SparseCsr };
const char* layout_torch_name(Layout l);  // torch.strided, torch.sparse_coo, torch.sparse_csr
std::optional<Layout> parse_layout(std::string_view name);

enum class MemoryFormat : uint8_t { Contiguous, ChannelsLast, ChannelsLast3d, Preserve };
// torch.contiguous_format, torch.channels_last, torch.channels_last_3d, torch.preserve_format
const char* memory_format_torch_name(MemoryFormat m);
std::optional<MemoryFormat> parse_memory_format(std::string_view name);

}  // namespace toroid
