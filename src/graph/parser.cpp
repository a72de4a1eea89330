// The .tir parser: recursive descent over the grammar in docs/tir.md, building the Graph through
// its public API. Every problem is a UserError located at the offending token; errors thrown by
// the graph and sym layers are re-thrown with the location of the construct being built.
#include <bit>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>

#include "lexer.h"
#include "toroid/graph/half.h"
#include "toroid/support/base64.h"
#include "toroid/graph/text.h"

namespace toroid {
namespace {

using text::describe_token;
using text::Lexer;
using text::printable;
using text::Tok;
using text::Token;

constexpr size_t kMaxInputBytes = size_t{64} << 20;
constexpr int kMaxDepth = 256;

// A number written in constant data or a symbol hint, kept as text so each dtype can parse it
// at its own precision.
struct RawNumber {
  Token tok;  // Int, Float, or Ident (inf, nan, true, false)
  bool negative = false;
};

struct ParsedType {
  Token at;
  ValueType type = ValueType::Tensor;
  TensorMeta meta;
  SymExpr value;                  // scalars
  std::optional<Token> storage;   // storage=%v
};

struct Def {
  Value* value;
  int line, col;
};

struct Scope {
  Graph* graph;
  std::unordered_map<std::string, Def> values;
};

class Parser {
 public:
  Parser(std::string_view src, const std::string& file) : file_(file), lex_(src, &file_) {}

  std::unique_ptr<Graph> parse_file() {
    expect_word("graph");
    auto g = std::make_unique<Graph>();
    root_ = g.get();
    env_ = &g->shape_env();
    expect(Tok::At, "'@'");
    g->set_name(parse_name("a graph name"));
    if (at_word("functional")) {
      take();
      g->set_functional(true);
    }
    parse_body(*g, /*root=*/true);
    if (!at(Tok::Eof)) fail(peek(), "expected end of file but found " + describe_token(peek()));
    return g;
  }

 private:
  // ---- tokens ----
  const Token& peek(size_t k = 0) {
    while (buf_.size() <= k) buf_.push_back(lex_.next());
    return buf_[k];
  }
  Token take() {
    peek();
    Token t = std::move(buf_.front());
    buf_.pop_front();
    return t;
  }
  bool at(Tok k, size_t ahead = 0) { return peek(ahead).kind == k; }
  bool at_word(std::string_view w, size_t ahead = 0) {
    const Token& t = peek(ahead);
    return t.kind == Tok::Ident && t.text == w;
  }
  Token expect(Tok k, const char* what) {
    if (!at(k)) fail(peek(), std::string("expected ") + what + " but found " + describe_token(peek()));
    return take();
  }
  Token expect_word(std::string_view w) {
    if (!at_word(w))
      fail(peek(), "expected '" + std::string(w) + "' but found " + describe_token(peek()));
    return take();
  }
  SourceLoc loc(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  [[noreturn]] void fail(const Token& t, std::string message) const { throw UserError(std::move(message), loc(t)); }

  // Runs a graph/sym API call, re-throwing its errors located at `t`.
  template <typename F>
  auto api(const Token& t, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const UserError& e) {
      fail(t, e.message());
    } catch (const InternalError& e) {
      fail(t, e.what());
    }
  }

  class DepthGuard {
   public:
    DepthGuard(Parser& p, const Token& t) : p_(p) {
      if (++p_.depth_ > kMaxDepth) {
        --p_.depth_;
        p_.fail(t, "nesting is deeper than " + std::to_string(kMaxDepth) + " levels");
      }
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& p_;
  };

  // IDENT or STRING (graph and subgraph names).
  std::string parse_name(const char* what) {
    if (at(Tok::String)) return take().text;
    if (at(Tok::Ident) && text::is_ident(peek().text)) return take().text;
    fail(peek(), std::string("expected ") + what + " but found " + describe_token(peek()));
  }

  // origin("name"[, "stack line"])
  NodeOrigin parse_origin() {
    take();
    expect(Tok::LParen, "'(' after origin");
    NodeOrigin o;
    o.name = expect(Tok::String, "the origin's name (a string)").text;
    if (at(Tok::Comma)) {
      take();
      o.stack = expect(Tok::String, "the origin's stack line (a string)").text;
    }
    expect(Tok::RParen, "')' closing the origin");
    return o;
  }

  // ---- numbers ----
  int64_t int_literal(const Token& t, bool negative) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    uint64_t limit = negative ? (uint64_t{1} << 63) : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (ec != std::errc() || p != t.text.data() + t.text.size() || v > limit)
      fail(t, "integer literal '" + std::string(negative ? "-" : "") + printable(t.text) +
                  "' is out of range for int64");
    return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  }
  template <typename T>
  T float_literal(const Token& t, bool negative, const char* type_name) {
    T v{};
    if (t.kind == Tok::Ident && t.text == "inf") {
      v = std::numeric_limits<T>::infinity();
    } else if (t.kind == Tok::Ident && t.text == "nan") {
      v = std::numeric_limits<T>::quiet_NaN();
    } else {
      const char* end = t.text.data() + t.text.size();
      auto [p, ec] = std::from_chars(t.text.data(), end, v);
      if (ec == std::errc::result_out_of_range) {
        // Overflow is an error; underflow rounds to zero or a subnormal.
        double d = std::strtod(t.text.c_str(), nullptr);
        if (std::fabs(d) >= 1.0 || std::isinf(d))
          fail(t, "number '" + printable(t.text) + "' is out of range for " + type_name);
        v = static_cast<T>(d);
      } else if (ec != std::errc() || p != end) {
        fail(t, "invalid number '" + printable(t.text) + "'");
      }
    }
    return negative ? -v : v;
  }
  bool at_number(size_t ahead = 0) {
    const Token& t = peek(ahead);
    return t.kind == Tok::Int || t.kind == Tok::Float ||
           (t.kind == Tok::Ident && (t.text == "inf" || t.text == "nan"));
  }
  RawNumber parse_raw_number(bool allow_bool) {
    RawNumber r;
    if (at(Tok::Minus) && at_number(1)) {
      take();
      r.negative = true;
    } else if (allow_bool && (at_word("true") || at_word("false"))) {
      r.tok = take();
      return r;
    }
    if (!at_number()) fail(peek(), "expected a number but found " + describe_token(peek()));
    r.tok = take();
    return r;
  }

  // ---- expressions (docs/tir.md precedence table) ----
  static bool numeric(SymExpr e) { return !e.is_bool(); }
  void check_numeric(const Token& op, SymExpr e) {
    if (!numeric(e)) fail(op, "operator '" + op.text + "' needs a number but got the boolean '" + e.str() + "'");
  }
  void check_int(const Token& op, SymExpr e, const char* what) {
    if (!e.is_int()) fail(op, std::string(what) + " needs an integer but got '" + e.str() + "'");
  }

  SymExpr parse_expr() {
    SymExpr a = parse_additive();
    if (!is_comparison(peek().kind)) return a;
    Token op = take();
    SymExpr b = parse_additive();
    if (is_comparison(peek().kind))
      fail(peek(), "comparisons cannot be chained; use parentheses");
    bool eq_like = op.kind == Tok::EqEq || op.kind == Tok::NotEq;
    if (eq_like ? a.is_bool() != b.is_bool() : (!numeric(a) || !numeric(b)))
      fail(op, "operator '" + op.text + "' cannot compare '" + a.str() + "' and '" + b.str() + "'");
    return api(op, [&] {
      switch (op.kind) {
        case Tok::EqEq: return sym::eq(a, b);
        case Tok::NotEq: return sym::ne(a, b);
        case Tok::Lt: return sym::lt(a, b);
        case Tok::Le: return sym::le(a, b);
        case Tok::Gt: return sym::gt(a, b);
        default: return sym::ge(a, b);
      }
    });
  }
  static bool is_comparison(Tok k) {
    return k == Tok::EqEq || k == Tok::NotEq || k == Tok::Lt || k == Tok::Le || k == Tok::Gt || k == Tok::Ge;
  }

  // Runs of + and - are built as one n-ary sum, so long sums stay linear.
  SymExpr parse_additive() {
    Token first = peek();
    SymExpr e = parse_multiplicative();
    if (!at(Tok::Plus) && !at(Tok::Minus)) return e;
    check_numeric(peek(), e);
    std::vector<SymExpr> terms{e};
    while (at(Tok::Plus) || at(Tok::Minus)) {
      Token op = take();
      SymExpr t = parse_multiplicative();
      check_numeric(op, t);
      if (op.kind == Tok::Minus) t = api(op, [&] { return sym::neg(t); });
      terms.push_back(t);
    }
    return api(first, [&] { return sym::add(std::span<const SymExpr>(terms)); });
  }

  SymExpr parse_multiplicative() {
    Token first = peek();
    SymExpr acc = parse_unary();
    std::vector<SymExpr> factors{acc};
    auto flush = [&] {
      return factors.size() == 1 ? factors[0]
                                 : api(first, [&] { return sym::mul(std::span<const SymExpr>(factors)); });
    };
    while (at(Tok::Star) || at(Tok::Slash) || at(Tok::SlashSlash) || at(Tok::Percent)) {
      Token op = take();
      SymExpr rhs = parse_unary();
      check_numeric(op, factors.back());
      check_numeric(op, rhs);
      if (op.kind == Tok::Star) {
        factors.push_back(rhs);
        continue;
      }
      SymExpr lhs = flush();
      if (op.kind != Tok::Slash) {
        check_int(op, lhs, ("operator '" + op.text + "'").c_str());
        check_int(op, rhs, ("operator '" + op.text + "'").c_str());
      }
      SymExpr r = api(op, [&] {
        if (op.kind == Tok::Slash) return sym::truediv(lhs, rhs);
        if (op.kind == Tok::SlashSlash) return sym::floordiv(lhs, rhs);
        return sym::mod(lhs, rhs);
      });
      factors.assign(1, r);
    }
    return flush();
  }

  SymExpr parse_unary() {
    if (!at(Tok::Minus)) return parse_power();
    Token op = take();
    DepthGuard guard(*this, op);
    // A negative literal is one constant (so -9223372036854775808 and -0.0 read exactly).
    if (at_number() && !at(Tok::StarStar, 1)) {
      Token t = take();
      if (t.kind == Tok::Int) return SymExpr::integer(int_literal(t, true));
      return SymExpr::floating(float_literal<double>(t, true, "a float"));
    }
    SymExpr a = parse_unary();
    check_numeric(op, a);
    return api(op, [&] { return sym::neg(a); });
  }

  SymExpr parse_power() {
    SymExpr base = parse_atom();
    if (!at(Tok::StarStar)) return base;
    Token op = take();
    DepthGuard guard(*this, op);
    Token exp_at = peek();
    SymExpr exponent = parse_unary();
    check_numeric(op, base);
    auto n = exponent.as_int();
    if (!n || *n < 0) fail(exp_at, "the exponent of '**' must be a non-negative integer constant");
    return api(op, [&] { return sym::pow(base, *n); });
  }

  SymExpr parse_atom() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: {
        Token n = take();
        return SymExpr::integer(int_literal(n, false));
      }
      case Tok::Float: {
        Token n = take();
        return SymExpr::floating(float_literal<double>(n, false, "a float"));
      }
      case Tok::LParen: {
        Token open = take();
        DepthGuard guard(*this, open);
        SymExpr e = parse_expr();
        expect(Tok::RParen, "')'");
        return e;
      }
      case Tok::Ident: break;
      default: fail(t, "expected an expression but found " + describe_token(t));
    }
    Token id = take();
    if (id.text == "true") return SymExpr::boolean(true);
    if (id.text == "false") return SymExpr::boolean(false);
    if (id.text == "inf") return SymExpr::floating(std::numeric_limits<double>::infinity());
    if (id.text == "nan") return SymExpr::floating(std::numeric_limits<double>::quiet_NaN());
    if (at(Tok::LParen)) return parse_call(id);
    if (!text::is_ident(id.text) || text::is_reserved_in_expr(id.text))
      fail(id, "expected an expression but found " + describe_token(id));
    SymExpr s = env_->lookup(id.text);
    if (!s) fail(id, "use of undefined symbol '" + printable(id.text) + "'");
    return s;
  }

  SymExpr parse_call(const Token& fn) {
    bool is_min = fn.text == "Min", is_max = fn.text == "Max", is_and = fn.text == "And",
         is_or = fn.text == "Or", is_not = fn.text == "Not", is_float = fn.text == "ToFloat";
    if (!(is_min || is_max || is_and || is_or || is_not || is_float))
      fail(fn, "unknown function '" + printable(fn.text) + "'");
    Token open = take();
    DepthGuard guard(*this, open);
    std::vector<SymExpr> args;
    std::vector<Token> arg_at;
    do {
      if (!args.empty()) take();  // ','
      arg_at.push_back(peek());
      args.push_back(parse_expr());
    } while (at(Tok::Comma));
    expect(Tok::RParen, "')'");
    bool unary = is_not || is_float;
    if (unary && args.size() != 1)
      fail(fn, fn.text + " takes 1 argument but got " + std::to_string(args.size()));
    for (size_t i = 0; i < args.size(); ++i) {
      bool ok = (is_and || is_or || is_not) ? args[i].is_bool() : is_float ? args[i].is_int() : numeric(args[i]);
      if (!ok)
        fail(arg_at[i], "invalid argument '" + args[i].str() + "' to " + fn.text + " (expected " +
                            ((is_and || is_or || is_not) ? "a boolean" : is_float ? "an integer" : "a number") +
                            ")");
    }
    std::span<const SymExpr> span(args);
    return api(fn, [&] {
      if (is_min) return sym::min(span);
      if (is_max) return sym::max(span);
      if (is_and) return sym::logical_and(span);
      if (is_or) return sym::logical_or(span);
      if (is_not) return sym::logical_not(args[0]);
      return sym::to_float(args[0]);
    });
  }

  SymExpr parse_int_expr(const char* what) {
    Token t = peek();
    SymExpr e = parse_expr();
    if (!e.is_int()) fail(t, std::string(what) + " must be an integer expression but is '" + e.str() + "'");
    return e;
  }

  // ---- graph structure ----
  void parse_body(Graph& g, bool root) {
    expect(Tok::LBrace, "'{'");
    Scope scope{&g, {}};
    bool have_output = false;
    while (!at(Tok::RBrace)) {
      const Token& t = peek();
      if (t.kind == Tok::Eof) fail(t, "expected '}' but found end of file");
      if (have_output) fail(t, "'output' must be the last item of a graph, but found " + describe_token(t));
      if (at_word("sym") || at_word("guard") || at_word("kernel")) {
        if (!root) fail(t, "'" + t.text + "' is only allowed in the root graph");
        if (t.text == "sym") parse_sym();
        else if (t.text == "kernel") parse_kernel(g);
        else parse_guard();
      } else if (at_word("output")) {
        parse_output(scope);
        have_output = true;
      } else if (t.kind == Tok::Value || t.kind == Tok::Ident || t.kind == Tok::String) {
        parse_node(scope);
      } else {
        fail(t, "expected a node, 'sym', 'guard', 'kernel' or 'output' but found " + describe_token(t));
      }
    }
    take();  // '}'
  }

  // kernel "name" : kind="cuda", entry="name", source="..." (a user kernel's table entry).
  void parse_kernel(Graph& g) {
    take();
    Token name = expect(Tok::String, "the kernel's name as a string");
    if (name.text.empty()) fail(name, "a kernel needs a name");
    if (g.find_user_kernel(name.text)) fail(name, "redefinition of kernel \"" + printable(name.text) + "\"");
    expect(Tok::Colon, "':'");
    UserKernelEntry e;
    e.name = name.text;
    e.loc = loc(name);
    std::vector<std::string> seen;
    do {
      if (!seen.empty()) take();  // ','
      if (!at(Tok::Ident))
        fail(peek(), "expected a kernel attribute (kind, entry, source, ttir, cubin) but found " + describe_token(peek()));
      Token attr = take();
      for (const std::string& s : seen)
        if (s == attr.text) fail(attr, "duplicate attribute '" + attr.text + "'");
      seen.push_back(attr.text);
      expect(Tok::Assign, "'='");
      Token value = expect(Tok::String, "a string");
      if (attr.text == "kind") e.kind = value.text;
      else if (attr.text == "entry") e.entry = value.text;
      else if (attr.text == "source") e.source = value.text;
      else if (attr.text == "ttir") e.ttir = value.text;
      else if (attr.text == "cubin") {
        std::optional<std::string> image = base64_decode(value.text);
        if (!image || image->empty()) fail(value, "cubin= must be the cubin's bytes in base64");
        e.cubin = std::move(*image);
      } else fail(attr, "unknown kernel attribute '" + printable(attr.text) + "' (kind, entry, source, ttir, cubin)");
    } while (at(Tok::Comma));
    if (e.kind != "cuda" && e.kind != "ptx" && e.kind != "cubin" && e.kind != "cpp")
      fail(name, "kernel \"" + printable(e.name) + "\" needs kind=\"cuda\", \"ptx\", \"cubin\" or \"cpp\"");
    if (std::find(seen.begin(), seen.end(), "source") == seen.end()) fail(name, "kernel \"" + printable(e.name) + "\" needs source=");
    if (!e.cubin.empty() && e.kind != "ptx")
      fail(name, "kernel \"" + printable(e.name) + "\": cubin= is the compiled form of a ptx kernel, not of kind=\"" + e.kind + "\"");
    if (e.entry.empty()) e.entry = e.name;
    g.add_user_kernel(std::move(e));
  }

  void parse_sym() {
    take();
    if (!at(Tok::Ident) || !text::is_ident(peek().text))
      fail(peek(), "expected a symbol name but found " + describe_token(peek()));
    Token name = take();
    if (text::is_reserved_in_expr(name.text)) fail(name, "'" + name.text + "' cannot be a symbol name");
    if (env_->lookup(name.text)) fail(name, "redefinition of symbol '" + name.text + "'");
    expect(Tok::Colon, "':'");
    std::optional<RawNumber> hint;
    bool unbacked = false, is_float = false, have_range = false;
    std::optional<int64_t> divisor;
    sym::ValueRange range = sym::ValueRange::at_least(0);
    std::vector<std::string> seen;
    do {
      if (!seen.empty()) take();  // ','
      if (!at(Tok::Ident))
        fail(peek(), "expected a symbol attribute (hint, unbacked, float, range, divisor) but found " +
                         describe_token(peek()));
      Token attr = take();
      for (const std::string& s : seen)
        if (s == attr.text) fail(attr, "duplicate attribute '" + attr.text + "'");
      seen.push_back(attr.text);
      if (attr.text == "unbacked") {
        unbacked = true;
      } else if (attr.text == "float") {
        is_float = true;
      } else if (attr.text == "hint") {
        expect(Tok::Assign, "'='");
        hint = parse_raw_number(false);
      } else if (attr.text == "range") {
        expect(Tok::Assign, "'='");
        expect(Tok::LBracket, "'['");
        range.lo = parse_bound();
        expect(Tok::Comma, "','");
        range.hi = parse_bound();
        expect(Tok::RBracket, "']'");
        if (range.empty()) fail(attr, "empty range " + range.str());
        have_range = true;
      } else if (attr.text == "divisor") {
        expect(Tok::Assign, "'='");
        Token d = expect(Tok::Int, "an integer");
        divisor = int_literal(d, false);
        if (*divisor < 1) fail(d, "divisor must be at least 1");
      } else {
        fail(attr, "unknown symbol attribute '" + printable(attr.text) + "'");
      }
    } while (at(Tok::Comma));
    if (unbacked == hint.has_value())
      fail(name, unbacked ? "an unbacked symbol has no hint" : "symbol '" + name.text + "' needs 'hint=' or 'unbacked'");
    if (is_float && (have_range || divisor)) fail(name, "a float symbol has no range or divisor");
    double float_hint = 0;
    int64_t int_hint = 0;
    if (hint && is_float) float_hint = float_literal<double>(hint->tok, hint->negative, "a float");
    if (hint && !is_float) {
      if (hint->tok.kind != Tok::Int) fail(hint->tok, "the hint of an integer symbol must be an integer");
      int_hint = int_literal(hint->tok, hint->negative);
    }
    api(name, [&] {
      SymExpr s;
      if (is_float) {
        s = unbacked ? env_->create_unbacked_float(name.text) : env_->create_backed_float(name.text, float_hint);
      } else {
        s = unbacked ? env_->create_unbacked(name.text, range) : env_->create_backed(name.text, int_hint, range);
      }
      if (divisor) env_->constrain_divisor(s, *divisor);
    });
  }

  int64_t parse_bound() {
    bool negative = false;
    if (at(Tok::Minus)) {
      take();
      negative = true;
    }
    if (at_word("inf")) {
      take();
      return negative ? sym::ValueRange::kNegInf : sym::ValueRange::kPosInf;
    }
    Token t = expect(Tok::Int, "an integer or 'inf'");
    return int_literal(t, negative);
  }

  void parse_guard() {
    Token kw = take();
    Token at_expr = peek();
    SymExpr cond = parse_expr();
    if (!cond.is_bool()) fail(at_expr, "a guard must be a boolean expression but got '" + cond.str() + "'");
    api(kw, [&] { env_->add_guard(cond, loc(kw)); });
  }

  Value* lookup_value(const Scope& scope, const Token& t) {
    auto it = scope.values.find(t.text);
    if (it == scope.values.end()) fail(t, "use of undefined value %" + printable(t.text));
    return it->second.value;
  }

  void parse_output(Scope& scope) {
    Token kw = take();
    std::vector<Argument> outs;
    if (!at(Tok::RBrace)) {
      do {
        if (!outs.empty()) take();  // ','
        outs.push_back(parse_argval(scope));
      } while (at(Tok::Comma));
    }
    Node* n = api(kw, [&] { return scope.graph->set_output(std::move(outs)); });
    n->set_loc(loc(kw));
  }

  Argument parse_argval(Scope& scope) {
    const Token& t = peek();
    if (t.kind == Tok::Value) return Argument(lookup_value(scope, take()));
    if (t.kind == Tok::String) {
      Token str = take();
      return api(str, [&] { return Argument::string(str.text); });
    }
    if (t.kind == Tok::LBracket) {
      Token open = take();
      DepthGuard guard(*this, open);
      Argument::List items;
      if (!at(Tok::RBracket)) {
        do {
          if (!items.empty()) take();  // ','
          items.push_back(parse_argval(scope));
        } while (at(Tok::Comma));
      }
      expect(Tok::RBracket, "']'");
      return Argument(std::move(items));
    }
    if (t.kind == Tok::Ident) {
      if (t.text == "None") {
        take();
        return Argument::none();
      }
      if (t.text == "device" && at(Tok::LParen, 1)) {
        take();
        take();
        Token s = expect(Tok::String, "a device string");
        auto d = text::device_from_name(s.text);
        if (!d) fail(s, "invalid device \"" + printable(s.text) + "\"");
        expect(Tok::RParen, "')'");
        return Argument(*d);
      }
      if (t.text.rfind("torch.", 0) == 0) {
        Token n = take();
        if (auto d = text::torch_dtype(n.text)) return Argument(*d);
        if (auto l = text::torch_layout(n.text)) return Argument(*l);
        if (auto m = text::torch_memory_format(n.text)) return Argument(*m);
        fail(n, "unknown torch constant '" + printable(n.text) + "'");
      }
    }
    return Argument(parse_expr());
  }

  void parse_args(Scope& scope, std::vector<Argument>& args, std::vector<Kwarg>& kwargs) {
    Token open = expect(Tok::LParen, "'('");
    if (!at(Tok::RParen)) {
      bool first = true;
      do {
        if (!first) take();  // ','
        first = false;
        if (at(Tok::Ident) && text::is_ident(peek().text) && at(Tok::Assign, 1)) {
          Token name = take();
          take();  // '='
          for (const Kwarg& k : kwargs)
            if (k.name == name.text) fail(name, "duplicate keyword argument '" + name.text + "'");
          kwargs.push_back(Kwarg{name.text, parse_argval(scope)});
        } else {
          if (!kwargs.empty()) fail(peek(), "positional argument after keyword arguments");
          args.push_back(parse_argval(scope));
        }
      } while (at(Tok::Comma));
    }
    expect(Tok::RParen, "')'");
  }

  ParsedType parse_type() {
    ParsedType pt;
    pt.at = peek();
    if (!at(Tok::Ident)) fail(pt.at, "expected a type but found " + describe_token(pt.at));
    const std::string& word = pt.at.text;
    bool scalar = word == "int" || word == "float" || (word == "bool" && !at(Tok::LBracket, 1));
    if (scalar) {
      take();
      pt.type = word == "int" ? ValueType::Int : word == "float" ? ValueType::Float : ValueType::Bool;
      if (at(Tok::LBrace)) {
        take();
        expect_word("value");
        expect(Tok::Assign, "'='");
        Token vt = peek();
        pt.value = parse_expr();
        bool ok = pt.type == ValueType::Int ? pt.value.is_int()
                  : pt.type == ValueType::Float ? pt.value.is_float() : pt.value.is_bool();
        if (!ok) fail(vt, "value '" + pt.value.str() + "' does not have type " + word);
        expect(Tok::RBrace, "'}'");
      }
      return pt;
    }
    auto dt = text::tir_dtype(word);
    if (!dt) fail(pt.at, "unknown type '" + printable(word) + "'");
    take();
    pt.meta.dtype = *dt;
    expect(Tok::LBracket, "'['");
    if (!at(Tok::RBracket)) {
      do {
        if (!pt.meta.sizes.empty()) take();  // ','
        pt.meta.sizes.push_back(parse_int_expr("a size"));
      } while (at(Tok::Comma));
    }
    expect(Tok::RBracket, "']'");
    bool have_strides = false;
    if (at(Tok::LBrace)) {
      take();
      std::vector<std::string> seen;
      do {
        if (!seen.empty()) take();  // ','
        if (!at(Tok::Ident))
          fail(peek(), "expected a tensor attribute (strides, offset, device, storage) but found " +
                           describe_token(peek()));
        Token attr = take();
        for (const std::string& s : seen)
          if (s == attr.text) fail(attr, "duplicate attribute '" + attr.text + "'");
        seen.push_back(attr.text);
        expect(Tok::Assign, "'='");
        if (attr.text == "strides") {
          Token open = expect(Tok::LBracket, "'['");
          if (!at(Tok::RBracket)) {
            do {
              if (!pt.meta.strides.empty()) take();  // ','
              pt.meta.strides.push_back(parse_int_expr("a stride"));
            } while (at(Tok::Comma));
          }
          expect(Tok::RBracket, "']'");
          if (pt.meta.strides.size() != pt.meta.sizes.size())
            fail(open, "expected " + std::to_string(pt.meta.sizes.size()) + " strides for " +
                           std::to_string(pt.meta.sizes.size()) + " sizes but found " +
                           std::to_string(pt.meta.strides.size()));
          have_strides = true;
        } else if (attr.text == "offset") {
          pt.meta.offset = parse_int_expr("an offset");
        } else if (attr.text == "device") {
          pt.meta.device = parse_device();
        } else if (attr.text == "storage") {
          pt.storage = expect(Tok::Value, "a value");
        } else {
          fail(attr, "unknown tensor attribute '" + printable(attr.text) + "'");
        }
      } while (at(Tok::Comma));
      expect(Tok::RBrace, "'}'");
    }
    if (!have_strides) pt.meta.strides = api(pt.at, [&] { return contiguous_strides(pt.meta.sizes); });
    return pt;
  }

  Device parse_device() {
    Token t = peek();
    if (at_word("cpu")) {
      take();
      return Device::cpu();
    }
    if (!at_word("cuda")) fail(t, "expected a device (cpu or cuda:N) but found " + describe_token(t));
    take();
    if (!at(Tok::Colon)) return Device::cuda(0);
    take();
    Token n = expect(Tok::Int, "a device index");
    int64_t index = int_literal(n, false);
    if (index > std::numeric_limits<int32_t>::max()) fail(n, "device index out of range");
    return Device::cuda(static_cast<int>(index));
  }

  // Where a result's storage comes from: a value in scope or an earlier result of the same node.
  Storage* storage_for(const Scope& scope, const ParsedType& pt, const std::vector<Token>& names,
                       const std::vector<Storage*>& earlier) {
    if (!pt.storage) return root_->new_storage();
    const Token& ref = *pt.storage;
    Value* v = nullptr;
    auto it = scope.values.find(ref.text);
    if (it != scope.values.end()) {
      v = it->second.value;
    } else {
      for (size_t i = 0; i < earlier.size(); ++i)
        if (names[i].text == ref.text) return earlier[i];
      fail(ref, "use of undefined value %" + printable(ref.text));
    }
    if (!v->is_tensor()) fail(ref, "storage=%" + printable(ref.text) + " must name a tensor value");
    Storage* s = v->meta().storage;
    return s ? s : root_->new_storage();
  }

  std::vector<ResultSpec> make_results(const Scope& scope, const std::vector<Token>& names,
                                       std::vector<ParsedType>& types) {
    std::vector<ResultSpec> specs;
    std::vector<Storage*> storages;
    for (size_t i = 0; i < types.size(); ++i) {
      ParsedType& pt = types[i];
      std::string name = i < names.size() ? names[i].text : std::string();
      if (pt.type == ValueType::Tensor) {
        pt.meta.storage = storage_for(scope, pt, names, storages);
        storages.push_back(pt.meta.storage);
        specs.push_back(ResultSpec::tensor(pt.meta, name));
      } else {
        storages.push_back(nullptr);
        specs.push_back(ResultSpec::scalar(pt.type, pt.value, name));
      }
    }
    return specs;
  }

  void define_results(Scope& scope, const std::vector<Token>& names, Node* n) {
    for (size_t i = 0; i < names.size(); ++i)
      scope.values.emplace(names[i].text, Def{n->result(i), names[i].line, names[i].col});
  }

  std::vector<ParsedType> parse_types(size_t expected) {
    expect(Tok::Colon, "':' and the result types");
    std::vector<ParsedType> types;
    do {
      if (!types.empty()) take();  // ','
      if (types.size() == expected)
        fail(peek(), "expected " + std::to_string(expected) + " type" + (expected == 1 ? "" : "s") + " for " +
                         std::to_string(expected) + " result" + (expected == 1 ? "" : "s") + " but found more");
      types.push_back(parse_type());
    } while (at(Tok::Comma));
    if (types.size() != expected)
      fail(types[0].at, "expected " + std::to_string(expected) + " types for " + std::to_string(expected) +
                       " results but found " + std::to_string(types.size()));
    return types;
  }

  void parse_node(Scope& scope) {
    Token first = peek();
    std::vector<Token> names;
    if (at(Tok::Value)) {
      do {
        if (!names.empty()) take();  // ','
        Token v = expect(Tok::Value, "a value name");
        if (auto it = scope.values.find(v.text); it != scope.values.end())
          fail(v, "redefinition of value %" + printable(v.text) + " (first defined at " +
                      std::to_string(it->second.line) + ":" + std::to_string(it->second.col) + ")");
        for (const Token& n : names)
          if (n.text == v.text) fail(v, "redefinition of value %" + printable(v.text));
        names.push_back(std::move(v));
      } while (at(Tok::Comma));
      expect(Tok::Assign, "'='");
    }
    Token head = peek();
    Node* node = nullptr;
    bool keyword = head.kind == Tok::Ident && (head.text == "input" || head.text == "param" || head.text == "constant");
    if (keyword) {
      if (names.size() != 1) fail(first, "'" + head.text + "' defines exactly one value");
      take();
      std::string target;
      if (head.text == "param") target = expect(Tok::String, "a parameter name string").text;
      bool donated = head.text == "input" && at_word("donated");
      if (donated) take();
      std::optional<ConstantData> data;
      if (head.text == "constant") data = parse_constant_data(scope);
      std::vector<ParsedType> types = parse_types(1);
      if (head.text == "param" && types[0].type != ValueType::Tensor)
        fail(types[0].at, "a param must have a tensor type");
      std::vector<ResultSpec> specs = make_results(scope, names, types);
      std::vector<uint8_t> bytes;
      if (data) bytes = constant_bytes(*data, types[0], specs[0]);
      NodeKind kind = head.text == "input" ? NodeKind::Input : head.text == "param" ? NodeKind::Param : NodeKind::Constant;
      node = api(head, [&] { return scope.graph->create_node(kind, target, {}, {}, std::move(specs)); });
      if (data) node->set_constant_data(std::move(bytes));
      node->set_donated(donated);
    } else {
      if (head.kind != Tok::Ident && head.kind != Tok::String)
        fail(head, "expected an operator, 'input', 'param' or 'constant' but found " + describe_token(head));
      if (head.kind == Tok::Ident && text::is_item_keyword(head.text))
        fail(head, "expected a node but found " + describe_token(head));
      take();
      std::vector<Argument> args;
      std::vector<Kwarg> kwargs;
      parse_args(scope, args, kwargs);
      std::vector<ResultSpec> specs;
      if (!names.empty()) {
        std::vector<ParsedType> types = parse_types(names.size());
        specs = make_results(scope, names, types);
      } else if (at(Tok::Colon)) {
        fail(peek(), "a call without results has no types");
      }
      node = api(head, [&] {
        return scope.graph->create_node(NodeKind::Call, head.text, std::move(args), std::move(kwargs),
                                        std::move(specs));
      });
    }
    node->set_loc(loc(first));
    if (at_word("origin")) node->set_origin(parse_origin());
    define_results(scope, names, node);
    while (at_word("subgraph")) {
      Token kw = take();
      DepthGuard guard(*this, kw);
      std::string name = parse_name("a subgraph name");
      for (const NamedSubgraph& s : node->subgraphs())
        if (s.name == name) fail(kw, "duplicate subgraph '" + printable(name) + "'");
      if (keyword) fail(kw, "only calls have subgraphs");
      bool functional = false;
      if (at_word("functional")) {
        take();
        functional = true;
      }
      Graph* sub = api(kw, [&] { return node->add_subgraph(name); });
      sub->set_functional(functional);
      parse_body(*sub, /*root=*/false);
    }
  }

  // ---- constants ----
  struct ConstantData {
    Token at;
    bool is_list = false;
    bool is_none = false;
    std::vector<RawNumber> numbers;  // list items, or one number
    SymExpr expr;                    // a scalar constant written as an expression
  };

  ConstantData parse_constant_data(Scope&) {
    ConstantData d;
    d.at = peek();
    if (at(Tok::LBracket)) {
      take();
      d.is_list = true;
      if (!at(Tok::RBracket)) {
        do {
          if (!d.numbers.empty()) take();  // ','
          d.numbers.push_back(parse_raw_number(true));
        } while (at(Tok::Comma));
      }
      expect(Tok::RBracket, "']'");
    } else if (at_word("None")) {
      take();
      d.is_none = true;
    } else {
      bool single = (at_number() && at(Tok::Colon, 1)) || (at(Tok::Minus) && at_number(1) && at(Tok::Colon, 2)) ||
                    ((at_word("true") || at_word("false")) && at(Tok::Colon, 1));
      if (single) d.numbers.push_back(parse_raw_number(true));
      else d.expr = parse_expr();
    }
    return d;
  }

  static bool is_bool_word(const RawNumber& r) {
    return r.tok.kind == Tok::Ident && (r.tok.text == "true" || r.tok.text == "false");
  }

  std::vector<uint8_t> constant_bytes(const ConstantData& d, const ParsedType& pt, ResultSpec& spec) {
    if (pt.type != ValueType::Tensor) {
      if (d.is_list) fail(d.at, "a scalar constant cannot be a list");
      if (d.is_none) return {};
      SymExpr v = d.expr;
      if (!v) {
        const RawNumber& r = d.numbers[0];
        if (pt.type == ValueType::Bool) {
          if (!is_bool_word(r)) fail(r.tok, "expected true or false but found " + describe_token(r.tok));
          v = SymExpr::boolean(r.tok.text == "true");
        } else if (is_bool_word(r)) {
          fail(r.tok, "expected a number but found " + describe_token(r.tok));
        } else if (pt.type == ValueType::Int) {
          if (r.tok.kind != Tok::Int) fail(r.tok, "expected an integer but found " + describe_token(r.tok));
          v = SymExpr::integer(int_literal(r.tok, r.negative));
        } else {
          v = SymExpr::floating(float_literal<double>(r.tok, r.negative, "a float"));
        }
      }
      bool ok = pt.type == ValueType::Int ? v.is_int() : pt.type == ValueType::Float ? v.is_float() : v.is_bool();
      if (!ok) fail(d.at, "constant '" + v.str() + "' does not have the result's type");
      if (pt.value && pt.value != v) fail(pt.at, "a scalar constant's type must not have a different value");
      spec.scalar_value = v;
      return {};
    }
    if (d.is_none || d.expr) fail(d.at, "tensor constant data must be a number or a list of numbers");
    uint64_t numel = 1;
    for (const SymExpr& s : pt.meta.sizes) {
      auto n = s.as_int();
      if (!n || *n < 0) fail(pt.at, "a constant must have a static shape");
      if (*n != 0 && numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(*n)) numel = UINT64_MAX;
      else numel *= static_cast<uint64_t>(*n);
    }
    DType dt = pt.meta.dtype;
    if (is_complex(dt)) {
      // Complex data lists each element's real and imaginary parts in turn.
      uint64_t parts = numel > UINT64_MAX / 2 ? UINT64_MAX : numel * 2;
      if (!d.is_list && numel == 1) fail(d.at, "a complex constant is written as a list [real, imag, ...]");
      if (parts != d.numbers.size())
        fail(d.at, "complex constant has " + std::to_string(d.numbers.size()) + " numbers but its type needs " +
                       std::to_string(parts) + " (real and imaginary part of each element)");
    } else if (numel != d.numbers.size()) {
      fail(d.at, "constant has " + std::to_string(d.numbers.size()) + " element" +
                     (d.numbers.size() == 1 ? "" : "s") + " but its type has " + std::to_string(numel));
    }
    const char* dname = text::tir_dtype_name(dt);
    std::vector<uint8_t> bytes;
    bytes.reserve(d.numbers.size() * static_cast<size_t>(dtype_size(dt)));
    auto put = [&](uint64_t bits, int size) {
      for (int i = 0; i < size; ++i) bytes.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    };
    for (const RawNumber& r : d.numbers) {
      if (dt == DType::Bool) {
        if (!is_bool_word(r)) fail(r.tok, "expected true or false but found " + describe_token(r.tok));
        put(r.tok.text == "true" ? 1 : 0, 1);
        continue;
      }
      if (is_bool_word(r)) fail(r.tok, std::string("expected a number for ") + dname + " but found " + describe_token(r.tok));
      if (dt == DType::Float64 || dt == DType::Complex128) {
        put(std::bit_cast<uint64_t>(float_literal<double>(r.tok, r.negative, dname)), 8);
      } else if (dt == DType::Complex64) {
        put(std::bit_cast<uint32_t>(float_literal<float>(r.tok, r.negative, dname)), 4);
      } else if (is_floating(dt)) {
        float f = float_literal<float>(r.tok, r.negative, dname);
        uint16_t h = 0;
        if (dt == DType::Float32) {
          put(std::bit_cast<uint32_t>(f), 4);
          continue;
        }
        h = dt == DType::Float16 ? float_to_f16(f) : float_to_bf16(f);
        bool overflow = std::isfinite(f) && (h & 0x7fffu) == (dt == DType::Float16 ? 0x7c00u : 0x7f80u);
        if (overflow) fail(r.tok, "number '" + printable(r.tok.text) + "' is out of range for " + dname);
        put(h, 2);
      } else {
        if (r.tok.kind != Tok::Int) fail(r.tok, std::string("expected an integer for ") + dname + " but found " + describe_token(r.tok));
        int64_t v = int_literal(r.tok, r.negative);
        auto [lo, hi] = integer_limits(dt).value_or(integer_limits(DType::Int64).value());
        if (v < lo || v > hi) fail(r.tok, "value " + std::to_string(v) + " is out of range for " + dname);
        put(static_cast<uint64_t>(v), dtype_size(dt));
      }
    }
    return bytes;
  }

  std::string file_;
  Lexer lex_;
  std::deque<Token> buf_;
  Graph* root_ = nullptr;
  ShapeEnv* env_ = nullptr;
  int depth_ = 0;
};

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename) {
  if (text.size() > kMaxInputBytes)
    throw UserError("input is larger than 64 MiB", SourceLoc{filename, 1, 1});
  Parser p(text, filename);
  return p.parse_file();
}

}  // namespace toroid
