// Lexer for the .tir text format (docs/tir.md). Private to src/graph.
//
// Tokens are produced on demand (the parser keeps a small lookahead), so a large input never
// becomes a large token array. Every error is a UserError located at file:line:col.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "toroid/graph/types.h"
#include "toroid/support/error.h"

namespace toroid::text {

enum class Tok : uint8_t {
  Eof,
  Ident,   // [A-Za-z_][A-Za-z0-9_]* with optional .segments (aten.add.Tensor, torch.float32)
  Value,   // %name; text excludes the '%'
  Int,     // decimal digits (sign is a separate token)
  Float,   // digits with '.' and/or an exponent
  String,  // text is the decoded contents
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Colon, Assign, At,
  Plus, Minus, Star, StarStar, Slash, SlashSlash, Percent,
  EqEq, NotEq, Lt, Le, Gt, Ge,
};

struct Token {
  Tok kind = Tok::Eof;
  std::string text;  // source text (decoded for strings, without '%' for values)
  int line = 1;
  int col = 1;
};

// "'foo'", "end of file": how a token is named in "expected X but found Y".
std::string describe_token(const Token& t);
// Printable form of arbitrary bytes for messages (non-printables as \xHH, truncated).
std::string printable(std::string_view s, size_t max_len = 40);

// Names shared by the printer and the parser.
const char* tir_dtype_name(DType d);                  // "f32"
std::optional<DType> tir_dtype(std::string_view s);   // short names only
const char* torch_dtype_name(DType d);                // "torch.float32"
std::optional<DType> torch_dtype(std::string_view s); // with the torch aliases
const char* torch_layout_name(Layout l);
std::optional<Layout> torch_layout(std::string_view s);
const char* torch_memory_format_name(MemoryFormat m);
std::optional<MemoryFormat> torch_memory_format(std::string_view s);
std::string device_name(Device d);                     // "cpu", "cuda:0"
std::optional<Device> device_from_name(std::string_view s);  // "cpu", "cuda", "cuda:N"

// A string literal as .tir writes it: quotes and backslashes escaped, control and non-ASCII
// bytes as \n, \t or \xHH, so any string prints on one line and reads back the same.
std::string quote(std::string_view s);
bool is_ident(std::string_view s);         // IDENT, no dots
bool is_dotted_ident(std::string_view s);  // what the lexer reads as one Ident token
bool is_value_name(std::string_view s);    // [A-Za-z0-9_.]+
// Words with a meaning in expressions (true, inf, Min, ...): not usable as symbol names.
bool is_reserved_in_expr(std::string_view s);
// Words that start an item or a right-hand side: an op with such a name is printed quoted.
bool is_item_keyword(std::string_view s);

class Lexer {
 public:
  Lexer(std::string_view src, const std::string* file) : src_(src), file_(file) {}
  Token next();

 private:
  [[noreturn]] void fail(const std::string& message, int line, int col) const;
  void skip_space_and_comments();
  Token lex_string(int line, int col);
  Token lex_number(int line, int col);
  bool prev_operand_ = false;  // the previous token could end an operand
  std::string_view src_;
  const std::string* file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace toroid::text
