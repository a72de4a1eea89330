// The simplifier driver: applies the rule tables (rules_*.cpp) bottom-up to a fixed point.
//
// Each node's operands are simplified first, the node is rebuilt canonically, then the rules for
// its kind are tried in table order; when one fires, the operands of the result are simplified and
// the rules are tried again. Results are memoized per call. max_steps bounds the number of
// rewrites (every intermediate expression is equivalent, so stopping early is still sound), and a
// depth bound stops a runaway chain of rewrites from exhausting the stack.
#include <unordered_map>

#include "node.h"
#include "rules.h"
#include "toroid/support/error.h"

namespace toroid::sym {

namespace {

constexpr int kMaxDepth = 400;
constexpr int kNumKinds = static_cast<int>(Kind::Not) + 1;

class Simplifier {
 public:
  Simplifier(const FactsFn& facts, const SimplifyOptions& options) : ctx_{facts}, options_(options) {
    auto all = simplifier_rules();
    counts_.assign(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
      const Rule& r = all[i];
      if (!options.only_rules.empty()) {
        bool wanted = false;
        for (const std::string& n : options.only_rules) wanted = wanted || n == r.name;
        if (!wanted) continue;
      }
      by_kind_[static_cast<int>(r.kind)].push_back(i);
    }
  }

  Expr run(Expr e, int depth) {
    auto it = memo_.find(e);
    if (it != memo_.end()) return it->second;
    Expr cur = simplify_operands(e, depth);
    cur = apply_rules(cur, depth);
    memo_[e] = cur;
    memo_[cur] = cur;
    return cur;
  }

  void fill(SimplifyStats& stats) const {
    stats.steps = steps_;
    stats.hit_step_limit = hit_limit_;
    stats.fired.clear();
    auto all = simplifier_rules();
    for (size_t i = 0; i < all.size(); ++i) {
      if (counts_[i] > 0) stats.fired.emplace_back(all[i].name, counts_[i]);
    }
  }

 private:
  Expr simplify_operands(Expr e, int depth) {
    auto ops = e.operands();
    if (ops.empty()) return e;
    std::vector<Expr> out;
    out.reserve(ops.size());
    bool changed = false;
    for (Expr op : ops) {
      Expr s = run(op, depth + 1);
      changed = changed || s != op;
      out.push_back(s);
    }
    if (!changed) return e;
    try {
      return rebuild(e, out);
    } catch (const UserError&) {
      // An operand became a constant zero divisor: the expression is undefined for every value
      // the facts allow. Keep it as written rather than fail.
      return e;
    }
  }

  Expr apply_rules(Expr cur, int depth) {
    auto all = simplifier_rules();
    for (;;) {
      if (depth > kMaxDepth) return cur;
      bool fired = false;
      for (size_t idx : by_kind_[static_cast<int>(cur.kind())]) {
        if (steps_ >= options_.max_steps) {
          hit_limit_ = true;
          return cur;
        }
        Expr r;
        try {
          r = all[idx].apply(cur, ctx_);
        } catch (const UserError&) {
          r = Expr();
        }
        if (r.is_null() || r == cur) continue;
        if (r.type() != cur.type())
          internal_error(std::string("rule ") + all[idx].name + " changed the type of " + cur.str(), __FILE__,
                         __LINE__);
        ++steps_;
        ++counts_[idx];
        cur = simplify_operands(r, depth + 1);
        fired = true;
        break;
      }
      if (!fired) return cur;
    }
  }

  RuleContext ctx_;
  const SimplifyOptions& options_;
  std::vector<size_t> by_kind_[kNumKinds];
  std::vector<int> counts_;
  std::unordered_map<Expr, Expr> memo_;
  int steps_ = 0;
  bool hit_limit_ = false;
};

}  // namespace

std::span<const Rule> simplifier_rules() {
  static const std::vector<Rule> all = [] {
    std::vector<Rule> v;
    for (const Rule& r : rules::arith_rules()) v.push_back(r);
    for (const Rule& r : rules::compare_rules()) v.push_back(r);
    return v;
  }();
  return all;
}

Expr simplify(Expr e, const FactsFn& facts, const SimplifyOptions& options, SimplifyStats* stats) {
  TOROID_CHECK(!e.is_null(), "simplify of a null expression");
  Simplifier s(facts, options);
  Expr out = s.run(e, 0);
  if (stats) s.fill(*stats);
  return out;
}

}  // namespace toroid::sym
