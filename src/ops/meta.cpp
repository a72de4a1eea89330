// MetaContext helpers, infer_meta / build_call, and the verifier's re-derivation of results.
#include "toroid/ops/meta.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "toroid/ops/meta_util.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"

namespace toroid::ops {

// ---------------------------------------------------------------------------------------------
// MetaContext

Storage* MetaContext::new_storage() {
  if (!dry_run) return graph.new_storage();
  scratch_storages.push_back(std::make_unique<Storage>());
  return scratch_storages.back().get();
}

std::optional<bool> MetaContext::known(SymExpr cond) const {
  if (cond.kind() == sym::Kind::BoolConst) return cond.bool_value();
  if (std::optional<bool> s = shapes.statically_known(cond)) return s;
  if (std::optional<sym::Scalar> h = shapes.hint(cond)) return h->i != 0;
  return std::nullopt;
}

bool MetaContext::guard(SymExpr cond) {
  if (cond.kind() == sym::Kind::BoolConst) return cond.bool_value();
  // A condition already guarded (either way) is not recorded again.
  for (const sym::Guard& gd : shapes.guards()) {
    if (gd.condition == cond) return true;
    if (gd.condition == sym::logical_not(cond)) return false;
  }
  if (!dry_run) {
    SymExpr s = shapes.simplify(cond);
    for (const sym::Guard& gd : shapes.guards()) {
      if (gd.condition == s) return true;
      if (gd.condition == sym::logical_not(s)) return false;
    }
    return shapes.guard(cond, loc);
  }
  if (std::optional<bool> k = known(cond)) return *k;
  // Same error as ShapeEnv::guard, without recording anything.
  user_error(op + ": data-dependent condition `" + cond.str() + "` cannot be decided at compile time", loc);
}

bool MetaContext::size_oblivious(SymExpr cond) {
  if (cond.kind() == sym::Kind::BoolConst) return cond.bool_value();
  if (std::optional<bool> s = shapes.statically_known(cond)) return *s;
  bool unbacked = false;
  for (SymExpr s : cond.free_symbols()) {
    const sym::SymbolInfo* si = shapes.info(s);
    if (!si || si->unbacked) unbacked = true;
  }
  if (!unbacked) return guard(cond);
  // Decide as if every unbacked symbol were at least 2 (PyTorch's size-oblivious reasoning).
  SymExpr assumed = sym::substitute(cond, [&](SymExpr s) -> SymExpr {
    const sym::SymbolInfo* si = shapes.info(s);
    if (si && !si->unbacked) return SymExpr();
    return SymExpr::integer(std::max<int64_t>(2, si ? si->range.lo : 2));
  });
  if (std::optional<bool> k = known(assumed)) return *k;
  return guard(cond);
}

SymExpr MetaContext::create_unbacked(sym::ValueRange range) {
  if (dry_run) {
    placeholders.push_back(SymExpr::fresh_symbol("u?"));
    return placeholders.back();
  }
  size_t n = 0;
  while (shapes.lookup("u" + std::to_string(n))) ++n;
  return shapes.create_unbacked("u" + std::to_string(n), range);
}

SymExpr MetaContext::create_unbacked_float() {
  if (dry_run) {
    placeholders.push_back(SymExpr::fresh_symbol("uf?", sym::Type::Float));
    return placeholders.back();
  }
  size_t n = 0;
  while (shapes.lookup("uf" + std::to_string(n))) ++n;
  return shapes.create_unbacked_float("uf" + std::to_string(n));
}

void MetaContext::fail(const std::string& message) const { user_error(op + ": " + message, loc); }

// ---------------------------------------------------------------------------------------------

namespace {

const OpEntry& entry_with_meta(const std::string& op, const SourceLoc& loc) {
  const OpEntry* e = OpRegistry::global().find(op);
  if (!e || !e->meta) user_error("no meta function for " + op, loc);
  return *e;
}

std::vector<ResultSpec> run_meta(const OpEntry& e, MetaContext& ctx, const std::vector<Argument>& args,
                                 const std::vector<Kwarg>& kwargs) {
  try {
    check_complex_args(e, args, kwargs);
    BoundArgs bound(e.schema, args, kwargs);
    return e.meta(bound, ctx);
  } catch (const UserError& err) {
    if (err.loc().known() || !ctx.loc.known()) throw;
    user_error(err.message(), ctx.loc);
  }
}

std::string join_exprs(const std::vector<SymExpr>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i].str();
  return out;
}

}  // namespace

std::string describe_meta(const TensorMeta& m) {
  std::string out = std::string(dtype_short_name(m.dtype)) + "[" + join_exprs(m.sizes) + "]";
  std::vector<std::string> attrs;
  if (!m.is_contiguous()) attrs.push_back("strides=[" + join_exprs(m.strides) + "]");
  if (m.offset && m.offset != SymExpr::integer(0)) attrs.push_back("offset=" + m.offset.str());
  if (!m.device.is_cpu()) attrs.push_back("device=" + m.device.str());
  if (!attrs.empty()) {
    out += "{";
    for (size_t i = 0; i < attrs.size(); ++i) out += (i ? ", " : "") + attrs[i];
    out += "}";
  }
  return out;
}

bool has_meta(const std::string& op) {
  const OpEntry* e = OpRegistry::global().find(op);
  return e && e->meta;
}

std::vector<ResultSpec> infer_meta(Graph& g, const std::string& op, const std::vector<Argument>& args,
                                   const std::vector<Kwarg>& kwargs, SourceLoc loc) {
  const OpEntry& e = entry_with_meta(op, loc);
  MetaContext ctx{g, g.shape_env(), std::move(loc), op};
  return run_meta(e, ctx, args, kwargs);
}

Node* build_call(Graph& g, std::string op, std::vector<Argument> args, std::vector<Kwarg> kwargs) {
  std::vector<ResultSpec> results = infer_meta(g, op, args, kwargs);
  return g.add_call(std::move(op), std::move(args), std::move(kwargs), std::move(results));
}

// ---------------------------------------------------------------------------------------------
// Verifier re-derivation

namespace {

// Compares expressions after simplification; a dry-run placeholder (an unbacked symbol the meta
// function would create) matches any expression, consistently.
// A polynomial over symbols with integer coefficients: monomial (symbols with exponents, in
// order) -> coefficient. None for expressions that are not polynomials (division, min, ...) or
// that grow past a few hundred terms.
using Monomial = std::vector<std::pair<SymExpr, int64_t>>;
using Polynomial = std::map<Monomial, int64_t>;

Polynomial times(const Polynomial& a, const Polynomial& b) {
  Polynomial out;
  for (const auto& [ma, ca] : a)
    for (const auto& [mb, cb] : b) {
      std::map<SymExpr, int64_t> powers(ma.begin(), ma.end());
      for (const auto& [x, e] : mb) powers[x] += e;
      out[Monomial(powers.begin(), powers.end())] += ca * cb;
    }
  return out;
}

std::optional<Polynomial> polynomial(SymExpr e) {
  switch (e.kind()) {
    case sym::Kind::IntConst: return Polynomial{{Monomial{}, e.int_value()}};
    case sym::Kind::Symbol: return Polynomial{{Monomial{{e, 1}}, 1}};
    case sym::Kind::Add: {
      Polynomial out;
      for (SymExpr t : e.operands()) {
        std::optional<Polynomial> p = polynomial(t);
        if (!p) return std::nullopt;
        for (const auto& [m, c] : *p) out[m] += c;
      }
      return out;
    }
    case sym::Kind::Mul:
    case sym::Kind::Pow: {
      Polynomial out{{Monomial{}, 1}};
      std::vector<SymExpr> factors(e.operands().begin(), e.operands().end());
      int64_t repeat = e.kind() == sym::Kind::Pow ? e.exponent() : 1;
      for (int64_t r = 0; r < repeat; ++r)
        for (SymExpr f : factors) {
          std::optional<Polynomial> p = polynomial(f);
          if (!p) return std::nullopt;
          out = times(out, *p);
          if (out.size() > 256) return std::nullopt;
        }
      return out;
    }
    default: return std::nullopt;
  }
}

// Whether two integer expressions are the same polynomial (s0*(s0 + 1) and s0**2 + s0).
bool same_polynomial(SymExpr a, SymExpr b) {
  std::optional<Polynomial> pa = polynomial(a), pb = polynomial(b);
  if (!pa || !pb) return false;
  std::erase_if(*pa, [](const auto& t) { return t.second == 0; });
  std::erase_if(*pb, [](const auto& t) { return t.second == 0; });
  return *pa == *pb;
}

class Matcher {
 public:
  Matcher(const ShapeEnv& env, const std::vector<SymExpr>& placeholders) : env_(env) {
    for (SymExpr p : placeholders) bound_[p] = SymExpr();
  }
  bool operator()(SymExpr derived, SymExpr actual) {
    if (derived.is_null() || actual.is_null()) return derived.is_null() == actual.is_null();
    auto it = bound_.find(derived);
    if (it != bound_.end()) {
      if (it->second.is_null()) {
        it->second = actual;
        return true;
      }
      derived = it->second;
    }
    derived = sym::substitute(derived, [&](SymExpr s) -> SymExpr {
      auto b = bound_.find(s);
      return b == bound_.end() ? SymExpr() : b->second;
    });
    if (derived == actual) return true;
    SymExpr a = env_.simplify(derived), b = env_.simplify(actual);
    if (a == b) return true;
    std::optional<bool> same = env_.statically_known(sym::eq(a, b));
    return same == std::optional<bool>(true) || same_polynomial(a, b);
  }
  TensorMeta resolve(TensorMeta m) {
    auto sub = [&](SymExpr e) {
      return e.is_null() ? e : sym::substitute(e, [&](SymExpr s) -> SymExpr {
        auto b = bound_.find(s);
        return b == bound_.end() ? SymExpr() : b->second;
      });
    };
    for (SymExpr& e : m.sizes) e = sub(e);
    for (SymExpr& e : m.strides) e = sub(e);
    m.offset = sub(m.offset);
    return m;
  }

 private:
  const ShapeEnv& env_;
  std::unordered_map<SymExpr, SymExpr> bound_;
};

bool same_exprs(Matcher& match, const std::vector<SymExpr>& d, const std::vector<SymExpr>& a) {
  if (d.size() != a.size()) return false;
  bool ok = true;
  for (size_t i = 0; i < d.size(); ++i) ok = match(d[i], a[i]) && ok;
  return ok;
}

// Strides agree except in dims of size 1, whose stride addresses nothing (PyTorch's kernels and
// meta functions differ there: a slice of a [1, n] tensor keeps its row stride or not), and in
// tensors with no elements, whose strides address nothing at all.
bool same_strides(Matcher& match, const std::vector<SymExpr>& sizes, const std::vector<SymExpr>& d,
                  const std::vector<SymExpr>& a) {
  if (d.size() != a.size() || sizes.size() != a.size()) return false;
  for (SymExpr s : sizes)
    if (s == SymExpr::integer(0)) return true;
  bool ok = true;
  for (size_t i = 0; i < d.size(); ++i)
    if (sizes[i] != SymExpr::integer(1)) ok = match(d[i], a[i]) && ok;
  return ok;
}

// A *_scatter op's result is self's layout (PyTorch's clone_preserve_strides) or, where PyTorch
// reached it through its decomposition (a `where` over self), a fresh contiguous tensor: a traced
// graph may declare either (swin_t's attention masks have both, for the same argument layouts).
// The result is a new tensor either way, so the declared contiguous layout is taken.
bool dense_scatter_result(MetaContext& ctx, const std::string& op, const TensorMeta& declared,
                          const TensorMeta& derived, const std::vector<Value*>& inputs) {
  static const std::set<std::string, std::less<>> scatters = {
      "aten.slice_scatter.default", "aten.select_scatter.default", "aten.diagonal_scatter.default",
      "aten.as_strided_scatter.default"};
  if (!scatters.count(op) || declared.offset != SymExpr::integer(0)) return false;
  for (const Value* in : inputs)
    if (in->is_tensor() && in->meta().storage == derived.storage) return false;  // not a new tensor
  return meta::is_contiguous(ctx, declared.sizes, declared.strides);
}

}  // namespace

void check_node_meta(const Node& call, Diagnostics& diags) {
  const std::string& op = call.target();
  const OpEntry* e = OpRegistry::global().find(op);
  if (!e || !e->meta) return;
  for (const Value* v : call.results())
    if (v->is_tensor() && !v->has_meta()) return;  // reported by the structural checks
  std::vector<Value*> inputs = call.inputs();
  for (const Value* v : inputs)
    if (v->is_tensor() && !v->has_meta()) return;

  // The dry run neither records nor creates anything in the graph.
  Graph& g = const_cast<Graph&>(*call.graph());
  MetaContext ctx{g, g.shape_env(), {}, op, /*dry=*/true};
  std::vector<ResultSpec> derived;
  try {
    derived = run_meta(*e, ctx, call.args(), call.kwargs());
  } catch (const UserError& err) {
    diags.error(&call, err.message());
    return;
  }
  if (derived.size() != call.num_results()) {
    diags.error(&call, "the meta function of " + op + " gives " + std::to_string(derived.size()) + " result" +
                           (derived.size() == 1 ? "" : "s") + " but the node has " +
                           std::to_string(call.num_results()));
    return;
  }
  Matcher match(g.shape_env(), ctx.placeholders);
  for (size_t i = 0; i < derived.size(); ++i) {
    const Value* v = call.result(i);
    const ResultSpec& d = derived[i];
    std::string which = "result " + std::to_string(i) + " of " + op;
    if (d.type != v->type()) {
      diags.error(&call, which + " is " + value_type_name(v->type()) + " but its meta function gives " +
                             value_type_name(d.type));
      continue;
    }
    if (!v->is_tensor()) {
      if (d.scalar_value && v->scalar_value() && !match(d.scalar_value, v->scalar_value()))
        diags.error(&call, which + " has value " + v->scalar_value().str() + " but its meta function gives " +
                               d.scalar_value.str());
      continue;
    }
    const TensorMeta& am = v->meta();
    const TensorMeta& dm = *d.meta;
    bool ok = dm.dtype == am.dtype && dm.device == am.device;
    ok = same_exprs(match, dm.sizes, am.sizes) && ok;
    bool layout = same_strides(match, am.sizes, dm.strides, am.strides) && match(dm.offset, am.offset);
    ok = (layout || dense_scatter_result(ctx, op, am, dm, inputs)) && ok;
    if (!ok) {
      diags.error(&call, which + " is " + describe_meta(am) + " but its meta function gives " +
                             describe_meta(match.resolve(dm)));
      continue;
    }
    // Aliasing: a derived storage that belongs to an input makes the result a view of it.
    const Value* base = nullptr;
    for (const Value* in : inputs)
      if (in->is_tensor() && in->meta().storage == dm.storage) base = in;
    if (base) {
      if (am.storage != dm.storage)
        diags.error(&call, which + " must share storage with " + describe_value(base) +
                               " (it is a view or in-place result)");
    } else {
      for (const Value* in : inputs)
        if (in->is_tensor() && in->meta().storage == am.storage) {
          diags.error(&call, which + " shares storage with " + describe_value(in) + " but is not a view of it");
          break;
        }
    }
  }
}

}  // namespace toroid::ops
