#include "toroid/codegen/cpu/cpp_kernel.h"

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/kernel_emitter.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"

namespace toroid::codegen::cpu {

using loop::Buffer;
using loop::BufferKind;
using loop::Expr;
using loop::Op;
using loop::ReduceOp;

namespace {

// Kernels with fewer elements than this run on one thread (OpenMP start-up costs microseconds).
constexpr int64_t kParallelThreshold = 32768;
// Ops in one loop body that several pointwise members share.
constexpr int kMaxLoopOps = 256;
// Row buffers a kernel may keep (t_row_cache's slots in the prelude).
constexpr size_t kRowCaches = 4;
// Elements per Welford block of a var reduction (4 KiB of f32: stays in L1 for the second pass).
constexpr int64_t kWelfordBlock = 1024;
// The partial results a row's floating reduction keeps at most (reduction_lanes).
constexpr int64_t kReductionLanes = 64;

// The C++ type an element of `d` is stored as.
const char* storage_type(DType d) {
  if (d == DType::BFloat16) return "uint16_t";
  if (d == DType::Float16) return "_Float16";
  return compute_type(d);
}

std::string float_literal(double v, DType d) {
  const char* t = compute_type(d);
  if (std::isnan(v)) return std::string("std::numeric_limits<") + t + ">::quiet_NaN()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + t + ">::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return std::string(t) + "(" + buf + ")";
}

// Ops that cost tens of instructions per element: a reduction's per-element value made of one
// of them is kept for the pointwise member that computes it again (CppEmitter::plan_row_caches).
bool transcendental(Op op) {
  switch (op) {
    case Op::Exp: case Op::Expm1: case Op::Log: case Op::Log1p: case Op::Log2: case Op::Log10: case Op::Sin:
    case Op::Cos: case Op::Tan: case Op::Tanh: case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh:
    case Op::Cosh: case Op::Asinh: case Op::Acosh: case Op::Atanh: case Op::Sigmoid: case Op::Erf: case Op::Pow:
    case Op::Atan2:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string cpp_index(SymExpr e, const std::function<std::string(SymExpr)>& name) {
  return index_code(e, name);
}

namespace {

class CppEmitter : public KernelEmitter {
 public:
  CppEmitter(const sched::Kernel& k, const SymbolSlots& slots, const ShapeEnv& env) : KernelEmitter(k, slots, env) {}

  CppKernel emit() {
    CppKernel out;
    out.name = k_.name;
    collect_args();
    std::ostringstream body;
    emit_members(body);
    std::ostringstream syms, pointers;
    syms << "  (void)syms;\n";
    for (auto& [sym, slot] : used_syms_) syms << "  const int64_t " << sym_name(sym) << " = syms[" << slot << "];\n";
    for (size_t i = 0; i < args_.size(); ++i) {
      const Buffer* b = args_[i];
      pointers << "  " << storage_type(b->dtype) << "* __restrict__ " << ptr(b) << " = reinterpret_cast<"
               << storage_type(b->dtype) << "*>(bufs[" << i << "]);\n";
    }
    std::ostringstream os;
    os << header_comment("");
    const std::string entry = "extern \"C\" void " + k_.name + "(char* const* bufs, const int64_t* syms) {\n";
    if (rows_parallel_.empty()) {
      os << entry << syms.str() << pointers.str() << body.str() << "}\n";
    } else {
      // The rows are a function of their own that declares the __restrict__ pointers itself: a
      // lambda capturing them loses the promise (g++ then keeps the loops' loads in order, ~6x
      // slower rows; bench/RESULTS.md 24a). noinline: t_for_rows calls it from two places.
      os << "static __attribute__((noinline)) void " << k_.name
         << "_rows(char* const* bufs, const int64_t* syms, int64_t o_begin, int64_t o_end) {\n"
         << syms.str() << pointers.str() << body.str() << "}\n";
      os << entry << syms.str() << "  const int64_t n_outer = " << numel(k_.outer) << ";\n"
         << "  const int64_t n_inner = " << numel(k_.inner) << ";\n"
         << "  t_for_rows(n_outer, " << rows_parallel_ << ", [&](int64_t o_begin, int64_t o_end) { " << k_.name
         << "_rows(bufs, syms, o_begin, o_end); });\n}\n";
    }
    out.source = os.str();
    out.symbol = content_symbol("cpu", out.source, out.name);
    for (const Buffer* b : args_) out.args.push_back(b->id);
    out.index_sites = sites_;
    for (auto& [sym, slot] : used_syms_) out.sym_slots.push_back(slot);
    return out;
  }

 private:
  // A reduction's per-element values kept in a row buffer (plan_row_caches): the member that
  // fills it, and the first member that stores something they read (the cache is stale from
  // there).
  struct RowCache {
    std::string name;
    size_t filled_by = 0, valid_until = 0;
  };
  std::unordered_map<Expr, RowCache> row_caches_;
  // Sum and mean reductions taken from an earlier var reduction of the same values (a layer
  // norm's mean beside its variance): the member's index -> the var member's, whose Welford
  // loop leaves its mean in welford_mean<var index>. One pass over the row fewer.
  std::unordered_map<size_t, size_t> mean_from_welford_;
  std::unordered_set<size_t> welford_exports_;  // the var members named there
  // t_for_rows' condition ("true" or the work count's test) where the rows run through it.
  std::string rows_parallel_;
  // float exp as the prelude's t_exp rather than libmvec's call ($TOROID_CPU_INLINE_EXP, read
  // per kernel). Off: faster on one thread, slower at 16 threads of the GPU machine's host
  // (bench/RESULTS.md 32a), where two threads share a core and count instructions.
  bool inline_exp_ = env_flag("TOROID_CPU_INLINE_EXP").value_or(false);
  // float erf as the prelude's t_erf rather than libmvec's call ($TOROID_CPU_INLINE_ERF, read
  // per kernel). On: a bf16 gelu kernel ran 643 -> 407 us at 16 threads of the GPU machine's host
  // and 9.0 -> 5.6 ms on one (bench/RESULTS.md 34a), unlike t_exp.
  bool inline_erf_ = env_flag("TOROID_CPU_INLINE_ERF").value_or(true);
  // Checks each position (recording an error and reading nothing when one is out of range),
  // then loads.
  std::string indirect_load_expr(std::ostream& os, const std::string& ind, Expr e,
                                 std::unordered_map<Expr, std::string>& names) {
    std::function<std::string()> fresh = [&] { return tmp(); };
    std::function<std::string(size_t)> operand = [&](size_t k) { return names.at(e.operand(k)); };
    std::function<std::string(const std::string&)> element_at = [&](const std::string& at) {
      return element(e.buffer()->storage, at);
    };
    return indirect_load_code(e, {os, ind, *this, sites_, fresh, operand, element_at, "int64_t"});
  }

  std::string numel(const std::vector<SymExpr>& sizes) {
    SymExpr n = SymExpr::integer(1);
    for (SymExpr s : sizes) n = n * s;
    return index(n);
  }

  // The OpenMP clause that parallelizes a loop nest of `sizes` elements by its work: none where
  // the count is a constant under kParallelThreshold (even a region that stays on one thread
  // costs libgomp a team and a futex wake per call: most of a small kernel's time), no `if`
  // where it is a constant at or over it, else `if(<work> >= threshold)` on `work`, the C++
  // expression of the count. (Row loops only ask whether there is one: t_for_rows decides the
  // threads per call.)
  std::optional<std::string> parallel_clause(const std::vector<SymExpr>& sizes, const std::string& work) {
    SymExpr n = SymExpr::integer(1);
    for (SymExpr s : sizes) n = n * s;
    std::optional<int64_t> c = env_.simplify(n).as_int();
    if (c) return *c < kParallelThreshold ? std::nullopt : std::optional<std::string>("");
    return " if(" + work + " >= " + std::to_string(kParallelThreshold) + ")";
  }

  // Declarations of the domain variables of `sizes` from the flat counter `flat`.
  void unravel(std::ostream& os, const std::string& ind, const std::vector<SymExpr>& sizes,
               SymExpr (*var)(size_t), const std::string& flat) {
    if (sizes.size() == 1) {
      os << ind << "const int64_t " << var(0).symbol().name << " = " << flat << ";\n";
      return;
    }
    std::string rest = flat;
    for (size_t d = sizes.size(); d-- > 0;) {
      std::string v = var(d).symbol().name;
      if (d == 0) {
        os << ind << "const int64_t " << v << " = " << rest << ";\n";
      } else {
        std::string s = index(sizes[d]);
        os << ind << "const int64_t " << v << " = " << rest << " % " << s << ";\n";
        rest = "(" + rest + " / " + s + ")";
      }
    }
  }

  // Emits SSA statements for `e`; returns the name of its value.
  std::string value(std::ostream& os, const std::string& ind, Expr root, std::unordered_map<Expr, std::string>& names) {
    loop::visit(root, [&](Expr e) {
      if (names.count(e)) return;
      std::string v = e.op() == Op::IndirectLoad ? indirect_load_expr(os, ind, e, names) : expr(e, names);
      if (e.op() == Op::Const) {
        names[e] = v;
        return;
      }
      std::string t = tmp();
      os << ind << "const " << compute_type(e.dtype()) << " " << t << " = " << v << ";\n";
      names[e] = t;
    });
    return names.at(root);
  }

  std::string element(const Buffer* b, const std::string& pos) {
    std::string at = ptr(b) + "[" + pos + "]";
    if (b->dtype == DType::BFloat16) return "t_bf16_to_float(" + at + ")";
    if (b->dtype == DType::Float16) return "static_cast<float>(" + at + ")";
    return at;
  }
  std::string load_expr(Expr e) { return element(e.buffer()->storage, index(e.index())); }

  std::string expr(Expr e, std::unordered_map<Expr, std::string>& names) {
    return scalar_expr(e, [&](size_t i) { return names.at(e.operand(i)); }, *this);
  }

  // ScalarDialect: the standard library's overloads, but float exp, log, erf, tanh, expm1 and
  // log1p through the prelude's t_lm_ wrappers of libmvec, and exp, sigmoid and erf inline where
  // asked.
  std::string math(const std::string& fn, DType t) const override {
    const bool is_float = compute_type(t) == std::string_view("float");
    bool inline_exp = inline_exp_ && is_float;
    if (fn == "rsqrt") return "";  // 1 / sqrt: no approximate form
    if (fn == "sigmoid") return inline_exp ? "t_sigmoid_exp" : "t_sigmoid";
    if (fn == "exp" && inline_exp) return "t_exp";
    if (fn == "erf" && inline_erf_ && is_float) return "t_erf";
    // libmvec's, one variant wherever g++ calls it (kernel_prelude.h).
    static const std::unordered_set<std::string> vector_math = {"exp", "log", "erf", "tanh", "expm1", "log1p"};
    if (is_float && vector_math.count(fn)) return "t_lm_" + fn + "f";
    return "std::" + fn;
  }
  std::string float_literal(double v, DType d) const override { return cpu::float_literal(v, d); }
  std::string round_to(const std::string& x, DType to) const override {
    return std::string(to == DType::BFloat16 ? "t_round_bf16" : "t_round_f16") + "(static_cast<float>(" + x + "))";
  }
  std::string load(Expr e) override { return load_expr(e); }
  int64_t error_site(const Node* op, int64_t dim) override { return site_number(sites_, op, dim); }
  std::string index(SymExpr e) override {
    return cpp_index(env_.simplify(e), [this](SymExpr s) { return name_of(s); });
  }
  std::string float_symbol(SymExpr s) override { return "t_f64_from_bits(" + name_of(s) + ")";
  }

  std::string store(const Buffer* b, const std::string& pos, const std::string& v) {
    const Buffer* s = b->storage;
    std::string val = v;
    if (s->dtype == DType::BFloat16) val = "t_float_to_bf16(" + v + ")";
    else if (s->dtype == DType::Float16) val = "static_cast<_Float16>(" + v + ")";
    else val = std::string("static_cast<") + storage_type(s->dtype) + ">(" + v + ")";
    return ptr(s) + "[" + pos + "] = " + val + ";\n";
  }

  void emit_members(std::ostream& os) {
    bool has_outer = !k_.outer.empty();
    std::string n_outer = numel(k_.outer), n_inner = numel(k_.inner);
    std::string ind = "  ";
    bool pointwise_only = true;
    for (const sched::Member& m : k_.members) pointwise_only = pointwise_only && m.inner;
    if (has_outer) {
      os << ind << "const int64_t n_outer = " << n_outer << ";\n";
      os << ind << "const int64_t n_inner = " << n_inner << ";\n";
      std::vector<SymExpr> all = k_.outer;
      all.insert(all.end(), k_.inner.begin(), k_.inner.end());
      // Rows through t_for_rows (in parallel where the work is at or over the threshold, a
      // symbolic count decided per call; no region where one thread would do): this loop
      // becomes the rows function, over the rows [o_begin, o_end) t_for_rows gives it.
      if (std::optional<std::string> clause = parallel_clause(all, "n_outer * n_inner")) {
        rows_parallel_ = clause->empty() ? "true" : "n_outer * n_inner >= " + std::to_string(kParallelThreshold);
        os << ind << "for (int64_t o_flat = o_begin; o_flat < o_end; ++o_flat) {\n";
      } else {
        os << ind << "for (int64_t o_flat = 0; o_flat < n_outer; ++o_flat) {\n";
      }
      unravel(os, ind + "  ", k_.outer, sched::outer_var, "o_flat");
      ind += "  ";
      plan_row_caches(os, ind);
    } else {
      os << ind << "const int64_t n_inner = " << n_inner << ";\n";
    }
    bool parallel_inner = !has_outer && parallel_clause(k_.inner, "n_inner").has_value();
    const std::vector<sched::Member>& ms = k_.members;
    plan_means_from_welford();
    for (size_t i = 0; i < ms.size();) {
      // A run of inner-level pointwise members shares one loop: each reads the others only at
      // the element they store in the same iteration (the scheduler's rule). A loop body stays
      // under kMaxLoopOps: g++'s time grows faster than linearly with it.
      size_t end = i + 1;
      if (inner_pointwise(ms[i])) {
        int ops = loop::op_count(ms[i].buffer->body);
        while (end < ms.size() && inner_pointwise(ms[end]) &&
               (ops += loop::op_count(ms[end].buffer->body)) <= kMaxLoopOps)
          ++end;
      }
      if (welford_exports_.count(i))
        os << ind << acc_type(ReduceOp::Var, sched::member_body(ms[i]).dtype()) << " welford_mean" << i << " = 0, welford_n" << i
           << " = 0;\n";
      os << ind << "{  //";
      for (size_t j = i; j < end; ++j) os << " " << ms[j].buffer->name;
      os << "\n";
      std::string in2 = ind + "  ";
      if (auto from = mean_from_welford_.find(i); from != mean_from_welford_.end()) emit_mean_from_welford(os, in2, ms[i], from->second);
      else if (ms[i].buffer->kind == BufferKind::Reduction) emit_reduction(os, in2, ms[i], parallel_inner);
      else if (ms[i].inner) emit_inner_pointwise(os, in2, {ms.begin() + static_cast<std::ptrdiff_t>(i), ms.begin() + static_cast<std::ptrdiff_t>(end)}, parallel_inner && pointwise_only);
      else emit_outer_pointwise(os, in2, ms[i]);
      os << ind << "}\n";
      i = end;
    }
    if (has_outer) os << "  }\n";
  }

  // A later member takes the var's mean while nothing between them stores what the var reads.
  void plan_means_from_welford() {
    mean_from_welford_.clear();
    welford_exports_.clear();
    const std::vector<sched::Member>& ms = k_.members;
    for (size_t v = 0; v < ms.size(); ++v) {
      if (ms[v].buffer->kind != BufferKind::Reduction || ms[v].buffer->reduce != ReduceOp::Var) continue;
      std::unordered_set<const Buffer*> reads;
      loop::visit(sched::member_body(ms[v]), [&](Expr e) {
        if (e.op() == Op::Load || e.op() == Op::IndirectLoad) reads.insert(e.buffer()->storage);
      });
      for (size_t m = v + 1; m < ms.size() && !reads.count(ms[m].buffer->storage); ++m) {
        bool fills_cache = false;  // its own loop fills a row cache a later member reads
        for (const auto& [e, cache] : row_caches_) fills_cache = fills_cache || cache.filled_by == m;
        if (!fills_cache && !mean_from_welford_.count(m) && welford_gives(ms[v], ms[m])) {
          mean_from_welford_[m] = v;
          welford_exports_.insert(v);
        }
      }
    }
  }

  void emit_mean_from_welford(std::ostream& os, const std::string& ind, const sched::Member& m, size_t var) {
    const Buffer* b = m.buffer;
    const char* A = acc_type(b->reduce, sched::member_body(m).dtype());
    std::string mean = "welford_mean" + std::to_string(var), n = "welford_n" + std::to_string(var);
    // An empty row's mean is 0 / 0 and its sum 0, as the reduction's own loop gives.
    std::string value = b->reduce == ReduceOp::Sum
                            ? mean + " * " + n
                            : n + " > 0 ? " + mean + " : " + std::string(A) + "(0) / " + std::string(A) + "(0)";
    os << ind << store(b, index(sched::member_store_position(m)), value);
  }

  // A row's reduction whose per-element value is expensive (softmax's exp(x - max)) and that a
  // later pointwise member of the row computes again keeps the values in a per-thread row buffer
  // (t_row_cache: the row stays in L1) for that member to read: one exp per element, not two.
  void plan_row_caches(std::ostream& os, const std::string& ind) {
    if (k_.inner.empty()) return;
    const std::vector<sched::Member>& ms = k_.members;
    for (size_t i = 0; i < ms.size(); ++i) {
      const Buffer* b = ms[i].buffer;
      bool plain = b->kind == BufferKind::Reduction && b->reduce != ReduceOp::ArgMax && b->reduce != ReduceOp::ArgMin &&
                   b->reduce != ReduceOp::Var && b->reduce != ReduceOp::Any && b->reduce != ReduceOp::All;
      if (!plain) continue;
      Expr body = sched::member_body(ms[i]);
      if (!transcendental(body.op()) || body.dtype() != DType::Float32 || row_caches_.count(body)) continue;
      // Reused by a later member before anything it reads is stored again.
      std::unordered_set<const Buffer*> reads;
      loop::visit(body, [&](Expr e) {
        if (e.op() == Op::Load || e.op() == Op::IndirectLoad) reads.insert(e.buffer()->storage);
      });
      size_t valid_until = i + 1;
      while (valid_until < ms.size() && !reads.count(ms[valid_until].buffer->storage)) ++valid_until;
      bool reused = false;
      for (size_t j = i + 1; j < valid_until && !reused; ++j)
        if (inner_pointwise(ms[j]))
          loop::visit(stored_body(ms[j]), [&](Expr e) { reused = reused || e == body; });
      if (!reused || row_caches_.size() >= kRowCaches) continue;
      std::string name = "row" + std::to_string(row_caches_.size());
      os << ind << "float* const " << name << " = t_row_cache(" << row_caches_.size() << ", n_inner);\n";
      row_caches_[body] = {name, i, valid_until};
    }
  }

  // Index of a member of this kernel (a reference into k_.members).
  size_t member_index(const sched::Member& m) const { return static_cast<size_t>(&m - k_.members.data()); }

  void inner_loop_header(std::ostream& os, const std::string& ind, const std::string& pragma,
                         const std::string& begin = "0", const std::string& end = "n_inner") {
    os << ind << pragma << "\n";
    os << ind << "for (int64_t q_flat = " << begin << "; q_flat < " << end << "; ++q_flat) {\n";
    if (!k_.inner.empty()) unravel(os, ind + "  ", k_.inner, sched::inner_var, "q_flat");
  }

  // Loads whose index does not depend on the inner loop variables (per-row scalars such as a
  // mean or a max that this kernel stored just before) are read once before the inner loop: g++
  // does not vectorize a loop that re-loads them ("latch block not empty"). Loads of the
  // storages the loop writes stay in the loop, and nothing is read when the inner loop is empty.
  void hoist_invariant_loads(std::ostream& os, const std::string& ind, Expr root,
                             const std::unordered_set<const Buffer*>& stored_here,
                             std::unordered_map<Expr, std::string>& names) {
    if (k_.inner.empty()) return;
    loop::visit(root, [&](Expr e) {
      if (e.op() != Op::Load || names.count(e)) return;
      if (stored_here.count(e.buffer()->storage)) return;
      for (SymExpr s : env_.simplify(e.index()).free_symbols())
        for (size_t k = 0; k < k_.inner.size(); ++k)
          if (s == sched::inner_var(k)) return;
      std::string t = tmp();
      const char* T = compute_type(e.dtype());
      os << ind << "const " << T << " " << t << " = n_inner > 0 ? " << T << "(" << load_expr(e) << ") : " << T << "();\n";
      names[e] = t;
    });
  }

  static bool inner_pointwise(const sched::Member& m) { return m.inner && m.buffer->kind != BufferKind::Reduction; }

  void emit_inner_pointwise(std::ostream& os, const std::string& ind, std::span<const sched::Member> group, bool parallel) {
    std::string pragma = parallel ? "#pragma omp parallel for simd schedule(static)" + *parallel_clause(k_.inner, "n_inner")
                                  : "#pragma omp simd";
    std::unordered_map<Expr, std::string> names;
    std::unordered_set<const Buffer*> stored;  // loads of these stay in the loop
    for (const sched::Member& m : group) stored.insert(m.buffer->storage);
    for (const sched::Member& m : group) hoist_invariant_loads(os, ind, sched::member_body(m), stored, names);
    // Row buffers filled before this loop and still valid through its last member.
    size_t first = member_index(group.front()), last = first + group.size();
    for (const auto& [cached, row] : row_caches_)
      if (row.filled_by < first && last <= row.valid_until) names[cached] = row.name + "[q_flat]";
    if (k_.inner.empty()) {
      os << ind << "for (int64_t q_flat = 0; q_flat < 1; ++q_flat) {\n";
    } else {
      inner_loop_header(os, ind, pragma);
    }
    for (const sched::Member& m : group) {
      std::string v = value(os, ind + "  ", stored_body(m), names);
      os << ind << "  " << store(m.buffer, index(sched::member_store_position(m)), v);
    }
    os << ind << "}\n";
  }

  void emit_outer_pointwise(std::ostream& os, const std::string& ind, const sched::Member& m) {
    std::unordered_map<Expr, std::string> names;
    std::string v = value(os, ind, stored_body(m), names);
    os << ind << store(m.buffer, index(sched::member_store_position(m)), v);
  }

  // var: Welford over blocks. Each block of kWelfordBlock elements (in L1) gets its mean and
  // sum of squared deviations in two vectorized passes; blocks merge with Chan's formula, so
  // long rows keep the accuracy of Welford without a division per element.
  void emit_welford(std::ostream& os, const std::string& ind, const Buffer* b, Expr body, const char* A,
                    const std::string& pos, const std::string& n_red, size_t member) {
    std::string in2 = ind + "  ";
    os << ind << A << " w_n = 0, w_mean = 0, w_m2 = 0;\n";
    os << ind << "for (int64_t q_block = 0; q_block < n_inner; q_block += " << kWelfordBlock << ") {\n";
    os << in2 << "const int64_t q_end = std::min<int64_t>(q_block + " << kWelfordBlock << ", n_inner);\n";
    auto element = [&](const std::string& in) {
      std::unordered_map<Expr, std::string> names;
      return value(os, in, body, names);
    };
    auto deviation = [&](const std::string& in) {
      std::string v = element(in);
      os << in << "const " << A << " dev = " << v << " - b_mean;\n";
      return std::string("dev * dev");
    };
    // One element deviates by exactly 0; computed again, g++ may take the vector math function in
    // one pass and the scalar one in the other (tanh of a 1-element var's element: 1 ulp apart),
    // and m2 / 0 would then give inf where PyTorch gives nan.
    const std::string m2_begin = "q_end - q_block > 1 ? q_block : q_end";
    if (int lanes = reduction_lanes(); lanes > 1) {
      emit_lanes(os, in2, "b_sum", A, lanes, "q_block", "q_end", LaneOp{}, element);
      os << in2 << "const " << A << " b_n = static_cast<" << A << ">(q_end - q_block);\n";
      os << in2 << "const " << A << " b_mean = b_sum / b_n;\n";
      emit_lanes(os, in2, "b_m2", A, lanes, "(" + m2_begin + ")", "q_end", LaneOp{}, deviation);
    } else {
      os << in2 << A << " b_sum = 0;\n";
      inner_loop_header(os, in2, "#pragma omp simd reduction(+:b_sum)", "q_block", "q_end");
      std::string v = element(in2 + "  ");
      os << in2 << "  b_sum += " << v << ";\n";
      os << in2 << "}\n";
      os << in2 << "const " << A << " b_n = static_cast<" << A << ">(q_end - q_block);\n";
      os << in2 << "const " << A << " b_mean = b_sum / b_n;\n";
      os << in2 << A << " b_m2 = 0;\n";
      inner_loop_header(os, in2, "#pragma omp simd reduction(+:b_m2)", m2_begin, "q_end");
      std::string term = deviation(in2 + "  ");
      os << in2 << "  b_m2 += " << term << ";\n";
      os << in2 << "}\n";
    }
    os << in2 << "const " << A << " w_total = w_n + b_n, w_delta = b_mean - w_mean;\n";
    os << in2 << "w_mean += w_delta * (b_n / w_total);\n";
    os << in2 << "w_m2 += b_m2 + w_delta * w_delta * (w_n * b_n / w_total);\n";
    os << in2 << "w_n = w_total;\n";
    os << ind << "}\n";
    char corr[64];
    std::snprintf(corr, sizeof corr, "%.17g", b->correction);
    os << ind << "const " << A << " divisor = std::max<" << A << ">(" << A << "(0), static_cast<" << A << ">(" << n_red
       << ") - " << A << "(" << corr << "));\n";
    os << ind << store(b, pos, "w_m2 / divisor");
    if (welford_exports_.count(member)) os << ind << "welford_mean" << member << " = w_mean, welford_n" << member << " = w_n;\n";
  }

  // The elements of this kernel's rows where their count is a constant.
  std::optional<int64_t> row_length() const {
    std::optional<int64_t> row = std::optional<int64_t>(1);
    for (SymExpr size : k_.inner) {
      std::optional<int64_t> v = size.as_int();
      row = row && v ? std::optional<int64_t>(*row * *v) : std::nullopt;
    }
    return row;
  }

  // The lanes of a floating sum's, mean's, max's or min's partial results for this kernel's
  // rows: up to $TOROID_CPU_REDUCTION_LANES (64; 1 turns them off), at most half a row, and none
  // for rows shorter than 32 or of a symbolic length (their lanes' set-up and fold would cost
  // more than short rows' serial end). An `omp simd` sum keeps a register or two of partial sums,
  // a chain of dependent adds a step, and ends in one scalar add per lane, in order (32 for two
  // 512-bit registers); lanes give four chains and a pairwise fold (bench/RESULTS.md 31d).
  int reduction_lanes() const {
    int64_t most = std::bit_floor(static_cast<uint64_t>(std::min<int64_t>(env_count("TOROID_CPU_REDUCTION_LANES").value_or(kReductionLanes), 256)));
    std::optional<int64_t> row = row_length();
    if (!row || most <= 1) return 0;
    int64_t lanes = std::min<int64_t>(most, static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(*row / 2))));
    return lanes >= 16 ? static_cast<int>(lanes) : 0;
  }

  // How a reduction combines in lanes: its operator, each lane's starting value (empty: zero), and
  // whether NaNs set a flag of their own (a floating max or min, as nan_tracking_update).
  struct LaneOp {
    ReduceOp op = ReduceOp::Sum;
    std::string init;
    bool tracks_nan = false;
  };

  // `acc` = the reduction over q_flat in [begin, end) of the term that `term` emits (its
  // statements at the indent it is given, its value returned), in `lanes` partial results:
  // blocks of `lanes` elements, each element to the lane of its place in the block (several
  // independent vector chains), the lanes combined pairwise at the end (t_sum_lanes,
  // t_max_lanes, ...), then the last (end - begin) % lanes elements in an `omp simd` reduction.
  // With tracks_nan, `acc`_nan says whether a NaN was seen. `whole_blocks`: end - begin is known
  // to be a multiple of `lanes` (no remainder loop).
  void emit_lanes(std::ostream& os, const std::string& ind, const std::string& acc, const char* A, int lanes,
                  const std::string& begin, const std::string& end, const LaneOp& op,
                  const std::function<std::string(const std::string& in)>& term, bool whole_blocks = false) {
    std::string in2 = ind + "  ", L = std::to_string(lanes), lanes_of = acc + "_lanes", nan_of = acc + "_nan_lanes";
    const char* better = op.op == ReduceOp::Max ? ">" : "<";
    auto update = [&](const std::string& x, const std::string& v) {
      return op.op == ReduceOp::Sum ? x + " += " + v + ";" : x + " = " + v + " " + better + " " + x + " ? " + v + " : " + x + ";";
    };
    os << ind << A << " " << lanes_of << "[" << L << "]" << (op.init.empty() ? " = {}" : "") << ";\n";
    if (!op.init.empty()) os << ind << "t_fill_lanes<" << L << ">(" << lanes_of << ", " << A << "(" << op.init << "));\n";
    if (op.tracks_nan) os << ind << "int " << nan_of << "[" << L << "] = {};\n";
    if (whole_blocks) os << ind << "const int64_t " << acc << "_main = " << end << ";\n";
    else os << ind << "const int64_t " << acc << "_main = " << begin << " + (" << end << " - " << begin << ") / " << L << " * " << L << ";\n";
    os << ind << "for (int64_t q_lanes = " << begin << "; q_lanes < " << acc << "_main; q_lanes += " << L << ") {\n";
    inner_loop_header(os, in2, "#pragma omp simd", "q_lanes", "q_lanes + " + L);
    std::string v = term(in2 + "  ");
    os << in2 << "  " << update(lanes_of + "[q_flat - q_lanes]", v) << "\n";
    if (op.tracks_nan) os << in2 << "  " << nan_of << "[q_flat - q_lanes] |= " << v << " != " << v << ";\n";
    os << in2 << "}\n" << ind << "}\n";
    const char* fold = op.op == ReduceOp::Sum ? "t_sum_lanes" : op.op == ReduceOp::Max ? "t_max_lanes" : "t_min_lanes";
    os << ind << A << " " << acc << " = " << fold << "<" << L << ">(" << lanes_of << ");\n";
    if (op.tracks_nan) os << ind << "int " << acc << "_nan = t_any_lanes<" << L << ">(" << nan_of << ");\n";
    if (whole_blocks) return;
    std::string clause = op.op == ReduceOp::Sum ? "+" : op.op == ReduceOp::Max ? "max" : "min";
    std::string pragma = "#pragma omp simd reduction(" + clause + ":" + acc + ")";
    if (op.tracks_nan) pragma += " reduction(|:" + acc + "_nan)";
    inner_loop_header(os, ind, pragma, acc + "_main", end);
    v = term(ind + "  ");
    os << ind << "  " << update(acc, v) << "\n";
    if (op.tracks_nan) os << ind << "  " << acc << "_nan |= " << v << " != " << v << ";\n";
    os << ind << "}\n";
  }

  // A floating sum's, mean's, max's or min's row result in `acc` (and `acc_nan`), as emit_lanes
  // computes it.
  void emit_lane_reduction(std::ostream& os, const std::string& ind, const sched::Member& m, Expr body, const char* A,
                           int lanes, const LaneOp& op) {
    std::unordered_map<Expr, std::string> hoisted;
    hoist_invariant_loads(os, ind, body, {m.buffer->storage}, hoisted);
    emit_lanes(os, ind, "acc", A, lanes, "0", "n_inner", op, [&](const std::string& in) {
      std::unordered_map<Expr, std::string> names = hoisted;
      std::string v = value(os, in, body, names);
      if (auto cached = row_caches_.find(body); cached != row_caches_.end() && cached->second.filled_by == member_index(m))
        os << in << cached->second.name << "[q_flat] = " << v << ";\n";
      return "static_cast<" + std::string(A) + ">(" + v + ")";
    }, row_length().value_or(1) % lanes == 0);
  }

  // A floating max or min that propagates NaN as PyTorch's does, in a form that vectorizes to one
  // max/min instruction a step: NaNs set a flag of their own (an OR, off the accumulator's chain)
  // instead of a compare-and-blend chain on the accumulator (t_maximum); the flag decides at the end.
  static std::string nan_tracking_update(const std::string& acc, const char* better) {
    return acc + " = V " + better + " " + acc + " ? V : " + acc + "; " + acc + "_nan |= V != V;";
  }

  void emit_reduction(std::ostream& os, const std::string& ind, const sched::Member& m, bool parallel) {
    const Buffer* b = m.buffer;
    Expr body = sched::member_body(m);
    DType d = body.dtype();
    const char* A = acc_type(b->reduce, d);
    std::string acc = "acc";
    std::string init, update, clause;
    switch (b->reduce) {
      case ReduceOp::Sum:
      case ReduceOp::Mean:
        init = "0";
        update = acc + " += static_cast<" + std::string(A) + ">(V);";
        clause = "reduction(+:" + acc + ")";
        break;
      case ReduceOp::Prod:
        init = "1";
        update = acc + " *= static_cast<" + std::string(A) + ">(V);";
        clause = "reduction(*:" + acc + ")";
        break;
      case ReduceOp::Max:
        if (is_floating(d)) {
          init = std::string("-std::numeric_limits<") + A + ">::infinity()";
          update = nan_tracking_update(acc, ">");
          clause = "reduction(max:" + acc + ") reduction(|:" + acc + "_nan)";
        } else {
          init = std::string("std::numeric_limits<") + A + ">::lowest()";
          update = acc + " = std::max(" + acc + ", V);";
          clause = "reduction(max:" + acc + ")";
        }
        break;
      case ReduceOp::Min:
        if (is_floating(d)) {
          init = std::string("std::numeric_limits<") + A + ">::infinity()";
          update = nan_tracking_update(acc, "<");
          clause = "reduction(min:" + acc + ") reduction(|:" + acc + "_nan)";
        } else {
          init = std::string("std::numeric_limits<") + A + ">::max()";
          update = acc + " = std::min(" + acc + ", V);";
          clause = "reduction(min:" + acc + ")";
        }
        break;
      case ReduceOp::Any:
        init = "false";
        update = acc + " = " + acc + " || static_cast<bool>(V);";
        clause = "reduction(||:" + acc + ")";
        break;
      case ReduceOp::All:
        init = "true";
        update = acc + " = " + acc + " && static_cast<bool>(V);";
        clause = "reduction(&&:" + acc + ")";
        break;
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin:
      case ReduceOp::Var:
        break;
    }
    std::string pos = index(sched::member_store_position(m));
    std::string n_red = numel(b->reduction_sizes);
    if (b->reduce == ReduceOp::ArgMax || b->reduce == ReduceOp::ArgMin) {
      bool fp = is_floating(d);
      const char* cmp = b->reduce == ReduceOp::ArgMax ? ">" : "<";
      os << ind << compute_type(d) << " best = " << compute_type(d) << "(); int64_t best_i = 0;\n";
      os << ind << "bool first = true;\n";
      inner_loop_header(os, ind, "");
      std::unordered_map<Expr, std::string> names;
      std::string v = value(os, ind + "  ", body, names);
      os << ind << "  if (first || (" << v << " " << cmp << " best)" << (fp ? " || (" + v + " != " + v + " && best == best)" : "")
         << ") { best = " << v << "; best_i = q_flat; first = false; }\n";
      os << ind << "}\n";
      os << ind << store(b, pos, "best_i");
      return;
    }
    if (b->reduce == ReduceOp::Var) {
      emit_welford(os, ind, b, body, A, pos, n_red, member_index(m));
      return;
    }
    bool lane_form = b->reduce == ReduceOp::Sum || b->reduce == ReduceOp::Mean || b->reduce == ReduceOp::Max ||
                     b->reduce == ReduceOp::Min;
    if (lane_form && is_floating(d) && !parallel && !k_.inner.empty())
      if (int lanes = reduction_lanes(); lanes > 1) {
        LaneOp op;
        if (b->reduce == ReduceOp::Max || b->reduce == ReduceOp::Min) op = {b->reduce, init, true};
        emit_lane_reduction(os, ind, m, body, A, lanes, op);
        std::string total = acc;
        if (op.tracks_nan) total = acc + "_nan ? std::numeric_limits<" + std::string(A) + ">::quiet_NaN() : " + acc;
        if (b->reduce == ReduceOp::Mean) total = acc + " / static_cast<" + std::string(A) + ">(" + n_red + ")";
        os << ind << store(b, pos, total);
        return;
      }
    os << ind << A << " " << acc << " = " << init << ";\n";
    bool tracks_nan = update.find(acc + "_nan") != std::string::npos;
    if (tracks_nan) os << ind << "int " << acc << "_nan = 0;\n";
    std::string pragma = parallel ? "#pragma omp parallel for simd " + clause + " schedule(static)" +
                                        *parallel_clause(k_.inner, "n_inner")
                                  : "#pragma omp simd " + clause;
    std::unordered_map<Expr, std::string> names;
    hoist_invariant_loads(os, ind, body, {b->storage}, names);
    inner_loop_header(os, ind, pragma);
    std::string v = value(os, ind + "  ", body, names);
    if (auto cached = row_caches_.find(body); cached != row_caches_.end() && cached->second.filled_by == member_index(m))
      os << ind << "  " << cached->second.name << "[q_flat] = " << v << ";\n";
    std::string u = update;
    for (size_t at = u.find('V'); at != std::string::npos; at = u.find('V', at + v.size())) u.replace(at, 1, v);
    os << ind << "  " << u << "\n";
    os << ind << "}\n";
    std::string result = acc;
    if (tracks_nan) result = acc + "_nan ? std::numeric_limits<" + std::string(A) + ">::quiet_NaN() : " + acc;
    if (b->reduce == ReduceOp::Mean) result = acc + " / static_cast<" + std::string(A) + ">(" + n_red + ")";
    os << ind << store(b, pos, result);
  }
};

}  // namespace

CppKernel emit_cpp_kernel(const sched::Kernel& kernel, const SymbolSlots& slots, const ShapeEnv& env) {
  return CppEmitter(kernel, slots, env).emit();
}

std::optional<CppKernel> attention_kernel(DType dtype) {
  const char* types = dtype == DType::Float32    ? "float, float"
                      : dtype == DType::Float64  ? "double, double"
                      : dtype == DType::BFloat16 ? "uint16_t, float"
                      : dtype == DType::Float16  ? "_Float16, float"
                                                 : nullptr;
  if (!types) return std::nullopt;
  CppKernel k;
  k.name = k.symbol = std::string("toroid_attention_") + dtype_short_name(dtype);
  k.source = cpp_attention_template() + "extern \"C\" void " + k.name +
             "(char* const* bufs, const int64_t* params) { t_attention<" + types + ">(bufs, params); }\n";
  return k;
}

const std::string& cpp_prelude_headers() {
  static const std::string headers = [] {
    const std::string& text = cpp_prelude();
    size_t last = text.rfind("\n#include ");
    TOROID_CHECK(last != std::string::npos, "the CPU kernel prelude includes no header");
    return text.substr(0, text.find('\n', last + 1) + 1);
  }();
  return headers;
}

}  // namespace toroid::codegen::cpu
