#include "lexer.h"

namespace toroid::text {
namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_value_char(char c) { return is_ident_char(c) || c == '.'; }
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct DTypeNames {
  DType dtype;
  const char* tir;
  const char* torch;
};
constexpr DTypeNames kDTypes[] = {
    {DType::Bool, "bool", "torch.bool"},        {DType::UInt8, "u8", "torch.uint8"},
    {DType::Int8, "i8", "torch.int8"},          {DType::Int16, "i16", "torch.int16"},
    {DType::Int32, "i32", "torch.int32"},       {DType::Int64, "i64", "torch.int64"},
    {DType::Float16, "f16", "torch.float16"},   {DType::BFloat16, "bf16", "torch.bfloat16"},
    {DType::Float32, "f32", "torch.float32"},   {DType::Float64, "f64", "torch.float64"},
    {DType::Complex64, "c64", "torch.complex64"}, {DType::Complex128, "c128", "torch.complex128"},
};
struct DTypeAlias {
  const char* name;
  DType dtype;
};
constexpr DTypeAlias kDTypeAliases[] = {
    {"torch.float", DType::Float32}, {"torch.half", DType::Float16},  {"torch.long", DType::Int64},
    {"torch.int", DType::Int32},     {"torch.double", DType::Float64}, {"torch.short", DType::Int16},
    {"torch.cfloat", DType::Complex64}, {"torch.cdouble", DType::Complex128},
};
constexpr std::pair<Layout, const char*> kLayouts[] = {
    {Layout::Strided, "torch.strided"},
    {Layout::SparseCoo, "torch.sparse_coo"},
    {Layout::SparseCsr, "torch.sparse_csr"},
};
constexpr std::pair<MemoryFormat, const char*> kMemoryFormats[] = {
    {MemoryFormat::Contiguous, "torch.contiguous_format"},
    {MemoryFormat::ChannelsLast, "torch.channels_last"},
    {MemoryFormat::ChannelsLast3d, "torch.channels_last_3d"},
    {MemoryFormat::Preserve, "torch.preserve_format"},
};

}  // namespace

const char* tir_dtype_name(DType d) {
  for (const auto& n : kDTypes)
    if (n.dtype == d) return n.tir;
  return "?";
}
std::optional<DType> tir_dtype(std::string_view s) {
  for (const auto& n : kDTypes)
    if (s == n.tir) return n.dtype;
  return std::nullopt;
}
const char* torch_dtype_name(DType d) {
  for (const auto& n : kDTypes)
    if (n.dtype == d) return n.torch;
  return "?";
}
std::optional<DType> torch_dtype(std::string_view s) {
  for (const auto& n : kDTypes)
    if (s == n.torch) return n.dtype;
  for (const auto& a : kDTypeAliases)
    if (s == a.name) return a.dtype;
  return std::nullopt;
}
const char* torch_layout_name(Layout l) {
  for (const auto& [v, n] : kLayouts)
    if (v == l) return n;
  return "?";
}
std::optional<Layout> torch_layout(std::string_view s) {
  for (const auto& [v, n] : kLayouts)
    if (s == n) return v;
  return std::nullopt;
}
const char* torch_memory_format_name(MemoryFormat m) {
  for (const auto& [v, n] : kMemoryFormats)
    if (v == m) return n;
  return "?";
}
std::optional<MemoryFormat> torch_memory_format(std::string_view s) {
  for (const auto& [v, n] : kMemoryFormats)
    if (s == n) return v;
  return std::nullopt;
}

std::string device_name(Device d) {
  if (d.is_cpu()) return "cpu";
  return "cuda:" + std::to_string(d.index);
}
std::optional<Device> device_from_name(std::string_view s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.substr(0, 5) != "cuda:" || s.size() == 5 || s.size() > 5 + 9) return std::nullopt;
  int index = 0;
  for (char c : s.substr(5)) {
    if (!is_digit(c)) return std::nullopt;
    index = index * 10 + (c - '0');
  }
  return Device::cuda(index);
}

std::string quote(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

bool is_ident(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}
bool is_dotted_ident(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0]) || s.back() == '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (s[i + 1] == '.') return false;
    } else if (!is_ident_char(s[i])) {
      return false;
    }
  }
  return true;
}
bool is_value_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_value_char(c)) return false;
  return true;
}
bool is_reserved_in_expr(std::string_view s) {
  for (const char* w : {"true", "false", "inf", "nan", "None", "Min", "Max", "ToFloat", "And", "Or", "Not"})
    if (s == w) return true;
  return false;
}
bool is_item_keyword(std::string_view s) {
  for (const char* w : {"sym", "guard", "output", "input", "param", "constant", "subgraph", "origin", "kernel"})
    if (s == w) return true;
  return false;
}

std::string printable(std::string_view s, size_t max_len) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string describe_token(const Token& t) {
  switch (t.kind) {
    case Tok::Eof: return "end of file";
    case Tok::Value: return "'%" + printable(t.text) + "'";
    case Tok::String: return "string \"" + printable(t.text) + "\"";
    default: return "'" + printable(t.text) + "'";
  }
}

void Lexer::fail(const std::string& message, int line, int col) const {
  throw UserError(message, SourceLoc{*file_, line, col});
}

void Lexer::skip_space_and_comments() {
  while (pos_ < src_.size()) {
    char c = src_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      col_ = 1;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
      ++col_;
    } else if (c == '#') {
      while (pos_ < src_.size() && src_[pos_] != '\n') {
        ++pos_;
        ++col_;
      }
    } else {
      return;
    }
  }
}

Token Lexer::lex_string(int line, int col) {
  Token t{Tok::String, {}, line, col};
  ++pos_;  // opening quote
  ++col_;
  while (true) {
    if (pos_ >= src_.size() || src_[pos_] == '\n') fail("unterminated string", line, col);
    char c = src_[pos_];
    if (c == '"') {
      ++pos_;
      ++col_;
      return t;
    }
    if (c != '\\') {
      t.text += c;
      ++pos_;
      ++col_;
      continue;
    }
    int esc_col = col_;
    if (pos_ + 1 >= src_.size()) fail("unterminated string", line, col);
    char e = src_[pos_ + 1];
    pos_ += 2;
    col_ += 2;
    switch (e) {
      case '\\': t.text += '\\'; break;
      case '"': t.text += '"'; break;
      case 'n': t.text += '\n'; break;
      case 't': t.text += '\t'; break;
      case 'x': {
        int hi = pos_ < src_.size() ? hex_digit(src_[pos_]) : -1;
        int lo = pos_ + 1 < src_.size() ? hex_digit(src_[pos_ + 1]) : -1;
        if (hi < 0 || lo < 0) fail("invalid escape in string: \\x needs two hex digits", line_, esc_col);
        t.text += static_cast<char>(hi * 16 + lo);
        pos_ += 2;
        col_ += 2;
        break;
      }
      default:
        fail("invalid escape '\\" + printable(std::string_view(&e, 1)) + "' in string", line_, esc_col);
    }
  }
}

Token Lexer::lex_number(int line, int col) {
  size_t start = pos_;
  bool is_float = false;
  while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
  if (pos_ < src_.size() && src_[pos_] == '.') {
    is_float = true;
    ++pos_;
    if (pos_ >= src_.size() || !is_digit(src_[pos_]))
      fail("invalid number '" + printable(src_.substr(start, pos_ - start)) + "': expected digits after '.'",
           line, col);
    while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
  }
  if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
    is_float = true;
    ++pos_;
    if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
    if (pos_ >= src_.size() || !is_digit(src_[pos_]))
      fail("invalid number '" + printable(src_.substr(start, pos_ - start)) + "': expected exponent digits",
           line, col);
    while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
  }
  col_ += static_cast<int>(pos_ - start);
  return Token{is_float ? Tok::Float : Tok::Int, std::string(src_.substr(start, pos_ - start)), line, col};
}

Token Lexer::next() {
  size_t before = pos_;
  skip_space_and_comments();
  // '%' right after an operand (no space) is the modulo operator: "s0%2".
  bool touching = pos_ == before && prev_operand_;
  Token t = [&]() -> Token {
    int line = line_, col = col_;
    if (pos_ >= src_.size()) return Token{Tok::Eof, {}, line, col};
    char c = src_[pos_];
    auto punct = [&](Tok k, size_t n) {
      Token p{k, std::string(src_.substr(pos_, n)), line, col};
      pos_ += n;
      col_ += static_cast<int>(n);
      return p;
    };
    char c1 = pos_ + 1 < src_.size() ? src_[pos_ + 1] : '\0';
    if (is_ident_start(c)) {
      size_t start = pos_;
      while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
      while (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_ident_char(src_[pos_ + 1])) {
        ++pos_;
        while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
      }
      col_ += static_cast<int>(pos_ - start);
      return Token{Tok::Ident, std::string(src_.substr(start, pos_ - start)), line, col};
    }
    if (is_digit(c)) return lex_number(line, col);
    if (c == '"') return lex_string(line, col);
    if (c == '%' && is_value_char(c1) && !touching) {
      size_t start = ++pos_;
      while (pos_ < src_.size() && is_value_char(src_[pos_])) ++pos_;
      col_ += static_cast<int>(pos_ - start + 1);
      return Token{Tok::Value, std::string(src_.substr(start, pos_ - start)), line, col};
    }
    switch (c) {
      case '(': return punct(Tok::LParen, 1);
      case ')': return punct(Tok::RParen, 1);
      case '[': return punct(Tok::LBracket, 1);
      case ']': return punct(Tok::RBracket, 1);
      case '{': return punct(Tok::LBrace, 1);
      case '}': return punct(Tok::RBrace, 1);
      case ',': return punct(Tok::Comma, 1);
      case ':': return punct(Tok::Colon, 1);
      case '@': return punct(Tok::At, 1);
      case '+': return punct(Tok::Plus, 1);
      case '-': return punct(Tok::Minus, 1);
      case '%': return punct(Tok::Percent, 1);
      case '*': return c1 == '*' ? punct(Tok::StarStar, 2) : punct(Tok::Star, 1);
      case '/': return c1 == '/' ? punct(Tok::SlashSlash, 2) : punct(Tok::Slash, 1);
      case '=': return c1 == '=' ? punct(Tok::EqEq, 2) : punct(Tok::Assign, 1);
      case '!':
        if (c1 == '=') return punct(Tok::NotEq, 2);
        break;
      case '<': return c1 == '=' ? punct(Tok::Le, 2) : punct(Tok::Lt, 1);
      case '>': return c1 == '=' ? punct(Tok::Ge, 2) : punct(Tok::Gt, 1);
      default: break;
    }
    fail("unexpected character '" + printable(src_.substr(pos_, 1)) + "'", line, col);
  }();
  prev_operand_ = t.kind == Tok::Ident || t.kind == Tok::Int || t.kind == Tok::Float ||
                  t.kind == Tok::RParen || t.kind == Tok::RBracket;
  return t;
}

}  // namespace toroid::text
