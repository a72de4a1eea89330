// Loop-IR inner expressions: the value of one element of a buffer, as data.
//
// Expressions are hash-consed and immutable, like SymExpr: structurally equal expressions are
// the same object, so equality is pointer equality and CSE in the emitters is free. Indices are
// SymExprs over index variables (loop::index_var / reduction_var) and size symbols.
//
// Types: `dtype` is the logical dtype of the value. bf16 and f16 values are held in float by the
// emitters; a Cast to bf16/f16 rounds. Arithmetic on bf16/f16 values does not round between
// ops (as Inductor), only explicit casts and stores do.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "toroid/graph/types.h"
#include "toroid/sym/expr.h"
#include "toroid/sym/range.h"

namespace toroid {
class Node;
}

namespace toroid::loop {

struct Buffer;

enum class Op : uint8_t {
  // leaves
  Load,   // buffer(), index(): the element at flat storage position index()
  Const,  // float_value() / int_value()
  Index,  // index() as an int64 value; for a float symbol (dtype f64), that symbol's value
  // buffer() at index() + sum_k checked(operand k) * stride(k): a read at loaded positions
  // (gather, embedding). Each position is checked against size(k) (negative ones first wrap by
  // + size(k) when wraps()); one out of range reads nothing, yields 0 and raises the
  // generated code's index error naming site() and indirect_dim(k).
  IndirectLoad,
  // one operand
  Cast, Neg, Abs, Exp, Expm1, Log, Log1p, Log2, Log10, Sqrt, Rsqrt, Sin, Cos, Tan, Tanh, Asin, Acos,
  Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Sigmoid, Erf, Ceil, Floor, Round, Trunc, Sign, Reciprocal,
  Relu, LogicalNot, BitNot, IsNan, IsInf,
  // two operands
  Add, Sub, Mul, Div, FloorDiv, TruncDiv, Pow, Maximum, Minimum, Atan2, Fmod, Remainder, Eq, Ne, Lt,
  Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor, BitAnd, BitOr, BitXor,
  // three operands
  Where,  // [cond, a, b]
};
const char* op_name(Op op);
int op_arity(Op op);  // 0 for leaves

class ExprNode;

class Expr {
 public:
  Expr() = default;
  explicit Expr(const ExprNode* n) : node_(n) {}
  bool is_null() const { return node_ == nullptr; }
  explicit operator bool() const { return node_ != nullptr; }

  Op op() const;
  DType dtype() const;
  std::span<const Expr> operands() const;
  Expr operand(size_t i) const { return operands()[i]; }
  Buffer* buffer() const;  // Load, IndirectLoad
  SymExpr index() const;   // Load, Index; IndirectLoad: the base position
  // IndirectLoad: per position operand k.
  SymExpr stride(size_t k) const;
  SymExpr size(size_t k) const;
  int64_t indirect_dim(size_t k) const;  // the indexed dimension, for the error message
  // IndirectLoad: the op that indexes; an integer division from checked_binary: the op
  // dividing. For the error message.
  const Node* site() const;
  bool wraps() const;                    // negative positions count from the end
  double float_value() const;  // Const of a floating dtype
  int64_t int_value() const;   // Const of an integral or bool dtype
  size_t hash() const;
  const ExprNode* node() const { return node_; }

  friend bool operator==(Expr a, Expr b) { return a.node_ == b.node_; }
  friend bool operator!=(Expr a, Expr b) { return a.node_ != b.node_; }

 private:
  const ExprNode* node_ = nullptr;
};

// Leaves.
Expr load(Buffer* buffer, SymExpr index);  // dtype is the buffer's
Expr constant(double value, DType dtype);  // integral dtypes take the value as int64
Expr int_constant(int64_t value, DType dtype);
Expr index_value(SymExpr index);  // int64
// A float symbol's value (f64), read from the kernel's symbol arguments at run time: a new value
// (a learning rate) needs no new code.
Expr float_symbol_value(SymExpr symbol);
struct IndirectIndex {
  Expr pos;  // an integral value
  SymExpr stride, size;
  int64_t dim = 0;
};
Expr indirect_load(Buffer* buffer, SymExpr base, std::span<const IndirectIndex> positions, const Node* site, bool wrap);
// Operations. The result dtype is given for casts and comparisons' bool; arithmetic keeps the
// operands' dtype (they must agree: the lowering casts first).
Expr cast(Expr a, DType dtype);  // no-op when a already has dtype
Expr unary(Op op, Expr a);
Expr binary(Op op, Expr a, Expr b);
// An integer division (Div, FloorDiv, TruncDiv, Fmod, Remainder) whose zero divisor raises the
// generated code's error naming `op` (PyTorch's ZeroDivisionError); other ops as binary().
Expr checked_binary(Op op, Expr a, Expr b, const Node* op_site);
Expr where(Expr cond, Expr a, Expr b);

// Rebuilds `e` with every index (Load, Index; an IndirectLoad's base, strides and sizes) passed
// through `fn`; memoized per call.
Expr map_indices(Expr e, const std::function<SymExpr(SymExpr)>& fn);
// Substitutes symbols in every index.
Expr substitute(Expr e, const std::function<SymExpr(SymExpr symbol)>& replacement);
// Rebuilds `e` with every Load replaced by fn(load), which must keep its dtype.
Expr replace_loads(Expr e, const std::function<Expr(Expr load)>& fn);
// The value of an integer expression of index values (Index leaves, integer constants, casts,
// + - *, and divisions and remainders by positive constants) as a SymExpr, where `facts` (the
// ranges of its variables) prove that no step overflows its dtype and that C's truncating
// forms (fmod, truncdiv) see no negative dividend; null otherwise.
SymExpr index_arithmetic(Expr e, const sym::FactsFn& facts);
// Calls fn on every node reachable from e once, operands before users.
void visit(Expr e, const std::function<void(Expr)>& fn);
// Non-leaf nodes reachable from e (its arithmetic cost).
int op_count(Expr e);
// Every Load and IndirectLoad reachable from e, in visit order.
std::vector<Expr> loads(Expr e);

// Printed as "add(load(buf3, 4*i0 + i1), 1.0:f32)".
std::string to_string(Expr e);

// The shared pool of index variables: i<k> for a buffer's k-th dimension, r<k> for its k-th
// reduction dimension. Every body is a function of these, so inlining is substitution.
SymExpr index_var(size_t k);
// The k-th variable of a family named <prefix><k>: one symbol per (prefix, k) for the whole
// process (index_var is 'i', reduction_var 'r'; the scheduler's kernel variables 'o' and 'q').
SymExpr named_var(char prefix, size_t k);
SymExpr reduction_var(size_t k);

}  // namespace toroid::loop

template <>
struct std::hash<toroid::loop::Expr> {
  size_t operator()(toroid::loop::Expr e) const noexcept { return e.hash(); }
};
