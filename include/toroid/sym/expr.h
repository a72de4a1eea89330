// Symbolic scalar expressions: hash-consed, immutable, compared by pointer.
//
// One node type covers integers (sizes, strides), booleans (conditions, guards) and floats
// (scalar arguments). Constructors canonicalize as they build (constant folding, flattening,
// canonical operand order), so structurally equal expressions are the same object. Rewrites
// that need facts about symbols (ranges, divisibility) live in the simplifier (simplify.h).
//
// Division and modulo follow Python: FloorDiv rounds toward negative infinity and Mod takes
// the sign of the divisor.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace toroid::sym {

enum class Kind : uint8_t {
  IntConst,    // int_value()
  FloatConst,  // float_value(); hashed by bit pattern, so -0.0 and nan are distinct constants
  BoolConst,   // bool_value()
  Symbol,      // symbol()
  Add,         // n-ary, flattened
  Mul,         // n-ary, flattened
  FloorDiv,    // [a, b]: floor(a / b), integers
  Mod,         // [a, b]: a - b * floor(a / b), integers
  TrueDiv,     // [a, b]: a / b as a float
  Pow,         // [base]; exponent() is a constant >= 0
  Min,         // n-ary
  Max,         // n-ary
  ToFloat,     // [a]: integer to float
  Eq,          // [a, b] -> bool
  Ne,          // [a, b] -> bool
  Lt,          // [a, b] -> bool (a > b is built as Lt(b, a))
  Le,          // [a, b] -> bool (a >= b is built as Le(b, a))
  And,         // n-ary bool
  Or,          // n-ary bool
  Not,         // [a] bool
};

enum class Type : uint8_t { Int, Float, Bool };

const char* kind_name(Kind k);

// A symbol is a variable, identified by its object; its name is only for printing.
// Symbols are created by ShapeEnv, which also holds their hints and ranges.
struct SymbolDecl {
  std::string name;
  Type type = Type::Int;
  uint64_t id = 0;  // creation order; gives a stable canonical order among symbols
};

class Node;

// A handle to a hash-consed node. Default-constructed handles are null.
class Expr {
 public:
  Expr() = default;

  static Expr integer(int64_t v);
  static Expr floating(double v);
  static Expr boolean(bool v);
  // Creates a fresh symbol (distinct from every other, whatever its name). ShapeEnv calls this;
  // most code should go through ShapeEnv so the symbol has a range.
  static Expr fresh_symbol(std::string name, Type type = Type::Int);
  // A fresh symbol with a fixed place in the canonical order (its id), for process-wide
  // variables (the loop IR's index variables): expressions over them must print the same
  // whenever they were made. `order` must be unique and at least kFixedOrderBase.
  static Expr fresh_symbol_ordered(std::string name, uint64_t order, Type type = Type::Int);
  static constexpr uint64_t kFixedOrderBase = uint64_t{1} << 62;

  bool is_null() const { return node_ == nullptr; }
  explicit operator bool() const { return node_ != nullptr; }
  Kind kind() const;
  Type type() const;
  bool is_int() const { return type() == Type::Int; }
  bool is_float() const { return type() == Type::Float; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_constant() const;  // IntConst, FloatConst or BoolConst
  bool is_symbol() const { return kind() == Kind::Symbol; }

  int64_t int_value() const;   // IntConst only
  double float_value() const;  // FloatConst only
  bool bool_value() const;     // BoolConst only
  std::optional<int64_t> as_int() const;  // the value if an IntConst
  const SymbolDecl& symbol() const;       // Symbol only
  int64_t exponent() const;               // Pow only
  std::span<const Expr> operands() const;
  size_t hash() const;

  // Does the expression mention any symbol?
  bool has_symbols() const;
  // Every distinct symbol the expression mentions, in canonical order.
  std::vector<Expr> free_symbols() const;

  // Python-like text: "2*s0 + 1", "s0//4", "Min(s0, 8)", "s0 < 16", "And(a, b)".
  // print() output parses back (graph text format) to the same expression.
  std::string str() const;

  friend bool operator==(Expr a, Expr b) { return a.node_ == b.node_; }
  friend bool operator!=(Expr a, Expr b) { return a.node_ != b.node_; }
  // Canonical total order (used for sorting operands); stable across runs for the same input.
  friend bool operator<(Expr a, Expr b) { return compare(a, b) < 0; }
  static int compare(Expr a, Expr b);

  const Node* node() const { return node_; }
  explicit Expr(const Node* n) : node_(n) {}

 private:
  const Node* node_ = nullptr;
};

// Builders. All canonicalize; none needs facts about symbols. Integer overflow in constant
// folding is not folded (the expression is kept symbolic) rather than wrapping.
// Mixing int and float promotes to float; mixing bool with arithmetic is an InternalError.
Expr add(Expr a, Expr b);
Expr add(std::span<const Expr> terms);
Expr sub(Expr a, Expr b);
Expr neg(Expr a);
Expr mul(Expr a, Expr b);
Expr mul(std::span<const Expr> factors);
Expr floordiv(Expr a, Expr b);  // integers; b == 0 constant is a UserError
Expr mod(Expr a, Expr b);       // integers; b == 0 constant is a UserError
Expr truediv(Expr a, Expr b);
Expr pow(Expr base, int64_t exponent);  // exponent >= 0
Expr min(Expr a, Expr b);
Expr min(std::span<const Expr> args);
Expr max(Expr a, Expr b);
Expr max(std::span<const Expr> args);
Expr to_float(Expr a);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);  // lt(b, a)
Expr ge(Expr a, Expr b);  // le(b, a)
Expr logical_and(Expr a, Expr b);
Expr logical_and(std::span<const Expr> args);
Expr logical_or(Expr a, Expr b);
Expr logical_or(std::span<const Expr> args);
Expr logical_not(Expr a);

// Rebuilds a node of kind `k` from new operands through the builders above (so the result is
// canonical). `like` supplies the constant payload (value, symbol, exponent) where needed.
Expr rebuild(Expr like, std::span<const Expr> operands);

// Substitutes symbols by expressions, rebuilding canonically.
Expr substitute(Expr e, const std::function<Expr(Expr symbol)>& replacement);

inline Expr operator+(Expr a, Expr b) { return add(a, b); }
inline Expr operator-(Expr a, Expr b) { return sub(a, b); }
inline Expr operator-(Expr a) { return neg(a); }
inline Expr operator*(Expr a, Expr b) { return mul(a, b); }
inline Expr operator+(Expr a, int64_t b) { return add(a, Expr::integer(b)); }
inline Expr operator-(Expr a, int64_t b) { return sub(a, Expr::integer(b)); }
inline Expr operator*(Expr a, int64_t b) { return mul(a, Expr::integer(b)); }
inline Expr operator*(int64_t a, Expr b) { return mul(Expr::integer(a), b); }
inline Expr floordiv(Expr a, int64_t b) { return floordiv(a, Expr::integer(b)); }
inline Expr mod(Expr a, int64_t b) { return mod(a, Expr::integer(b)); }

// Python floor semantics on int64 values. Return nullopt on division by zero or overflow.
std::optional<int64_t> py_floordiv(int64_t a, int64_t b);
std::optional<int64_t> py_mod(int64_t a, int64_t b);

// A value of an evaluated expression.
struct Scalar {
  Type type = Type::Int;
  int64_t i = 0;  // Int, and Bool as 0/1
  double f = 0;   // Float
};

// Evaluates with every symbol bound by `binding` (which returns nullopt for an unbound symbol).
// Returns nullopt if a symbol is unbound, on division by zero, or on int64 overflow.
std::optional<Scalar> evaluate(Expr e, const std::function<std::optional<Scalar>(Expr symbol)>& binding);

}  // namespace toroid::sym

template <>
struct std::hash<toroid::sym::Expr> {
  size_t operator()(toroid::sym::Expr e) const noexcept { return e.hash(); }
};

namespace toroid {
using SymExpr = sym::Expr;
}  // namespace toroid
