#include "toroid/ops/schema.h"

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "toroid/support/error.h"

namespace toroid::ops {
namespace {

struct BaseName {
  const char* text;
  SchemaType::Base base;
};

constexpr BaseName kBaseNames[] = {
    {"Tensor", SchemaType::Base::Tensor},         {"int", SchemaType::Base::Int},
    {"SymInt", SchemaType::Base::SymInt},         {"float", SchemaType::Base::Float},
    {"bool", SchemaType::Base::Bool},             {"str", SchemaType::Base::Str},
    {"Scalar", SchemaType::Base::Scalar},         {"ScalarType", SchemaType::Base::ScalarType},
    {"Layout", SchemaType::Base::Layout},         {"Device", SchemaType::Base::Device},
    {"MemoryFormat", SchemaType::Base::MemoryFormat}, {"Generator", SchemaType::Base::Generator},
    {"Dimname", SchemaType::Base::Dimname},       {"Storage", SchemaType::Base::Storage},
    {"Stream", SchemaType::Base::Stream},         {"complex", SchemaType::Base::Complex},
    {"Any", SchemaType::Base::Any},               {"SymFloat", SchemaType::Base::SymFloat},
    {"SymBool", SchemaType::Base::SymBool},
};

// Recursive-descent parser over one schema string.
class SchemaParser {
 public:
  SchemaParser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  OpSchema parse() {
    OpSchema s;
    s.ns = identifier("operator namespace");
    expect("::");
    s.name = identifier("operator name");
    s.overload = "default";
    if (accept(".")) s.overload = identifier("overload name");
    expect("(");
    bool kwarg_only = false;
    if (!accept(")")) {
      do {
        if (accept("*")) {
          kwarg_only = true;
          continue;
        }
        SchemaArgument arg = argument(/*is_return=*/false);
        arg.kwarg_only = kwarg_only;
        s.arguments.push_back(std::move(arg));
      } while (accept(","));
      expect(")");
    }
    expect("->");
    if (accept("(")) {
      if (!accept(")")) {
        do s.returns.push_back(argument(/*is_return=*/true));
        while (accept(","));
        expect(")");
      }
    } else {
      SchemaArgument ret;
      ret.type = type();  // a bare return has no name
      s.returns_list = ret.type.is_list;
      s.returns.push_back(std::move(ret));
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the return type");
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    user_error("in schema '" + std::string(text_) + "': " + message,
               SourceLoc{origin_, 1, static_cast<int>(pos_) + 1});
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  void expect(std::string_view token) {
    if (!accept(token)) fail("expected '" + std::string(token) + "'");
  }

  std::string identifier(const char* what) {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    if (start == pos_ || std::isdigit(static_cast<unsigned char>(text_[start]))) {
      pos_ = start;
      fail(std::string("expected ") + what);
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  SchemaType type() {
    SchemaType t;
    size_t at = pos_;
    std::string base = identifier("a type");
    bool found = false;
    for (const BaseName& b : kBaseNames) {
      if (base == b.text) {
        t.base = b.base;
        found = true;
      }
    }
    if (!found) {
      pos_ = at;
      skip_space();
      fail("unknown type '" + base + "'");
    }
    if (accept("(")) {
      t.alias_set = identifier("an alias set");
      if (accept("!")) t.alias_write = true;
      if (accept("->")) {
        skip_space();
        if (accept("*")) t.alias_after = "*";
        else t.alias_after = identifier("an alias set");
      }
      expect(")");
    }
    if (accept("?")) {
      // T?[] is a list of optionals; T? alone is an optional.
      if (peek("[")) t.element_optional = true;
      else t.optional = true;
    }
    if (accept("[")) {
      t.is_list = true;
      skip_space();
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) t.list_size = integer();
      expect("]");
      if (accept("?")) t.optional = true;
    }
    return t;
  }

  bool peek(std::string_view token) {
    skip_space();
    return text_.substr(pos_, token.size()) == token;
  }

  int64_t integer() {
    skip_space();
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (ec != std::errc() || ptr != text_.data() + pos_) {
      pos_ = start;
      fail("expected an integer");
    }
    return v;
  }

  SchemaArgument argument(bool is_return) {
    SchemaArgument a;
    a.type = type();
    skip_space();
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      a.name = identifier("an argument name");
    else if (!is_return)
      fail("expected an argument name");
    if (!is_return && accept("=")) {
      skip_space();
      size_t start = pos_;
      a.default_value = default_value(a.type);
      a.default_text = std::string(text_.substr(start, pos_ - start));
      a.has_default = true;
    }
    return a;
  }

  // One default: None, True/False, a number, a string, a list of numbers, or a bare name
  // (a ScalarType such as long, a MemoryFormat such as contiguous_format, or an enum such as Mean).
  Argument default_value(const SchemaType& t) {
    skip_space();
    if (pos_ >= text_.size()) fail("expected a default value");
    char c = text_[pos_];
    if (c == '[') {
      ++pos_;
      Argument::List items;
      if (!accept("]")) {
        do items.push_back(number());
        while (accept(","));
        expect("]");
      }
      return Argument(std::move(items));
    }
    if (c == '"' || c == '\'') {
      char quote = c;
      size_t start = ++pos_;
      while (pos_ < text_.size() && text_[pos_] != quote) ++pos_;
      if (pos_ >= text_.size()) fail("unterminated string default");
      std::string s(text_.substr(start, pos_ - start));
      ++pos_;
      return Argument::string(std::move(s));
    }
    if (c == '-' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t at = pos_;
      Argument n = number(t);
      // c10's MemoryFormat enum values, as some schemas write them.
      if (t.base == SchemaType::Base::MemoryFormat) {
        static constexpr MemoryFormat kByValue[] = {MemoryFormat::Contiguous, MemoryFormat::Preserve,
                                                    MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d};
        std::optional<int64_t> v = n.is_scalar() ? n.scalar().as_int() : std::nullopt;
        if (!v || *v < 0 || *v > 3) {
          pos_ = at;
          fail("unknown MemoryFormat default");
        }
        return Argument(kByValue[*v]);
      }
      return n;
    }
    std::string word = identifier("a default value");
    if (word == "None") return Argument::none();
    if (word == "True") return Argument::boolean(true);
    if (word == "False") return Argument::boolean(false);
    if (t.base == SchemaType::Base::ScalarType) {
      if (auto d = parse_dtype("torch." + word)) return Argument(*d);
      fail("unknown ScalarType default '" + word + "'");
    }
    if (t.base == SchemaType::Base::MemoryFormat) {
      if (auto m = parse_memory_format("torch." + word)) return Argument(*m);
      fail("unknown MemoryFormat default '" + word + "'");
    }
    if (t.base == SchemaType::Base::Layout) {
      if (auto l = parse_layout("torch." + word)) return Argument(*l);
      fail("unknown Layout default '" + word + "'");
    }
    return Argument::string(word);  // enums such as Mean or reduction names
  }

  Argument number(const SchemaType& t = {}) {
    skip_space();
    size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
      } else {
        break;
      }
    }
    std::string token(text_.substr(start, pos_ - start));
    if (token.empty() || token == "-" || token == "+") {
      pos_ = start;
      fail("expected a number");
    }
    if (is_float || t.base == SchemaType::Base::Float) {
      char* end = nullptr;
      double v = std::strtod(token.c_str(), &end);
      if (end != token.c_str() + token.size()) {
        pos_ = start;
        fail("malformed number '" + token + "'");
      }
      return Argument::floating(v);
    }
    int64_t v = 0;
    const char* first = token.c_str() + (token[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(first, token.c_str() + token.size(), v);
    if (ec != std::errc() || ptr != token.c_str() + token.size()) {
      pos_ = start;
      fail("malformed integer '" + token + "'");
    }
    return Argument::integer(v);
  }

  std::string_view text_;
  const std::string& origin_;
  size_t pos_ = 0;
};

std::string argument_str(const SchemaArgument& a) {
  std::string out = a.type.str();
  if (!a.name.empty()) out += " " + a.name;
  if (a.has_default) out += "=" + a.default_text;
  return out;
}

}  // namespace

const char* schema_base_name(SchemaType::Base b) {
  for (const BaseName& n : kBaseNames)
    if (n.base == b) return n.text;
  return "?";
}

const char* argument_kind_name(const Argument& a) {
  switch (a.kind()) {
    case Argument::Kind::None: return "None";
    case Argument::Kind::Scalar: return a.scalar().is_bool() ? "bool" : a.scalar().is_float() ? "float" : "int";
    case Argument::Kind::String: return "str";
    case Argument::Kind::DType: return "ScalarType";
    case Argument::Kind::Device: return "Device";
    case Argument::Kind::Layout: return "Layout";
    case Argument::Kind::MemoryFormat: return "MemoryFormat";
    case Argument::Kind::Value: return a.value()->is_tensor() ? "Tensor" : value_type_name(a.value()->type());
    case Argument::Kind::List: return "list";
  }
  return "?";
}

std::string SchemaType::str() const {
  std::string out = schema_base_name(base);
  if (!alias_set.empty()) {
    out += "(" + alias_set + (alias_write ? "!" : "");
    if (!alias_after.empty()) out += " -> " + alias_after;
    out += ")";
  }
  if (element_optional) out += "?";
  if (is_list) out += "[" + (list_size ? std::to_string(*list_size) : std::string()) + "]";
  if (optional) out += "?";
  return out;
}

std::string OpSchema::qualified_name() const { return ns + "." + name + "." + overload; }

std::vector<size_t> OpSchema::mutated_arguments() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].type.alias_write) out.push_back(i);
  return out;
}

std::optional<size_t> OpSchema::argument_index(std::string_view arg_name) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].name == arg_name) return i;
  return std::nullopt;
}

std::string OpSchema::str() const {
  std::string out = ns + "::" + name;
  if (overload != "default") out += "." + overload;
  out += "(";
  bool kw_marked = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i) out += ", ";
    if (arguments[i].kwarg_only && !kw_marked) {
      out += "*, ";
      kw_marked = true;
    }
    out += argument_str(arguments[i]);
  }
  out += ") -> ";
  if (returns.size() == 1 && (returns_list || returns[0].name.empty())) {
    out += argument_str(returns[0]);
  } else {
    out += "(";
    for (size_t i = 0; i < returns.size(); ++i) out += (i ? ", " : "") + argument_str(returns[i]);
    out += ")";
  }
  return out;
}

OpSchema parse_schema(std::string_view text, const std::string& origin) {
  return SchemaParser(text, origin).parse();
}

}  // namespace toroid::ops
