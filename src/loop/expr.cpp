#include "toroid/loop/expr.h"

#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "toroid/loop/ir.h"
#include "toroid/support/error.h"
#include "toroid/support/hash.h"
#include "toroid/sym/simplify.h"

namespace toroid::loop {

class ExprNode {
 public:
  Op op;
  DType dtype;
  std::vector<Expr> operands;
  Buffer* buffer = nullptr;
  SymExpr index;
  uint64_t bits = 0;  // Const payload: double bits for floats, int64 for the rest; IndirectLoad: wrap
  // IndirectLoad: strides then sizes (one each per operand), the indexed dims and the op.
  std::vector<SymExpr> syms = {};
  std::vector<int64_t> dims = {};
  const Node* site = nullptr;
  size_t hash = 0;
};

namespace {

struct NodeHash {
  size_t operator()(const ExprNode* n) const { return n->hash; }
};
struct NodeEq {
  bool operator()(const ExprNode* a, const ExprNode* b) const {
    return a->op == b->op && a->dtype == b->dtype && a->operands == b->operands && a->buffer == b->buffer &&
           a->index == b->index && a->bits == b->bits && a->syms == b->syms && a->dims == b->dims && a->site == b->site;
  }
};

// Interned nodes are never freed (as SymExprs); a compile creates a few thousand at most.
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const ExprNode*, NodeHash, NodeEq>& table() {
  static auto* t = new std::unordered_set<const ExprNode*, NodeHash, NodeEq>();
  return *t;
}

Expr intern(ExprNode n) {
  size_t h = std::hash<int>()(static_cast<int>(n.op));
  h = hash_combine(h, static_cast<size_t>(n.dtype));
  for (Expr e : n.operands) h = hash_combine(h, e.hash());
  h = hash_combine(h, std::hash<const void*>()(n.buffer));
  h = hash_combine(h, n.index ? n.index.hash() : 0);
  h = hash_combine(h, std::hash<uint64_t>()(n.bits));
  for (SymExpr s : n.syms) h = hash_combine(h, s.hash());
  for (int64_t d : n.dims) h = hash_combine(h, std::hash<int64_t>()(d));
  h = hash_combine(h, std::hash<const void*>()(n.site));
  n.hash = h;
  std::lock_guard<std::mutex> lock(table_mutex());
  auto it = table().find(&n);
  if (it != table().end()) return Expr(*it);
  const ExprNode* fresh = new ExprNode(std::move(n));
  table().insert(fresh);
  return Expr(fresh);
}

struct OpRow {
  Op op;
  const char* name;
  int arity;
};
constexpr OpRow kOps[] = {
    {Op::Load, "load", 0},        {Op::Const, "const", 0},      {Op::Index, "index", 0},
    {Op::IndirectLoad, "indirect_load", -1},
    {Op::Cast, "cast", 1},        {Op::Neg, "neg", 1},          {Op::Abs, "abs", 1},
    {Op::Exp, "exp", 1},          {Op::Expm1, "expm1", 1},      {Op::Log, "log", 1},
    {Op::Log1p, "log1p", 1},      {Op::Log2, "log2", 1},        {Op::Log10, "log10", 1},
    {Op::Sqrt, "sqrt", 1},        {Op::Rsqrt, "rsqrt", 1},      {Op::Sin, "sin", 1},
    {Op::Cos, "cos", 1},          {Op::Tan, "tan", 1},          {Op::Tanh, "tanh", 1},
    {Op::Asin, "asin", 1},        {Op::Acos, "acos", 1},        {Op::Atan, "atan", 1},
    {Op::Sinh, "sinh", 1},        {Op::Cosh, "cosh", 1},        {Op::Asinh, "asinh", 1},
    {Op::Acosh, "acosh", 1},      {Op::Atanh, "atanh", 1},      {Op::Sigmoid, "sigmoid", 1},
    {Op::Erf, "erf", 1},          {Op::Ceil, "ceil", 1},        {Op::Floor, "floor", 1},
    {Op::Round, "round", 1},      {Op::Trunc, "trunc", 1},      {Op::Sign, "sign", 1},
    {Op::Reciprocal, "reciprocal", 1}, {Op::Relu, "relu", 1},   {Op::LogicalNot, "logical_not", 1},
    {Op::BitNot, "bitwise_not", 1}, {Op::IsNan, "isnan", 1},    {Op::IsInf, "isinf", 1},
    {Op::Add, "add", 2},          {Op::Sub, "sub", 2},          {Op::Mul, "mul", 2},
    {Op::Div, "div", 2},          {Op::FloorDiv, "floordiv", 2}, {Op::TruncDiv, "truncdiv", 2},
    {Op::Pow, "pow", 2},          {Op::Maximum, "maximum", 2},  {Op::Minimum, "minimum", 2},
    {Op::Atan2, "atan2", 2},      {Op::Fmod, "fmod", 2},        {Op::Remainder, "remainder", 2},
    {Op::Eq, "eq", 2},            {Op::Ne, "ne", 2},            {Op::Lt, "lt", 2},
    {Op::Le, "le", 2},            {Op::Gt, "gt", 2},            {Op::Ge, "ge", 2},
    {Op::LogicalAnd, "logical_and", 2}, {Op::LogicalOr, "logical_or", 2}, {Op::LogicalXor, "logical_xor", 2},
    {Op::BitAnd, "bitwise_and", 2}, {Op::BitOr, "bitwise_or", 2}, {Op::BitXor, "bitwise_xor", 2},
    {Op::Where, "where", 3},
};

const OpRow& row(Op op) {
  for (const OpRow& r : kOps)
    if (r.op == op) return r;
  TOROID_INTERNAL_ERROR("loop op without a row");
}

bool is_comparison(Op op) {
  switch (op) {
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
    case Op::LogicalAnd: case Op::LogicalOr: case Op::LogicalXor: case Op::LogicalNot:
    case Op::IsNan: case Op::IsInf:
      return true;
    default:
      return false;
  }
}

}  // namespace

const char* op_name(Op op) { return row(op).name; }
int op_arity(Op op) { return row(op).arity; }

Op Expr::op() const { return node_->op; }
DType Expr::dtype() const { return node_->dtype; }
std::span<const Expr> Expr::operands() const { return node_->operands; }
Buffer* Expr::buffer() const { return node_->buffer; }
SymExpr Expr::index() const { return node_->index; }
double Expr::float_value() const { return std::bit_cast<double>(node_->bits); }
int64_t Expr::int_value() const { return static_cast<int64_t>(node_->bits); }
SymExpr Expr::stride(size_t k) const { return node_->syms.at(k); }
SymExpr Expr::size(size_t k) const { return node_->syms.at(node_->operands.size() + k); }
int64_t Expr::indirect_dim(size_t k) const { return node_->dims.at(k); }
const Node* Expr::site() const { return node_->site; }
bool Expr::wraps() const { return node_->bits != 0; }
size_t Expr::hash() const { return node_ ? node_->hash : 0; }

Expr load(Buffer* buffer, SymExpr index) {
  ExprNode n{Op::Load, buffer->dtype, {}, buffer, index};
  return intern(std::move(n));
}

Expr constant(double value, DType dtype) {
  if (!is_floating(dtype)) return int_constant(static_cast<int64_t>(value), dtype);
  ExprNode n{Op::Const, dtype, {}, nullptr, SymExpr()};
  n.bits = std::bit_cast<uint64_t>(value);
  return intern(std::move(n));
}

Expr int_constant(int64_t value, DType dtype) {
  if (is_floating(dtype)) return constant(static_cast<double>(value), dtype);
  if (dtype == DType::Bool) value = value != 0;
  ExprNode n{Op::Const, dtype, {}, nullptr, SymExpr()};
  n.bits = static_cast<uint64_t>(value);
  return intern(std::move(n));
}

Expr index_value(SymExpr index) {
  ExprNode n{Op::Index, DType::Int64, {}, nullptr, index};
  return intern(std::move(n));
}

Expr float_symbol_value(SymExpr symbol) {
  TOROID_CHECK(symbol.is_symbol() && symbol.is_float(), "float_symbol_value of " + symbol.str());
  ExprNode n{Op::Index, DType::Float64, {}, nullptr, symbol};
  return intern(std::move(n));
}

Expr indirect_load(Buffer* buffer, SymExpr base, std::span<const IndirectIndex> positions, const Node* site, bool wrap) {
  TOROID_CHECK(!positions.empty(), "indirect_load without positions");
  ExprNode n{Op::IndirectLoad, buffer->dtype, {}, buffer, base};
  for (const IndirectIndex& p : positions) {
    TOROID_CHECK(is_integral(p.pos.dtype()) && p.pos.dtype() != DType::Bool, "indirect_load position dtype");
    n.operands.push_back(p.pos);
    n.syms.push_back(p.stride);
    n.dims.push_back(p.dim);
  }
  for (const IndirectIndex& p : positions) n.syms.push_back(p.size);
  n.site = site;
  n.bits = wrap ? 1 : 0;
  return intern(std::move(n));
}

Expr cast(Expr a, DType dtype) {
  if (a.dtype() == dtype) return a;
  if (a.op() == Op::Const) {
    if (is_floating(dtype) && is_floating(a.dtype()) && (dtype == DType::Float32 || dtype == DType::Float64))
      return constant(a.float_value(), dtype);
    if (!is_floating(a.dtype()) && dtype != DType::Bool && is_integral(dtype)) {
      // Integer widening of a constant; narrowing keeps the cast so it wraps as C++ would not.
      if (dtype == DType::Int64) return int_constant(a.int_value(), dtype);
    }
  }
  ExprNode n{Op::Cast, dtype, {a}, nullptr, SymExpr()};
  return intern(std::move(n));
}

Expr unary(Op op, Expr a) {
  TOROID_CHECK(op_arity(op) == 1 && op != Op::Cast, op_name(op));
  DType d = is_comparison(op) ? DType::Bool : a.dtype();
  ExprNode n{op, d, {a}, nullptr, SymExpr()};
  return intern(std::move(n));
}

Expr binary(Op op, Expr a, Expr b) {
  TOROID_CHECK(op_arity(op) == 2, op_name(op));
  bool logical = op == Op::LogicalAnd || op == Op::LogicalOr || op == Op::LogicalXor;
  if (!logical)
    TOROID_CHECK(a.dtype() == b.dtype(), std::string(op_name(op)) + " of " + dtype_short_name(a.dtype()) + " and " +
                                             dtype_short_name(b.dtype()));
  DType d = is_comparison(op) ? DType::Bool : a.dtype();
  ExprNode n{op, d, {a, b}, nullptr, SymExpr()};
  return intern(std::move(n));
}

Expr checked_binary(Op op, Expr a, Expr b, const Node* op_site) {
  Expr plain = binary(op, a, b);
  bool division = op == Op::Div || op == Op::FloorDiv || op == Op::TruncDiv || op == Op::Fmod || op == Op::Remainder;
  if (!division || !is_integral(plain.dtype()) || plain.dtype() == DType::Bool || !op_site) return plain;
  ExprNode n{op, plain.dtype(), {a, b}, nullptr, SymExpr()};
  n.site = op_site;
  return intern(std::move(n));
}

Expr where(Expr cond, Expr a, Expr b) {
  TOROID_CHECK(cond.dtype() == DType::Bool && a.dtype() == b.dtype(), "where operands");
  ExprNode n{Op::Where, a.dtype(), {cond, a, b}, nullptr, SymExpr()};
  return intern(std::move(n));
}

namespace {
Expr rebuild_with(Expr e, std::vector<Expr> operands, SymExpr index, std::vector<SymExpr> syms) {
  ExprNode n{e.op(), e.dtype(), std::move(operands), e.buffer(), index};
  n.bits = e.node()->bits;
  n.syms = std::move(syms);
  n.dims = e.node()->dims;
  n.site = e.node()->site;
  return intern(std::move(n));
}
}  // namespace

Expr map_indices(Expr root, const std::function<SymExpr(SymExpr)>& fn) {
  std::unordered_map<Expr, Expr> memo;
  std::function<Expr(Expr)> go = [&](Expr e) -> Expr {
    auto it = memo.find(e);
    if (it != memo.end()) return it->second;
    Expr out;
    if (e.op() == Op::Load || e.op() == Op::Index) {
      out = rebuild_with(e, {}, fn(e.index()), {});
    } else if (e.op() == Op::IndirectLoad) {
      std::vector<Expr> ops;
      for (Expr o : e.operands()) ops.push_back(go(o));
      std::vector<SymExpr> syms;
      for (SymExpr s : e.node()->syms) syms.push_back(fn(s));
      out = rebuild_with(e, std::move(ops), fn(e.index()), std::move(syms));
    } else if (e.operands().empty()) {
      out = e;
    } else {
      std::vector<Expr> ops;
      bool same = true;
      for (Expr o : e.operands()) {
        ops.push_back(go(o));
        same = same && ops.back() == o;
      }
      out = same ? e : rebuild_with(e, std::move(ops), SymExpr(), {});
    }
    memo.emplace(e, out);
    return out;
  };
  return go(root);
}

Expr substitute(Expr e, const std::function<SymExpr(SymExpr)>& replacement) {
  return map_indices(e, [&](SymExpr index) { return sym::substitute(index, replacement); });
}

Expr replace_loads(Expr root, const std::function<Expr(Expr)>& fn) {
  std::unordered_map<Expr, Expr> memo;
  std::function<Expr(Expr)> go = [&](Expr e) -> Expr {
    auto it = memo.find(e);
    if (it != memo.end()) return it->second;
    Expr out = e;
    if (e.op() == Op::Load) {
      out = fn(e);
      TOROID_CHECK(out.dtype() == e.dtype(), "replace_loads changed a dtype");
    } else if (!e.operands().empty()) {
      std::vector<Expr> ops;
      bool same = true;
      for (Expr o : e.operands()) {
        ops.push_back(go(o));
        same = same && ops.back() == o;
      }
      if (!same) out = rebuild_with(e, std::move(ops), e.index(), e.node()->syms);
    }
    memo.emplace(e, out);
    return out;
  };
  return go(root);
}

namespace {
// An integer dtype's values as a range (int64's ends are the range's infinities); nullopt else.
std::optional<sym::ValueRange> integer_range(DType d) {
  std::optional<std::pair<int64_t, int64_t>> limits = integer_limits(d);
  if (!limits) return std::nullopt;
  return sym::ValueRange{limits->first, limits->second};
}
}  // namespace

SymExpr index_arithmetic(Expr e, const sym::FactsFn& facts) {
  std::optional<sym::ValueRange> fits = integer_range(e.dtype());
  if (!fits) return SymExpr();
  auto arg = [&](size_t i) { return index_arithmetic(e.operand(i), facts); };
  SymExpr out;
  switch (e.op()) {
    case Op::Index: out = e.index(); break;
    case Op::Const: out = SymExpr::integer(e.int_value()); break;
    case Op::Cast: out = integer_range(e.operand(0).dtype()) ? arg(0) : SymExpr(); break;
    case Op::Neg:
      if (SymExpr a = arg(0)) out = SymExpr::integer(0) - a;
      break;
    case Op::Add:
    case Op::Sub:
    case Op::Mul: {
      SymExpr a = arg(0), b = arg(1);
      if (a && b) out = e.op() == Op::Add ? a + b : e.op() == Op::Sub ? a - b : a * b;
      break;
    }
    case Op::FloorDiv:
    case Op::Remainder:
    case Op::TruncDiv:
    case Op::Fmod: {
      SymExpr a = arg(0), b = arg(1);
      std::optional<int64_t> d = b ? b.as_int() : std::nullopt;
      if (!a || !d || *d <= 0) break;
      // C's truncating forms agree with the floor forms on a dividend that is never negative.
      bool truncating = e.op() == Op::TruncDiv || e.op() == Op::Fmod;
      if (truncating && sym::bound(a, facts).lo < 0) break;
      out = e.op() == Op::FloorDiv || e.op() == Op::TruncDiv ? sym::floordiv(a, *d) : sym::mod(a, *d);
      break;
    }
    default: break;
  }
  if (!out) return SymExpr();
  out = sym::simplify(out, facts);
  sym::ValueRange r = sym::bound(out, facts);
  if (r.lo < fits->lo || r.hi > fits->hi) return SymExpr();
  return out;
}

void visit(Expr root, const std::function<void(Expr)>& fn) {
  std::unordered_set<const ExprNode*> seen;
  std::function<void(Expr)> go = [&](Expr e) {
    if (!seen.insert(e.node()).second) return;
    for (Expr o : e.operands()) go(o);
    fn(e);
  };
  go(root);
}

int op_count(Expr e) {
  int n = 0;
  visit(e, [&](Expr x) { n += x.operands().empty() ? 0 : 1; });
  return n;
}

std::vector<Expr> loads(Expr e) {
  std::vector<Expr> out;
  visit(e, [&](Expr x) {
    if (x.op() == Op::Load || x.op() == Op::IndirectLoad) out.push_back(x);
  });
  return out;
}

std::string to_string(Expr e) {
  switch (e.op()) {
    case Op::Load: return "load(" + e.buffer()->name + ", " + e.index().str() + ")";
    case Op::Index: return "index(" + e.index().str() + ")";
    case Op::IndirectLoad: {
      // indirect_load(buf, base + [pos]*stride<size> ...), "wrap" when negatives count from the end
      std::string s = "indirect_load(" + e.buffer()->name + ", " + e.index().str();
      for (size_t k = 0; k < e.operands().size(); ++k)
        s += " + [" + to_string(e.operand(k)) + "]*" + e.stride(k).str() + "<" + e.size(k).str() + ">";
      return s + (e.wraps() ? ", wrap)" : ")");
    }
    case Op::Const: {
      std::string v;
      if (is_floating(e.dtype())) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", e.float_value());
        v = buf;
        if (v.find_first_of(".eni") == std::string::npos) v += ".0";
      } else {
        v = std::to_string(e.int_value());
      }
      return v + ":" + dtype_short_name(e.dtype());
    }
    case Op::Cast: return std::string("cast_") + dtype_short_name(e.dtype()) + "(" + to_string(e.operand(0)) + ")";
    default: {
      std::string s = std::string(op_name(e.op())) + "(";
      for (size_t i = 0; i < e.operands().size(); ++i) s += (i ? ", " : "") + to_string(e.operand(i));
      return s + ")";
    }
  }
}

SymExpr named_var(char prefix, size_t k) {
  static std::mutex m;
  static std::unordered_map<char, std::vector<SymExpr>> pools;
  std::lock_guard<std::mutex> lock(m);
  std::vector<SymExpr>& pool = pools[prefix];
  // After every size symbol in the canonical order, at a place fixed by (prefix, k), so kernel
  // text does not depend on which graphs the process parsed before (the cache key).
  while (pool.size() <= k) {
    uint64_t order = SymExpr::kFixedOrderBase + static_cast<uint64_t>(static_cast<unsigned char>(prefix)) * (1u << 20) + pool.size();
    pool.push_back(SymExpr::fresh_symbol_ordered(std::string(1, prefix) + std::to_string(pool.size()), order));
  }
  return pool[k];
}

SymExpr index_var(size_t k) { return named_var('i', k); }
SymExpr reduction_var(size_t k) { return named_var('r', k); }

}  // namespace toroid::loop
