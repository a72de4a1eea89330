// The simplifier: rewrite rules with side conditions, applied bottom-up to a fixed point.
//
// Rules are data (a table of Rule entries), so tests can enumerate them, count how often each
// fires, and check each one by brute force over small integers. A step limit stops any cycle.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "toroid/sym/expr.h"
#include "toroid/sym/range.h"

namespace toroid::sym {

struct RuleContext {
  const FactsFn& facts;
};

struct Rule {
  const char* name;  // unique, e.g. "mod_of_small_nonneg"
  Kind kind;         // the rule is tried on nodes of this kind
  const char* doc;   // one line: pattern => result, if side condition
  // Returns the rewritten expression, or null if the rule does not apply.
  Expr (*apply)(Expr e, const RuleContext& ctx);
};

// Every rule, in the order they are tried.
std::span<const Rule> simplifier_rules();

struct SimplifyOptions {
  int max_steps = 10000;  // total successful rewrites before giving up (result still sound)
  // When non-empty, only rules with these names run (for testing one rule at a time).
  std::vector<std::string> only_rules;
};

struct SimplifyStats {
  int steps = 0;
  bool hit_step_limit = false;
  std::vector<std::pair<std::string, int>> fired;  // rule name, count
};

Expr simplify(Expr e, const FactsFn& facts, const SimplifyOptions& options = {},
              SimplifyStats* stats = nullptr);

}  // namespace toroid::sym
