#include "toroid/ops/npy.h"

#include <bit>
#include <cstring>
#include <optional>

#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"

namespace toroid::ops {

namespace {

constexpr size_t kMaxHeader = 1 << 20;  // numpy's own headers are far smaller

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

// A tiny parser for the header: a Python dict literal with string keys and values that are
// strings, True/False, or tuples of ints.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        h.descr = parse_string();
        seen_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = parse_bool();
        seen_fortran = true;
      } else if (key == "shape") {
        h.shape = parse_tuple();
        seen_shape = true;
      } else {
        fail("unexpected header key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      expect('}');
      break;
    }
    skip_ws();
    if (i_ != s_.size()) fail("unexpected text after the header dict");
    if (!seen_descr || !seen_fortran || !seen_shape)
      fail("header must have the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { user_error(name_ + ": malformed .npy header: " + msg); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string parse_string() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++i_;
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  bool parse_bool() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<int64_t> parse_tuple() {
    std::vector<int64_t> out;
    expect('(');
    while (true) {
      skip_ws();
      if (peek() == ')') {
        ++i_;
        return out;
      }
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in the shape");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v))
          fail("shape entry too large");
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      skip_ws();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

struct DescrInfo {
  DType dtype;
  bool big_endian;
};

std::optional<DescrInfo> parse_descr(const std::string& d) {
  if (d.size() < 3) return std::nullopt;
  char order = d[0];
  std::string code = d.substr(1);
  bool big = order == '>' || (order == '=' && std::endian::native == std::endian::big);
  if (order != '<' && order != '>' && order != '|' && order != '=') return std::nullopt;
  struct Row { const char* code; DType dtype; };
  static const Row rows[] = {{"b1", DType::Bool},   {"u1", DType::UInt8},   {"i1", DType::Int8},
                             {"i2", DType::Int16},  {"i4", DType::Int32},   {"i8", DType::Int64},
                             {"f2", DType::Float16}, {"u2", DType::BFloat16}, {"f4", DType::Float32},
                             {"f8", DType::Float64}, {"c8", DType::Complex64}, {"c16", DType::Complex128}};
  for (const Row& r : rows) {
    if (code != r.code) continue;
    if (order == '|' && dtype_size(r.dtype) != 1) return std::nullopt;  // '|' is for 1-byte types only
    return DescrInfo{r.dtype, big && dtype_size(r.dtype) > 1};
  }
  return std::nullopt;
}

const char* descr_of(DType d) {
  switch (d) {
    case DType::Bool: return "|b1";
    case DType::UInt8: return "|u1";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::Float16: return "<f2";
    case DType::BFloat16: return "<u2";
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Complex64: return "<c8";
    case DType::Complex128: return "<c16";
  }
  return "?";
}

uint32_t read_le(std::string_view b, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

void byteswap_elements(std::byte* p, size_t count, size_t width) {
  for (size_t i = 0; i < count; ++i)
    for (size_t j = 0; j < width / 2; ++j) std::swap(p[i * width + j], p[i * width + width - 1 - j]);
}

}  // namespace

HostTensor parse_npy(std::string_view bytes, const std::string& name) {
  auto fail = [&](const std::string& msg) { user_error(name + ": " + msg); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6))
    fail("not a .npy file (missing the \\x93NUMPY magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) fail("truncated header length");
  size_t header_len = read_le(bytes, 8, len_bytes);
  if (header_len > kMaxHeader) fail("header length " + std::to_string(header_len) + " is too large");
  size_t data_start = 8 + len_bytes + header_len;
  if (bytes.size() < data_start) fail("truncated header");
  std::string_view htext = bytes.substr(8 + len_bytes, header_len);
  for (char c : htext)
    if (c == '\0') fail("malformed .npy header: NUL byte");
  Header h = HeaderParser(htext, name).parse();
  auto info = parse_descr(h.descr);
  if (!info)
    fail("unsupported dtype descr '" + h.descr +
         "' (supported: b1 u1 i1 i2 i4 i8 f2 f4 f8 c8 c16, and u2 for bfloat16 bits)");
  int64_t numel = 1;
  for (int64_t s : h.shape)
    if (__builtin_mul_overflow(numel, s, &numel)) fail("shape " + shape_str(h.shape) + " is too large");
  int64_t nbytes;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(dtype_size(info->dtype)), &nbytes))
    fail("shape " + shape_str(h.shape) + " is too large");
  size_t have = bytes.size() - data_start;
  if (have != static_cast<size_t>(nbytes))
    fail("data has " + std::to_string(have) + " bytes but shape " + shape_str(h.shape) + " of " + h.descr + " needs " +
         std::to_string(nbytes));
  // Read the raw elements in file order into a contiguous buffer, then fix order and layout.
  HostTensor raw = HostTensor::zeros(info->dtype, {numel});
  if (nbytes > 0) std::memcpy(raw.data(), bytes.data() + data_start, static_cast<size_t>(nbytes));
  bool swap = info->big_endian != (std::endian::native == std::endian::big);
  if (swap) {
    // A complex element is two floats, each swapped on its own.
    size_t parts = is_complex(info->dtype) ? 2 : 1;
    byteswap_elements(raw.data(), static_cast<size_t>(numel) * parts,
                      static_cast<size_t>(dtype_size(info->dtype)) / parts);
  }
  if (info->dtype == DType::Bool) {
    for (int64_t i = 0; i < numel; ++i) raw.data()[i] = std::byte{raw.data()[i] != std::byte{0}};
  }
  if (!h.fortran || h.shape.size() <= 1) return raw.as_strided(h.shape, contiguous_strides(h.shape), 0);
  // Fortran order: the first index varies fastest.
  std::vector<int64_t> fstrides(h.shape.size());
  int64_t s = 1;
  for (size_t d = 0; d < h.shape.size(); ++d) {
    fstrides[d] = s;
    s *= h.shape[d] > 1 ? h.shape[d] : 1;
  }
  if (numel == 0) return HostTensor::zeros(info->dtype, h.shape);
  return raw.as_strided(h.shape, fstrides, 0).clone();
}

std::string serialize_npy(const HostTensor& t) {
  if (!t.defined()) user_error("write_npy: undefined tensor");
  HostTensor c = t.clone();
  std::string dict = std::string("{'descr': '") + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.sizes().size(); ++i) {
    dict += std::to_string(t.sizes()[i]);
    dict += t.sizes().size() == 1 ? "," : (i + 1 < t.sizes().size() ? ", " : "");
  }
  dict += "), }";
  int major = 1;
  size_t total = 10 + dict.size() + 1;
  if ((total + 63) / 64 * 64 - 10 > 65535) {
    major = 2;
    total = 12 + dict.size() + 1;
  }
  size_t padded = (total + 63) / 64 * 64;
  size_t pre = major == 1 ? 10 : 12;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  size_t hl = dict.size();
  for (size_t i = 0; i < pre - 8; ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += dict;
  size_t nbytes = static_cast<size_t>(c.numel() * c.element_size());
  size_t at = out.size();
  out.resize(at + nbytes);
  if (nbytes) std::memcpy(out.data() + at, c.data(), nbytes);
  if (std::endian::native == std::endian::big)
    byteswap_elements(reinterpret_cast<std::byte*>(out.data() + at), static_cast<size_t>(c.numel()),
                      static_cast<size_t>(c.element_size()));
  return out;
}

HostTensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

void write_npy(const std::string& path, const HostTensor& t) { write_file_atomic(path, serialize_npy(t)); }

}  // namespace toroid::ops
