// ShapeEnv: the symbols of one compilation, what is known about them, and the guards that
// compilation relied on.
//
// A backed symbol (s0) comes from an example input: it has a hint (its example value) and a
// range. An unbacked symbol (u0) comes from data (item(), nonzero): a range and no hint.
// guard(cond) answers a condition: from ranges alone if possible (no guard recorded), otherwise
// from the hints, recording the answer as a guard. Guards are checked against the concrete sizes
// of a later call; if one fails, the compiled code must not be used.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "toroid/support/error.h"
#include "toroid/sym/expr.h"
#include "toroid/sym/range.h"
#include "toroid/sym/simplify.h"

namespace toroid::sym {

struct SymbolInfo {
  Expr symbol;
  bool unbacked = false;
  std::optional<int64_t> hint;  // backed only (ints)
  std::optional<double> float_hint;  // backed float symbols
  ValueRange range;
  int64_t divisor = 1;
};

struct Guard {
  Expr condition;  // a bool expression that held when recorded
  SourceLoc loc;   // where it was recorded from, if known
};

// Values for symbols, e.g. the sizes of a concrete call.
using Binding = std::unordered_map<Expr, Scalar>;

class ShapeEnv {
 public:
  ShapeEnv() = default;
  ShapeEnv(const ShapeEnv&) = delete;
  ShapeEnv& operator=(const ShapeEnv&) = delete;

  // Names must be unique in one env (UserError otherwise). A default range for sizes is
  // [0, inf]; the hint must lie in the range (UserError otherwise).
  Expr create_backed(const std::string& name, int64_t hint,
                     ValueRange range = ValueRange::at_least(0));
  Expr create_unbacked(const std::string& name, ValueRange range = ValueRange::at_least(0));
  Expr create_backed_float(const std::string& name, double hint);
  Expr create_unbacked_float(const std::string& name);

  // Declared symbols, in creation order.
  const std::vector<SymbolInfo>& symbols() const { return symbols_; }
  const SymbolInfo* info(Expr symbol) const;          // null if not from this env
  Expr lookup(const std::string& name) const;         // null Expr if none
  // Narrows a symbol's range (intersection; an empty result is a UserError) or divisor.
  void constrain_range(Expr symbol, ValueRange range);
  void constrain_divisor(Expr symbol, int64_t divisor);
  // Replaces a backed symbol's hint (recompiling for new sizes); UserError outside its range.
  void set_hint(Expr symbol, int64_t hint);

  SymbolFacts facts(Expr symbol) const;
  FactsFn facts_fn() const;
  Expr simplify(Expr e) const;
  ValueRange bound(Expr e) const;

  // Evaluates with the hints; nullopt if an unbacked symbol is involved (or division by zero).
  std::optional<Scalar> hint(Expr e) const;
  std::optional<int64_t> int_hint(Expr e) const;

  // Decided from ranges and divisibility alone: true/false if provable, nullopt otherwise.
  std::optional<bool> statically_known(Expr cond) const;
  bool statically_known_true(Expr cond) const { return statically_known(cond) == std::optional<bool>(true); }

  // Decides `cond`: statically if possible (records nothing), else from the hints, recording
  // `cond` or `Not(cond)` as a guard. A condition on unbacked symbols that ranges cannot decide
  // is a UserError (data-dependent control flow), naming the condition.
  bool guard(Expr cond, SourceLoc loc = {});
  // Shorthands: guard(eq(a, b)), guard(lt(a, b)) ...
  int64_t guard_int(Expr e, SourceLoc loc = {});  // guards e == its hint; returns the hint

  const std::vector<Guard>& guards() const { return guards_; }
  // Adds a guard without deciding it (the text parser restores recorded guards this way).
  void add_guard(Expr cond, SourceLoc loc = {});

  // Evaluates `e` with `binding`; symbols the binding lacks are an error (nullopt).
  std::optional<Scalar> evaluate(Expr e, const Binding& binding) const;
  // Index of the first guard that is false (or cannot be evaluated) under `binding`; nullopt
  // if all hold. Also checks that each bound symbol lies in its declared range and is a multiple
  // of its divisor; a binding that fails that check returns guards().size().
  std::optional<size_t> first_failing_guard(const Binding& binding) const;
  bool guards_hold(const Binding& binding) const { return !first_failing_guard(binding); }

 private:
  std::vector<SymbolInfo> symbols_;
  std::unordered_map<Expr, size_t> index_;
  std::map<std::string, size_t> by_name_;
  std::vector<Guard> guards_;
};

}  // namespace toroid::sym

namespace toroid {
using sym::ShapeEnv;
}  // namespace toroid
