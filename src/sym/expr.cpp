// Hash-consed node storage, Expr accessors, the canonical order, and generic traversals
// (rebuild, substitute, free symbols). The canonicalizing builders live in build_arith.cpp and
// build_logic.cpp; printing in print.cpp; evaluation in evaluate.cpp.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "node.h"
#include "toroid/support/error.h"
#include "toroid/support/hash.h"

namespace toroid::sym {

namespace {

uint64_t float_bits(double v) { return std::bit_cast<uint64_t>(v); }

struct NodeHash {
  size_t operator()(const Node* n) const { return n->hash; }
};
struct NodeEq {
  bool operator()(const Node* a, const Node* b) const {
    return a->kind == b->kind && a->type == b->type && a->ival == b->ival &&
           float_bits(a->fval) == float_bits(b->fval) && a->decl == b->decl && a->ops == b->ops;
  }
};

// The global interning table. Nodes are never freed; the table itself is leaked on purpose
// so that expressions stay valid during static destruction.
struct Table {
  std::mutex mu;
  std::unordered_set<const Node*, NodeHash, NodeEq> nodes;
  std::vector<const Node*> symbols;  // keeps symbol nodes reachable
};

Table& table() {
  static Table* t = new Table();
  return *t;
}

std::atomic<uint64_t> next_symbol_id{0};

size_t compute_hash(const Node& n) {
  size_t h = hash_combine(static_cast<size_t>(n.kind), static_cast<size_t>(n.type));
  h = hash_combine(h, static_cast<size_t>(n.ival));
  h = hash_combine(h, static_cast<size_t>(float_bits(n.fval)));
  if (n.decl) h = hash_combine(h, static_cast<size_t>(n.decl->id) * 0x100000001b3ULL);
  for (Expr e : n.ops) h = hash_combine(h, e.hash());
  return h;
}

const Node& node_of(const Node* n, const char* what) {
  if (!n) internal_error(std::string("null SymExpr used (") + what + ")", __FILE__, __LINE__);
  return *n;
}

}  // namespace

namespace detail {

Expr make_node(Kind k, Type t, std::vector<Expr> ops, int64_t ival, double fval) {
  Node tmp;
  tmp.kind = k;
  tmp.type = t;
  tmp.ival = ival;
  tmp.fval = fval;
  tmp.ops = std::move(ops);
  for (Expr e : tmp.ops) {
    TOROID_CHECK(!e.is_null(), "null operand");
    tmp.has_symbols = tmp.has_symbols || e.has_symbols();
  }
  tmp.hash = compute_hash(tmp);
  Table& tab = table();
  std::lock_guard<std::mutex> lock(tab.mu);
  auto it = tab.nodes.find(&tmp);
  if (it != tab.nodes.end()) return Expr(*it);
  const Node* n = new Node(std::move(tmp));
  tab.nodes.insert(n);
  return Expr(n);
}

std::optional<int64_t> checked_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) return std::nullopt;
  int64_t result = 1;
  int64_t b = base;
  int64_t e = exponent;
  while (e > 0) {
    if (e & 1) {
      auto r = checked_mul(result, b);
      if (!r) return std::nullopt;
      result = *r;
    }
    e >>= 1;
    if (e > 0) {
      auto sq = checked_mul(b, b);
      if (!sq) return std::nullopt;
      b = *sq;
    }
  }
  return result;
}

Term split_term(Expr e) {
  if (e.kind() == Kind::IntConst) return {e.int_value(), Expr()};
  if (e.kind() == Kind::Mul && e.is_int()) {
    auto ops = e.operands();
    if (ops[0].kind() == Kind::IntConst && ops.size() >= 2 && ops[1].kind() != Kind::IntConst) {
      if (ops.size() == 2) return {ops[0].int_value(), ops[1]};
      return {ops[0].int_value(),
              make_node(Kind::Mul, Type::Int, std::vector<Expr>(ops.begin() + 1, ops.end()))};
    }
  }
  return {1, e};
}

Expr make_term(int64_t coeff, Expr mono) {
  if (coeff == 1) return mono;
  if (coeff == 0) return Expr::integer(0);
  if (mono.kind() == Kind::Mul) {
    auto ops = mono.operands();
    if (ops[0].kind() != Kind::IntConst) {
      std::vector<Expr> v;
      v.reserve(ops.size() + 1);
      v.push_back(Expr::integer(coeff));
      v.insert(v.end(), ops.begin(), ops.end());
      return make_node(Kind::Mul, Type::Int, std::move(v));
    }
    return mul(Expr::integer(coeff), mono);
  }
  if (mono.kind() == Kind::Add || mono.kind() == Kind::IntConst) return mul(Expr::integer(coeff), mono);
  return make_node(Kind::Mul, Type::Int, {Expr::integer(coeff), mono});
}

bool is_div_kind(Kind k) { return k == Kind::FloorDiv || k == Kind::Mod || k == Kind::TrueDiv; }

}  // namespace detail

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::IntConst: return "IntConst";
    case Kind::FloatConst: return "FloatConst";
    case Kind::BoolConst: return "BoolConst";
    case Kind::Symbol: return "Symbol";
    case Kind::Add: return "Add";
    case Kind::Mul: return "Mul";
    case Kind::FloorDiv: return "FloorDiv";
    case Kind::Mod: return "Mod";
    case Kind::TrueDiv: return "TrueDiv";
    case Kind::Pow: return "Pow";
    case Kind::Min: return "Min";
    case Kind::Max: return "Max";
    case Kind::ToFloat: return "ToFloat";
    case Kind::Eq: return "Eq";
    case Kind::Ne: return "Ne";
    case Kind::Lt: return "Lt";
    case Kind::Le: return "Le";
    case Kind::And: return "And";
    case Kind::Or: return "Or";
    case Kind::Not: return "Not";
  }
  return "?";
}

Expr Expr::integer(int64_t v) { return detail::make_node(Kind::IntConst, Type::Int, {}, v); }
Expr Expr::floating(double v) { return detail::make_node(Kind::FloatConst, Type::Float, {}, 0, v); }
Expr Expr::boolean(bool v) { return detail::make_node(Kind::BoolConst, Type::Bool, {}, v ? 1 : 0); }

Expr Expr::fresh_symbol(std::string name, Type type) {
  return fresh_symbol_ordered(std::move(name), next_symbol_id.fetch_add(1), type);
}

Expr Expr::fresh_symbol_ordered(std::string name, uint64_t order, Type type) {
  auto* decl = new SymbolDecl{std::move(name), type, order};
  auto* n = new Node();
  n->kind = Kind::Symbol;
  n->type = type;
  n->has_symbols = true;
  n->decl = decl;
  n->hash = compute_hash(*n);
  Table& tab = table();
  std::lock_guard<std::mutex> lock(tab.mu);
  tab.symbols.push_back(n);
  return Expr(n);
}

Kind Expr::kind() const { return node_of(node_, "kind").kind; }
Type Expr::type() const { return node_of(node_, "type").type; }
bool Expr::is_constant() const {
  Kind k = kind();
  return k == Kind::IntConst || k == Kind::FloatConst || k == Kind::BoolConst;
}

int64_t Expr::int_value() const {
  TOROID_CHECK(kind() == Kind::IntConst, "int_value() of a non-IntConst");
  return node_->ival;
}
double Expr::float_value() const {
  TOROID_CHECK(kind() == Kind::FloatConst, "float_value() of a non-FloatConst");
  return node_->fval;
}
bool Expr::bool_value() const {
  TOROID_CHECK(kind() == Kind::BoolConst, "bool_value() of a non-BoolConst");
  return node_->ival != 0;
}
std::optional<int64_t> Expr::as_int() const {
  if (node_ && node_->kind == Kind::IntConst) return node_->ival;
  return std::nullopt;
}
const SymbolDecl& Expr::symbol() const {
  TOROID_CHECK(kind() == Kind::Symbol, "symbol() of a non-Symbol");
  return *node_->decl;
}
int64_t Expr::exponent() const {
  TOROID_CHECK(kind() == Kind::Pow, "exponent() of a non-Pow");
  return node_->ival;
}
std::span<const Expr> Expr::operands() const {
  const Node& n = node_of(node_, "operands");
  return {n.ops.data(), n.ops.size()};
}
size_t Expr::hash() const { return node_ ? node_->hash : 0; }
bool Expr::has_symbols() const { return node_of(node_, "has_symbols").has_symbols; }

std::vector<Expr> Expr::free_symbols() const {
  std::vector<Expr> out;
  std::unordered_set<const Node*> seen;
  std::vector<Expr> stack{*this};
  while (!stack.empty()) {
    Expr e = stack.back();
    stack.pop_back();
    if (!e.has_symbols() || !seen.insert(e.node()).second) continue;
    if (e.is_symbol()) {
      out.push_back(e);
      continue;
    }
    for (Expr op : e.operands()) stack.push_back(op);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int Expr::compare(Expr a, Expr b) {
  if (a.node_ == b.node_) return 0;
  if (!a.node_) return -1;
  if (!b.node_) return 1;
  const Node& x = *a.node_;
  const Node& y = *b.node_;
  auto cmp3 = [](auto u, auto v) { return u < v ? -1 : (v < u ? 1 : 0); };
  if (x.kind != y.kind) return cmp3(static_cast<int>(x.kind), static_cast<int>(y.kind));
  if (x.type != y.type) return cmp3(static_cast<int>(x.type), static_cast<int>(y.type));
  switch (x.kind) {
    case Kind::IntConst:
    case Kind::BoolConst: return cmp3(x.ival, y.ival);
    case Kind::FloatConst: {
      // Numeric order where defined, then bit pattern (so -0.0 < 0.0 and nans are ordered).
      if (x.fval < y.fval) return -1;
      if (y.fval < x.fval) return 1;
      return cmp3(float_bits(x.fval), float_bits(y.fval));
    }
    case Kind::Symbol: return cmp3(x.decl->id, y.decl->id);
    case Kind::Pow: {
      int c = compare(x.ops[0], y.ops[0]);
      if (c != 0) return c;
      return cmp3(x.ival, y.ival);
    }
    default: break;
  }
  size_t n = std::min(x.ops.size(), y.ops.size());
  for (size_t i = 0; i < n; ++i) {
    int c = compare(x.ops[i], y.ops[i]);
    if (c != 0) return c;
  }
  return cmp3(x.ops.size(), y.ops.size());
}

Expr rebuild(Expr like, std::span<const Expr> ops) {
  switch (like.kind()) {
    case Kind::IntConst:
    case Kind::FloatConst:
    case Kind::BoolConst:
    case Kind::Symbol: return like;
    case Kind::Add: return add(ops);
    case Kind::Mul: return mul(ops);
    case Kind::FloorDiv: return floordiv(ops[0], ops[1]);
    case Kind::Mod: return mod(ops[0], ops[1]);
    case Kind::TrueDiv: return truediv(ops[0], ops[1]);
    case Kind::Pow: return pow(ops[0], like.exponent());
    case Kind::Min: return min(ops);
    case Kind::Max: return max(ops);
    case Kind::ToFloat: return to_float(ops[0]);
    case Kind::Eq: return eq(ops[0], ops[1]);
    case Kind::Ne: return ne(ops[0], ops[1]);
    case Kind::Lt: return lt(ops[0], ops[1]);
    case Kind::Le: return le(ops[0], ops[1]);
    case Kind::And: return logical_and(ops);
    case Kind::Or: return logical_or(ops);
    case Kind::Not: return logical_not(ops[0]);
  }
  internal_error("rebuild: unknown kind", __FILE__, __LINE__);
}

namespace {

Expr substitute_rec(Expr e, const std::function<Expr(Expr)>& repl,
                    std::unordered_map<Expr, Expr>& memo) {
  if (!e.has_symbols()) return e;
  auto it = memo.find(e);
  if (it != memo.end()) return it->second;
  Expr out;
  if (e.is_symbol()) {
    out = repl(e);
    if (out.is_null()) out = e;
  } else {
    std::vector<Expr> ops;
    bool changed = false;
    for (Expr op : e.operands()) {
      Expr n = substitute_rec(op, repl, memo);
      changed = changed || n != op;
      ops.push_back(n);
    }
    out = changed ? rebuild(e, ops) : e;
  }
  memo.emplace(e, out);
  return out;
}

}  // namespace

Expr substitute(Expr e, const std::function<Expr(Expr symbol)>& replacement) {
  std::unordered_map<Expr, Expr> memo;
  return substitute_rec(e, replacement, memo);
}

std::optional<int64_t> py_floordiv(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) {
    if (a == std::numeric_limits<int64_t>::min()) return std::nullopt;
    return -a;
  }
  int64_t q = a / b;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) --q;
  return q;
}

std::optional<int64_t> py_mod(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace toroid::sym
