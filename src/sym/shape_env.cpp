// ShapeEnv: symbols with hints, ranges and divisors; static decisions; guards.
#include <numeric>

#include "toroid/sym/shape_env.h"

namespace toroid::sym {

namespace {

std::string range_text(ValueRange r) { return r.str(); }

void check_name(const std::map<std::string, size_t>& by_name, const std::string& name) {
  if (name.empty()) user_error("symbol name must not be empty");
  if (by_name.count(name)) user_error("duplicate symbol name '" + name + "'");
}

void check_range(const std::string& name, ValueRange range) {
  if (range.empty()) user_error("empty range " + range_text(range) + " for symbol '" + name + "'");
}

}  // namespace

Expr ShapeEnv::create_backed(const std::string& name, int64_t hint, ValueRange range) {
  check_name(by_name_, name);
  check_range(name, range);
  if (!range.contains(hint))
    user_error("hint " + std::to_string(hint) + " of symbol '" + name + "' is outside its range " +
               range_text(range));
  SymbolInfo info;
  info.symbol = Expr::fresh_symbol(name, Type::Int);
  info.hint = hint;
  info.range = range;
  index_[info.symbol] = symbols_.size();
  by_name_[name] = symbols_.size();
  symbols_.push_back(info);
  return info.symbol;
}

void ShapeEnv::set_hint(Expr symbol, int64_t hint) {
  auto it = index_.find(symbol);
  if (it == index_.end() || symbols_[it->second].unbacked) internal_error("set_hint of an unknown or unbacked symbol", __FILE__, __LINE__);
  SymbolInfo& info = symbols_[it->second];
  if (!info.range.contains(hint))
    user_error("size " + std::to_string(hint) + " for symbol '" + info.symbol.symbol().name + "' is outside its range " +
               range_text(info.range));
  info.hint = hint;
}

Expr ShapeEnv::create_unbacked(const std::string& name, ValueRange range) {
  check_name(by_name_, name);
  check_range(name, range);
  SymbolInfo info;
  info.symbol = Expr::fresh_symbol(name, Type::Int);
  info.unbacked = true;
  info.range = range;
  index_[info.symbol] = symbols_.size();
  by_name_[name] = symbols_.size();
  symbols_.push_back(info);
  return info.symbol;
}

Expr ShapeEnv::create_backed_float(const std::string& name, double hint) {
  check_name(by_name_, name);
  SymbolInfo info;
  info.symbol = Expr::fresh_symbol(name, Type::Float);
  info.float_hint = hint;
  index_[info.symbol] = symbols_.size();
  by_name_[name] = symbols_.size();
  symbols_.push_back(info);
  return info.symbol;
}

Expr ShapeEnv::create_unbacked_float(const std::string& name) {
  check_name(by_name_, name);
  SymbolInfo info;
  info.symbol = Expr::fresh_symbol(name, Type::Float);
  info.unbacked = true;
  index_[info.symbol] = symbols_.size();
  by_name_[name] = symbols_.size();
  symbols_.push_back(info);
  return info.symbol;
}

const SymbolInfo* ShapeEnv::info(Expr symbol) const {
  auto it = index_.find(symbol);
  return it == index_.end() ? nullptr : &symbols_[it->second];
}

Expr ShapeEnv::lookup(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? Expr() : symbols_[it->second].symbol;
}

void ShapeEnv::constrain_range(Expr symbol, ValueRange range) {
  auto it = index_.find(symbol);
  TOROID_CHECK(it != index_.end(), "constrain_range of a symbol not in this ShapeEnv");
  SymbolInfo& si = symbols_[it->second];
  ValueRange r = si.range.intersect(range);
  const std::string& name = si.symbol.symbol().name;
  if (r.empty())
    user_error("range of symbol '" + name + "' " + range_text(si.range) + " and " + range_text(range) +
               " do not intersect");
  if (si.hint && !r.contains(*si.hint))
    user_error("narrowing symbol '" + name + "' to " + range_text(r) + " excludes its hint " +
               std::to_string(*si.hint));
  si.range = r;
}

void ShapeEnv::constrain_divisor(Expr symbol, int64_t divisor) {
  auto it = index_.find(symbol);
  TOROID_CHECK(it != index_.end(), "constrain_divisor of a symbol not in this ShapeEnv");
  SymbolInfo& si = symbols_[it->second];
  const std::string& name = si.symbol.symbol().name;
  if (divisor < 1) user_error("divisor of symbol '" + name + "' must be >= 1, got " + std::to_string(divisor));
  int64_t g = std::gcd(si.divisor, divisor);
  int64_t l;
  if (__builtin_mul_overflow(si.divisor / g, divisor, &l))
    user_error("divisor of symbol '" + name + "' overflows");
  if (si.hint && *si.hint % l != 0)
    user_error("hint " + std::to_string(*si.hint) + " of symbol '" + name + "' is not a multiple of " +
               std::to_string(l));
  si.divisor = l;
}

SymbolFacts ShapeEnv::facts(Expr symbol) const {
  const SymbolInfo* si = info(symbol);
  if (!si || !symbol.is_int()) return {};
  return {si->range, si->divisor};
}

FactsFn ShapeEnv::facts_fn() const {
  return [this](Expr symbol) { return facts(symbol); };
}

Expr ShapeEnv::simplify(Expr e) const { return sym::simplify(e, facts_fn()); }

ValueRange ShapeEnv::bound(Expr e) const {
  FactsFn f = facts_fn();
  return sym::bound(sym::simplify(e, f), f);
}

std::optional<Scalar> ShapeEnv::hint(Expr e) const {
  return sym::evaluate(e, [this](Expr s) -> std::optional<Scalar> {
    const SymbolInfo* si = info(s);
    if (!si || si->unbacked) return std::nullopt;
    if (si->hint) return Scalar{Type::Int, *si->hint, 0.0};
    if (si->float_hint) return Scalar{Type::Float, 0, *si->float_hint};
    return std::nullopt;
  });
}

std::optional<int64_t> ShapeEnv::int_hint(Expr e) const {
  auto v = hint(e);
  if (!v || v->type != Type::Int) return std::nullopt;
  return v->i;
}

std::optional<bool> ShapeEnv::statically_known(Expr cond) const {
  TOROID_CHECK(!cond.is_null() && cond.is_bool(), "statically_known of a non-bool expression");
  FactsFn f = facts_fn();
  Expr s = sym::simplify(cond, f);
  if (s.kind() == Kind::BoolConst) return s.bool_value();
  ValueRange r = sym::bound(s, f);
  if (r.is_exact()) return r.lo != 0;
  return std::nullopt;
}

bool ShapeEnv::guard(Expr cond, SourceLoc loc) {
  TOROID_CHECK(!cond.is_null() && cond.is_bool(), "guard of a non-bool expression");
  FactsFn f = facts_fn();
  Expr s = sym::simplify(cond, f);
  if (s.kind() == Kind::BoolConst) return s.bool_value();
  ValueRange r = sym::bound(s, f);
  if (r.is_exact()) return r.lo != 0;
  auto h = hint(s);
  if (!h) h = hint(cond);
  if (!h) {
    for (Expr sym : s.free_symbols()) {
      const SymbolInfo* si = info(sym);
      if (si && si->unbacked) {
        user_error("data-dependent condition `" + cond.str() + "` on unbacked symbol " + sym.symbol().name +
                       " (range " + si->range.str() + ") cannot be decided at compile time",
                   loc);
      }
    }
    user_error("cannot decide condition `" + cond.str() + "`: it cannot be evaluated with the hints", loc);
  }
  bool value = h->i != 0;
  guards_.push_back(Guard{value ? s : logical_not(s), std::move(loc)});
  return value;
}

int64_t ShapeEnv::guard_int(Expr e, SourceLoc loc) {
  TOROID_CHECK(!e.is_null() && e.is_int(), "guard_int of a non-integer expression");
  Expr s = simplify(e);
  if (auto c = s.as_int()) return *c;
  auto h = int_hint(s);
  if (!h) h = int_hint(e);
  if (!h) {
    for (Expr sym : s.free_symbols()) {
      const SymbolInfo* si = info(sym);
      if (si && si->unbacked) {
        user_error("data-dependent value `" + e.str() + "` on unbacked symbol " + sym.symbol().name + " (range " +
                       si->range.str() + ") cannot be specialized at compile time",
                   loc);
      }
    }
    user_error("cannot specialize `" + e.str() + "`: it cannot be evaluated with the hints", loc);
  }
  guard(eq(s, Expr::integer(*h)), std::move(loc));
  return *h;
}

void ShapeEnv::add_guard(Expr cond, SourceLoc loc) {
  TOROID_CHECK(!cond.is_null() && cond.is_bool(), "add_guard of a non-bool expression");
  guards_.push_back(Guard{cond, std::move(loc)});
}

std::optional<Scalar> ShapeEnv::evaluate(Expr e, const Binding& binding) const {
  return sym::evaluate(e, [&binding](Expr s) -> std::optional<Scalar> {
    auto it = binding.find(s);
    if (it == binding.end()) return std::nullopt;
    return it->second;
  });
}

std::optional<size_t> ShapeEnv::first_failing_guard(const Binding& binding) const {
  for (size_t i = 0; i < guards_.size(); ++i) {
    auto v = evaluate(guards_[i].condition, binding);
    if (!v || v->i == 0) return i;
  }
  for (const SymbolInfo& si : symbols_) {
    auto it = binding.find(si.symbol);
    if (it == binding.end() || !si.symbol.is_int()) continue;
    if (it->second.type != Type::Int) return guards_.size();
    int64_t v = it->second.i;
    if (!si.range.contains(v) || v % si.divisor != 0) return guards_.size();
  }
  return std::nullopt;
}

}  // namespace toroid::sym
