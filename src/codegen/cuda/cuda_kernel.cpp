#include "toroid/codegen/cuda/cuda_kernel.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/kernel_emitter.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"

namespace toroid::codegen::cuda {

using loop::Buffer;
using loop::BufferKind;
using loop::Expr;
using loop::Op;
using loop::ReduceOp;

namespace {

// The type an element of `d` is stored as in device memory.
std::string storage_type(DType d) {
  if (d == DType::BFloat16) return "t_bf16";
  if (d == DType::Float16) return "t_f16";
  return compute_type(d);
}

// A loop over a domain of kernel variables: the flat counter's unravelling and how each access
// moves along the last variable.
struct Domain {
  std::vector<SymExpr> vars, sizes;
  SymExpr last() const { return vars.back(); }
};

// How an access (a load or a member's store) moves with the last variable of a vectorized loop.
struct Access {
  enum class Kind { Contiguous, GroupInvariant, PerLane } kind = Kind::PerLane;
  std::string array;          // Contiguous: the lane array
  std::vector<SymExpr> align;  // Contiguous: values that must be multiples of V for 16-byte access
};

class CudaEmitter : public KernelEmitter {
 public:
  CudaEmitter(const sched::Kernel& k, const SymbolSlots& slots, const ShapeEnv& env) : KernelEmitter(k, slots, env) {}

  CudaKernel emit() {
    CudaKernel out;
    out.name = k_.name;
    collect_args();
    bool flat = sched::is_flat(k_);
    out.shape = flat ? CudaKernel::Shape::Flat : CudaKernel::Shape::Rows;
    vector_width_ = choose_vector_width(!flat);

    std::ostringstream body;
    if (flat) emit_flat(body, out);
    else emit_rows(body, out);

    const std::string layout = flat                      ? "flat"
                               : out.rows_per_block > 1 ? std::to_string(out.row_threads) + " threads a row, up to " + std::to_string(out.rows_per_block) + " rows a block"
                                                        : "one block per row";
    out.comment = header_comment(std::string(" (") + layout + ", " +
                                 std::to_string(vector_width_) + " elements per vector access)");
    std::string params;
    for (size_t i = 0; i < args_.size(); ++i)
      params += (i ? ", " : "") + storage_type(args_[i]->dtype) + "* __restrict__ " + ptr(args_[i]);
    for (const auto& [sym, slot] : used_syms_) params += (params.empty() ? "" : ", ") + std::string("int64_t ") + sym_name(sym) + "_p";
    std::string call;
    for (size_t i = 0; i < args_.size(); ++i) call += (i ? ", " : "") + ptr(args_[i]);
    for (const auto& [sym, slot] : used_syms_) call += (call.empty() ? "" : ", ") + sym_name(sym) + "_p";
    // The block and grid as the body sees them: a combo kernel's part runs on a range of blocks.
    std::ostringstream fn;
    fn << "(" << params << (params.empty() ? "" : ", ") << "const unsigned t_block, const unsigned t_blocks) {\n";
    for (const auto& [sym, slot] : used_syms_)
      fn << "  const I " << sym_name(sym) << " = static_cast<I>(" << sym_name(sym) << "_p);\n";
    fn << body.str() << "}\n";
    out.body = fn.str();
    out.definitions = out.comment + "template <class I>\nstatic __device__ __forceinline__ void " + k_.name + "_body" + out.body;
    for (const char* I : {"int32_t", "int64_t"}) {
      std::ostringstream entry;
      // A block of several rows is 2-D (32 x rows): the body sees each warp as a block of its own.
      const bool warp_rows = !flat && out.rows_per_block > 1;
      entry << "extern \"C\" __global__ void __launch_bounds__("
            << (flat ? 1024 : out.row_threads ? out.row_threads * out.rows_per_block : kRowThreads)
            << (!flat && row_min_blocks_ ? ", " + std::to_string(row_min_blocks_) : std::string()) << ") " << k_.name << "_" << (I[3] == '3' ? "i32" : "i64")
            << "(" << params << ") {\n  t_wait_on_stream();\n" << block_assumptions(flat, out) << "  " << k_.name << "_body<" << I << ">(" << call << (call.empty() ? "" : ", ")
            << (warp_rows ? "blockIdx.x * blockDim.y + threadIdx.y, gridDim.x * blockDim.y" : "blockIdx.x, gridDim.x") << ");\n}\n";
      (I[3] == '3' ? out.entry_i32 : out.entry_i64) = entry.str();
    }
    if (!fits_i32_) out.entry_i32.clear();
    out.source = out.definitions + out.entry_i32 + out.entry_i64;
    for (const Buffer* b : args_) out.args.push_back(b->id), out.arg_types.push_back(storage_type(b->dtype));
    for (const auto& [sym, slot] : used_syms_) out.sym_slots.push_back(slot);
    out.index_sites = sites_;
    out.vector_width = vector_width_;
    out.has_i32 = fits_i32_;
    assign_symbol(out);
    return out;
  }

  // The block shape a row kernel's size is compiled for, as facts the compiler may use: the
  // executor launches it with exactly row_threads x (at most rows_per_block) threads. Without
  // them every slot's bound, and the block reductions' shared-memory path for blocks of more
  // than a warp, stay as runtime branches: softmax over rows of 197 f32 ran 75 us against 67
  // with them on an H200 (bench/RESULTS.md 35a).
  static std::string block_assumptions(bool flat, const CudaKernel& out) {
    if (flat || out.row_threads <= 0) return "";
    const std::string T = std::to_string(out.row_threads), R = std::to_string(out.rows_per_block);
    std::string s = "  __builtin_assume(blockDim.x == " + T + "u);\n  __builtin_assume(threadIdx.x < " + T + "u);\n";
    if (out.rows_per_block > 1) s += "  __builtin_assume(blockDim.y <= " + R + "u);\n  __builtin_assume(threadIdx.y < " + R + "u);\n";
    return s;
  }

  // ScalarDialect: CUDA's math library.
  std::string math(const std::string& fn, DType t) const override {
    bool d = t == DType::Float64;
    if (fn == "sigmoid") return "t_sigmoid";
    if (fn == "max") return "t_imax";
    if (fn == "min") return "t_imin";
    if (fn == "isinf") return "t_isinf";
    if (fn == "abs") return d ? "fabs" : "fabsf";
    if (fn == "nearbyint") return d ? "rint" : "rintf";
    // The hardware exponential (ex2.approx): a few ulp, well inside f32's tolerance, and many
    // times cheaper than expf (softmax and cross-entropy evaluate one per element).
    if (fn == "exp" && !d) return "__expf";
    // The hardware reciprocal square root (rsqrtf, 2 ulp), as eager's and Inductor's CUDA rsqrt
    // (IEEE sqrt and division cost a layer norm 0.1-0.2 us on an H200, bench/RESULTS.md 40b);
    // f64 keeps 1 / sqrt.
    if (fn == "rsqrt") return d ? "" : "rsqrtf";
    return d ? fn : fn + "f";
  }
  std::string float_literal(double v, DType d) const override {
    bool dbl = d == DType::Float64;
    if (std::isnan(v)) return dbl ? "t_nan_d()" : "t_nan_f()";
    if (std::isinf(v)) return std::string("t_limits<") + (dbl ? "double" : "float") + ">::" + (v < 0 ? "lowest()" : "highest()");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(dbl ? "double" : "float") + "(" + buf + ")";
  }
  std::string round_to(const std::string& x, DType to) const override {
    return std::string(to == DType::BFloat16 ? "t_round_bf16" : "t_round_f16") + "(static_cast<float>(" + x + "))";
  }
  std::string load(Expr e) override { return element(e.buffer()->storage, index(e.index())); }
  int64_t error_site(const Node* op, int64_t dim) override { return site_number(sites_, op, dim); }
  // The 64-bit parameter: the body's copy is narrowed to the index type.
  std::string float_symbol(SymExpr s) override { return "t_f64_from_bits(" + name_of(s) + "_p)"; }
  std::string index(SymExpr e) override {
    return index_code(env_.simplify(e), [this](SymExpr s) { return lane_name_of(s); },
                      [this](int64_t v) {
                        if (v >= (int64_t(1) << 31) || v < -(int64_t(1) << 31)) fits_i32_ = false;
                        return "I(" + std::to_string(v) + ")";
                      });
  }

 private:
  int vector_width_ = 1;
  bool fits_i32_ = true;
  // Inside a lane loop: the last variable of the domain reads as its lane's value.
  SymExpr lane_var_;
  // Values of storages already computed for the current element or row (forwarded instead of
  // reloaded): storage -> the name of its value as stored and loaded back.
  std::unordered_map<const Buffer*, std::string> forwarded_;
  // Inside a lane loop: the array collecting each var reduction's lane values (one division per
  // group instead of one per element).
  std::unordered_map<const Buffer*, std::string> welford_lanes_;
  std::unordered_set<const Buffer*> shifted_;  // vars summed as offsets in the current slot loop
  // The slot path of a Rows kernel, taken when the row fits row_slots_ vector groups per thread
  // (slots_ok_ names the row's flag; empty: no such path): each loop first loads every group it
  // will touch, then computes, so a thread has all its loads in flight at once. Read-only loads
  // that several loops of the row read stay in registers (row_cache_, filled by the first loop
  // that reads them), and so do values a loop stores and a later loop reads back at the same
  // position (store_slots_, by storage): the row is read from memory once.
  int row_slots_ = 4;
  // The most threads a row's block has (the executor's cap; the register budget follows).
  static constexpr int kRowThreads = 512;
  // Rows of at least this many vector groups take eight slots a thread instead of four (a row's
  // block keeps 128 threads or more either way).
  static constexpr int64_t kEightSlotGroups = 1024;
  // Rows of at most this many vector groups fit one warp's four slots a thread.
  static constexpr int64_t kShortRowGroups = 128;
  // Short rows (up to 224 groups, seven a lane of a warp): eight slots a thread, a row's threads
  // from a segment of kMinRowThreads lanes up to a warp.
  static constexpr int64_t kShortRowMaxGroups = 224;
  static constexpr int64_t kMinRowThreads = 8;
  // A row's threads when fewer than a warp (a segment of it), else 0.
  int segment_lanes_ = 0;
  // The segment's lane count as a template argument of the prelude's reductions, or nothing.
  std::string segment_arg(const char* before, const char* after) const {
    return segment_lanes_ ? before + std::to_string(segment_lanes_) + after : std::string();
  }
  // Every thread of a row takes the same number of its elements on every path (a constant row
  // length that the compiled-in thread count and vector width divide): Welford merges then weigh
  // equal halves (t_block_welford_even).
  bool even_row_split_ = false;
  std::optional<int64_t> row_elements_;
  // The block's thread count as the row body reads it: a constant where the kernel fixes it.
  std::string block_dim_ = "static_cast<I>(blockDim.x)";
  std::unordered_map<Expr, std::string> row_cache_;
  std::unordered_set<Expr> cache_filled_;
  std::unordered_set<std::string> packed_slots_;  // slot arrays of 16-bit values, as uint4 per group
  // Read-only loads of the row's own values that only later loops read (a residual added after a
  // norm), issued with the first loop's so that their latency overlaps the row's: row_cache_
  // entries the first slot loop fills.
  std::vector<Expr> prefetch_;
  bool prefetched_ = false;
  std::unordered_map<const Buffer*, std::string> store_slots_;
  std::unordered_set<Expr> forwarded_loads_;  // loads read from store_slots_ in the slot path
  std::string slots_ok_;
  // Registers for slot arrays, counted in arrays of row_slots_ x 16 bytes: those kept over the
  // row (caches and store slots), and those of one loop with them (a loop's loads beyond it are
  // read group by group, as on the other path).
  static constexpr size_t kRowArrays = 4, kSlotArrays = 6, kInvariantPrefetchArrays = 3;
  size_t slot_arrays_ = kSlotArrays;  // kSlotArrays, or $TOROID_CUDA_SLOT_ARRAYS (a tuning knob)
  int row_min_blocks_ = 0;            // __launch_bounds__'s blocks per SM ($TOROID_CUDA_ROW_MIN_BLOCKS)
  // A var's slot-path values summed as offsets from the thread's first ($TOROID_CUDA_WELFORD_SHIFTED=0
  // turns it off; read once per kernel, in emit_rows).
  bool welford_shifted_ = true;
  // Sum and mean reductions that a var reduction of the same values in the same loop already
  // computes (a layer norm's mean beside its variance): taken from its Welford result.
  std::unordered_map<const Buffer*, const Buffer*> mean_from_welford_;

  // A load that reads the same positions for every row (a norm's weight and bias): after the
  // first rows it hits in cache, so it takes no slot array of the first loop and is not kept
  // over the row when several loops read it. A later loop's is prefetched with the row's values
  // while the row holds at most kInvariantPrefetchArrays arrays with it: its cache latency then
  // overlaps the row's DRAM reads instead of following the block reduction. On an H200
  // (bench/RESULTS.md 41a) layer norms over 4096 and 768 bf16 (3 arrays) gained 3.4% and 1.5%;
  // an rmsnorm after a residual add (x, residual and the sum, then the weight: 4) lost 1.6%. (A
  // kernel of one row has none: nothing is read again.)
  bool row_invariant(Expr load) const {
    if (k_.outer.empty()) return false;
    for (SymExpr s : env_.simplify(load.index()).free_symbols())
      for (size_t k = 0; k < k_.outer.size(); ++k)
        if (s == sched::outer_var(k)) return false;
    return true;
  }
  bool written(const Buffer* storage) const {
    for (const sched::Member& m : k_.members)
      if (m.buffer->storage == storage) return true;
    return false;
  }
  // Inside a lane loop the last variable reads as its lane's value.
  std::string lane_name_of(SymExpr s) {
    if (lane_var_ && s == lane_var_) return s.symbol().name + "_l";
    return name_of(s);
  }

  std::string numel(const std::vector<SymExpr>& sizes) {
    SymExpr n = SymExpr::integer(1);
    for (SymExpr s : sizes) n = n * s;
    return index(n);
  }
  SymExpr numel_expr(const std::vector<SymExpr>& sizes) const {
    SymExpr n = SymExpr::integer(1);
    for (SymExpr s : sizes) n = n * s;
    return env_.simplify(n);
  }

  std::string element(const Buffer* storage, const std::string& pos) {
    return "t_load(" + ptr(storage) + "[" + pos + "])";
  }
  // A value as it reads back after a store into `storage` (rounded to its dtype).
  std::string stored_value(const Buffer* storage, const std::string& v) const {
    DType d = storage->dtype;
    if (d == DType::BFloat16 || d == DType::Float16) return round_to(v, d);
    return std::string("static_cast<") + compute_type(d) + ">(" + v + ")";
  }
  std::string store(const Buffer* b, const std::string& pos, const std::string& v) const {
    const Buffer* s = b->storage;
    return ptr(s) + "[" + pos + "] = t_store<" + storage_type(s->dtype) + ">::from(" + v + ");\n";
  }

  // 16 bytes of the narrowest dtype a group, at most 8 elements; at most 2 where a value is f64
  // or complex (16 bytes of f64): f64 math is long inline code, and 8 copies of it per slot and loop made
  // ptxas take minutes on a softmax whose result is also cast to bool.
  int choose_vector_width(bool rows) const {
    int smallest = 16;
    bool any = false, f64 = false;
    auto see = [&](DType d) {
      smallest = std::min(smallest, dtype_size(d));
      f64 = f64 || d == DType::Float64 || is_complex(d);
    };
    for (const sched::Member& m : k_.members) {
      see(m.buffer->storage->dtype);
      see(sched::member_body(m).dtype());
      any = true;
      for (Expr l : loop::loads(m.buffer->body)) see(l.buffer()->storage->dtype);
    }
    if (!any || (k_.outer.empty() && k_.inner.empty())) return 1;
    int width = std::min(f64 ? 2 : 8, 16 / smallest);
    // A short row whose length the width does not divide starts aligned only every few rows (a
    // row of 49 f32: one in four), and the others took the scalar path that reads the row again
    // for every pass: such rows get the widest access that divides their length.
    std::optional<int64_t> row = numel_expr(k_.inner).as_int();
    if (rows && row && *row > 0 && *row <= kShortRowGroups * width)
      while (*row % width != 0) width /= 2;
    return width;
  }

  // Declarations of the domain variables from the flat counter `flat`.
  void unravel(std::ostream& os, const std::string& ind, const Domain& d, const std::string& flat) {
    std::string rest = flat;
    for (size_t k = d.vars.size(); k-- > 0;) {
      std::string v = d.vars[k].symbol().name;
      if (k == 0) {
        os << ind << "const I " << v << " = " << rest << ";\n";
      } else {
        std::string s = index(d.sizes[k]);
        os << ind << "const I " << v << " = " << rest << " % " << s << ";\n";
        rest = "(" + rest + " / " + s + ")";
      }
    }
  }

  // Checks each position (recording an error and reading nothing when one is out of range),
  // then loads.
  std::string indirect_load_expr(std::ostream& os, const std::string& ind, Expr e,
                                 std::unordered_map<Expr, std::string>& names) {
    std::function<std::string()> fresh = [&] { return tmp(); };
    std::function<std::string(size_t)> operand = [&](size_t k) { return names.at(e.operand(k)); };
    std::function<std::string(const std::string&)> element_at = [&](const std::string& at) {
      return element(e.buffer()->storage, at);
    };
    return indirect_load_code(e, {os, ind, *this, sites_, fresh, operand, element_at, "I"});
  }

  // SSA statements for `root`; returns the name of its value.
  std::string value(std::ostream& os, const std::string& ind, Expr root, std::unordered_map<Expr, std::string>& names) {
    for (Expr l : loop::loads(root)) {
      auto it = forwarded_.find(l.buffer()->storage);
      if (l.op() == Op::Load && it != forwarded_.end()) names.emplace(l, it->second);
    }
    loop::visit(root, [&](Expr e) {
      if (names.count(e)) return;
      std::string v = e.op() == Op::IndirectLoad
                          ? indirect_load_expr(os, ind, e, names)
                          : scalar_expr(e, [&](size_t i) { return names.at(e.operand(i)); }, *this);
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

  // How much simplified `position` grows when `var` grows by 1.
  SymExpr step_along(SymExpr position, SymExpr var) const {
    return env_.simplify(
        sym::substitute(position, [&](SymExpr s) { return s == var ? s + SymExpr::integer(1) : s; }) - position);
  }

  // How `position` (a storage position in kernel variables) moves along the domain's last variable.
  Access classify(SymExpr position, const Domain& d) const {
    Access a;
    SymExpr p = env_.simplify(position);
    auto depends = [&](SymExpr e, SymExpr var) {
      for (SymExpr s : e.free_symbols())
        if (s == var) return true;
      return false;
    };
    if (!depends(p, d.last())) {
      a.kind = Access::Kind::GroupInvariant;
      return a;
    }
    auto step = [&](SymExpr var) { return step_along(p, var); };
    if (step(d.last()) != SymExpr::integer(1)) return a;
    for (SymExpr v : d.vars) {
      SymExpr c = step(v);
      for (SymExpr dv : d.vars)
        if (depends(c, dv)) return a;  // not affine
      if (v != d.last()) a.align.push_back(c);
    }
    a.align.push_back(env_.simplify(sym::substitute(p, [&](SymExpr s) {
      for (SymExpr v : d.vars)
        if (s == v) return SymExpr::integer(0);
      return s;
    })));
    a.kind = Access::Kind::Contiguous;
    return a;
  }

  // A loop over `d` from `start` by `step`, running `group` (members of this kernel) for each
  // element: vectorized when V > 1 and the run-time checks pass, with a scalar path and tail.
  // Reductions accumulate into their per-thread partials (declared by the caller).
  void emit_loop(std::ostream& os, const std::string& ind, const Domain& d, const std::string& start,
                 const std::string& step, const std::vector<const sched::Member*>& group,
                 const std::unordered_map<const Buffer*, std::string>& partials) {
    const int V = vector_width_;
    std::string in2 = ind + "  ", in3 = in2 + "  ", in4 = in3 + "  ";
    std::string n = tmp();
    os << ind << "{\n" << in2 << "const I " << n << " = " << numel(d.sizes) << ";\n";
    // Loads that do not move in this loop are read once, before it (when it runs at all).
    std::unordered_map<Expr, std::string> hoisted;
    std::unordered_set<const Buffer*> own;  // storages this group writes: never hoisted or vector-read
    for (const sched::Member* m : group) own.insert(m->buffer->storage);
    for (const sched::Member* m : group)
      for (Expr l : loop::loads(sched::member_body(*m))) {
        if (l.op() != Op::Load || hoisted.count(l) || own.count(l.buffer()->storage) || forwarded_.count(l.buffer()->storage))
          continue;
        bool moves = false;
        for (SymExpr s : env_.simplify(l.index()).free_symbols())
          for (SymExpr v : d.vars) moves = moves || s == v;
        if (moves) continue;
        std::string t = tmp();
        const char* T = compute_type(l.dtype());
        os << in2 << "const " << T << " " << t << " = " << n << " > 0 ? " << T << "(" << load(l) << ") : " << T << "();\n";
        hoisted[l] = t;
      }
    hoist_invariant_arithmetic(os, in2, d, group, hoisted);
    std::string done = tmp();
    os << in2 << "I " << done << " = 0;\n";
    if (V > 1 || !slots_ok_.empty()) emit_vector_loop(os, in2, d, n, done, start, step, group, partials, hoisted);
    // The scalar path (and the tail of a vectorized 1-D loop).
    std::string f = tmp();
    os << in2 << "for (I " << f << " = " << done << " + " << start << "; " << f << " < " << n << "; " << f << " += " << step << ") {\n";
    unravel(os, in3, d, f);
    std::unordered_map<Expr, std::string> names = hoisted;
    auto saved = forwarded_;
    for (const sched::Member* m : group) {
      std::string v = value(os, in3, sched::member_body(*m), names);
      finish_element(os, in3, *m, v, f, partials, index(sched::member_store_position(*m)));
    }
    forwarded_ = saved;
    os << in2 << "}\n" << ind << "}\n";
  }

  // Arithmetic on values that do not move in this loop (a row's rsqrt(var + eps), a scale) is
  // computed once, before it: the compiler does not hoist IEEE division and square root out of
  // a loop that may run zero times.
  void hoist_invariant_arithmetic(std::ostream& os, const std::string& ind, const Domain& d,
                                  const std::vector<const sched::Member*>& group,
                                  std::unordered_map<Expr, std::string>& hoisted) {
    std::unordered_set<Expr> invariant;
    auto moves = [&](SymExpr index) {
      for (SymExpr s : env_.simplify(index).free_symbols())
        for (SymExpr v : d.vars)
          if (s == v) return true;
      return false;
    };
    for (const sched::Member* m : group) {
      loop::visit(sched::member_body(*m), [&](Expr e) {
        bool inv = false;
        switch (e.op()) {
          case Op::Load: inv = hoisted.count(e) || forwarded_.count(e.buffer()->storage); break;
          case Op::Const: inv = true; break;
          case Op::Index: inv = !moves(e.index()); break;
          case Op::IndirectLoad: break;
          default: {
            inv = true;
            for (Expr o : e.operands()) inv = inv && invariant.count(o);
          }
        }
        if (!inv) return;
        invariant.insert(e);
        if (e.op() != Op::Load && e.op() != Op::Const && !hoisted.count(e)) value(os, ind, e, hoisted);
      });
    }
  }

  // After an element's value `v` of member m: the store (pointwise) or the partial's update.
  void finish_element(std::ostream& os, const std::string& ind, const sched::Member& m, const std::string& v,
                      const std::string& flat, const std::unordered_map<const Buffer*, std::string>& partials,
                      const std::string& pos) {
    const Buffer* b = m.buffer;
    if (b->kind == BufferKind::Pointwise) {
      if (!pos.empty()) os << ind << store(b, pos, v);
      forwarded_[b->storage] = stored_value(b->storage, v);
      return;
    }
    if (mean_from_welford_.count(b)) return;
    const std::string& acc = partials.at(b);
    DType d = sched::member_body(m).dtype();
    std::string A = acc_type(b->reduce, d);
    std::string x = "static_cast<" + A + ">(" + v + ")";
    switch (b->reduce) {
      case ReduceOp::Sum:
      case ReduceOp::Mean: os << ind << acc << " += " << x << ";\n"; break;
      case ReduceOp::Prod: os << ind << acc << " *= " << x << ";\n"; break;
      case ReduceOp::Max: os << ind << acc << " = " << (is_floating(d) ? "t_maximum" : "t_imax") << "(" << acc << ", " << x << ");\n"; break;
      case ReduceOp::Min: os << ind << acc << " = " << (is_floating(d) ? "t_minimum" : "t_imin") << "(" << acc << ", " << x << ");\n"; break;
      case ReduceOp::Any: os << ind << acc << " = " << acc << " || static_cast<bool>(" << v << ");\n"; break;
      case ReduceOp::All: os << ind << acc << " = " << acc << " && static_cast<bool>(" << v << ");\n"; break;
      case ReduceOp::Var:
        if (auto it = welford_lanes_.find(b); it != welford_lanes_.end())
          os << ind << it->second << "[j] = " << x << ";\n";  // merged once per group, after the lanes
        else
          os << ind << acc << " = t_welford_add(" << acc << ", " << x << ");\n";
        break;
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin:
        os << ind << acc << " = t_arg_pick<" << compute_type(d) << ", " << (b->reduce == ReduceOp::ArgMax ? "true" : "false")
           << ">(" << acc << ", t_arg<" << compute_type(d) << ">{" << v << ", static_cast<int64_t>(" << flat << "), true});\n";
        break;
    }
  }

  // How a loop group's accesses vectorize: the loads (first-use order) and stores, classified,
  // and the run-time condition for 16-byte access.
  struct VectorPlan {
    std::vector<std::pair<Expr, Access>> loads;
    std::vector<Access> stores;  // per member (pointwise ones)
    std::string cond;
  };

  VectorPlan plan_vector(const Domain& d, const std::vector<const sched::Member*>& group,
                         const std::unordered_map<Expr, std::string>& hoisted) {
    const std::string Vs = std::to_string(vector_width_);
    std::unordered_set<const Buffer*> own;
    for (const sched::Member* m : group) own.insert(m->buffer->storage);
    VectorPlan p;
    std::unordered_set<Expr> seen;
    for (const sched::Member* m : group)
      for (Expr l : loop::loads(sched::member_body(*m))) {
        if (l.op() != Op::Load || hoisted.count(l) || own.count(l.buffer()->storage) || forwarded_.count(l.buffer()->storage) ||
            !seen.insert(l).second)
          continue;
        p.loads.emplace_back(l, classify(l.index(), d));
      }
    for (const sched::Member* m : group)
      p.stores.push_back(m->buffer->kind == BufferKind::Pointwise ? classify(sched::member_store_position(*m), d) : Access{});
    // Whole groups along the last dim, aligned contiguous accesses.
    // (A width of 1 only serves the slot path: its accesses need no alignment.)
    p.cond = vector_width_ > 1 ? Vs + " > 1" : "true";
    if (d.vars.size() > 1 && vector_width_ > 1) p.cond += " && " + index(d.sizes.back()) + " % " + Vs + " == 0";
    auto add_align = [&](const Access& a, const Buffer* storage) {
      if (a.kind != Access::Kind::Contiguous || vector_width_ == 1) return;
      for (SymExpr e : a.align)
        if (e.as_int() != std::optional<int64_t>(0)) p.cond += " && (" + index(e) + ") % " + Vs + " == 0";
      p.cond += " && t_aligned16(" + ptr(storage) + ")";
    };
    for (auto& [l, a] : p.loads) add_align(a, l.buffer()->storage);
    for (size_t i = 0; i < group.size(); ++i) add_align(p.stores[i], group[i]->buffer->storage);
    return p;
  }

  void emit_vector_loop(std::ostream& os, const std::string& ind, const Domain& d, const std::string& n,
                        const std::string& done, const std::string& start, const std::string& step,
                        const std::vector<const sched::Member*>& group,
                        const std::unordered_map<const Buffer*, std::string>& partials,
                        const std::unordered_map<Expr, std::string>& hoisted) {
    const std::string Vs = std::to_string(vector_width_);
    std::string in2 = ind + "  ";
    VectorPlan plan = plan_vector(d, group, hoisted);
    std::string groups = tmp();
    if (!slots_ok_.empty()) {
      os << ind << "if (" << slots_ok_ << ") {\n";
      os << in2 << "const I " << groups << " = " << n << " / " << Vs << ";\n";
      emit_slot_loop(os, in2, d, groups, start, step, group, partials, hoisted, plan);
      os << in2 << done << " = " << groups << " * " << Vs << ";\n";
      if (vector_width_ == 1) {  // off the slot path, the scalar loop is the only one
        os << ind << "}\n";
        return;
      }
      os << ind << "} else ";
    } else {
      os << ind;
    }
    os << "if (" << plan.cond << ") {\n";
    std::string g = tmp();
    os << in2 << "const I " << groups << " = " << n << " / " << Vs << ";\n";
    os << in2 << "for (I " << g << " = " << start << "; " << g << " < " << groups << "; " << g << " += " << step << ") {\n";
    emit_vector_group(os, in2 + "  ", d, g, group, partials, hoisted, plan, nullptr);
    os << in2 << "}\n";
    os << in2 << done << " = " << groups << " * " << Vs << ";\n";
    os << ind << "}\n";
  }

  // A slot array for row_slots_ groups of `dtype` (16-bit values packed, two to a register).
  std::string declare_slot(std::ostream& os, const std::string& ind, DType dtype) {
    std::string c = tmp();
    if (dtype_size(dtype) == 2 && vector_width_ == 8) {
      os << ind << "uint4 " << c << "[" << row_slots_ << "];\n";
      packed_slots_.insert(c);
    } else {
      os << ind << storage_type(dtype) << " " << c << "[" << row_slots_ << "][" << vector_width_ << "];\n";
    }
    return c;
  }
  // Lane j of slot k of `slot`, as stored (a `T`).
  std::string slot_lane(const std::string& slot, DType dtype) const {
    if (packed_slots_.count(slot)) return std::string("t_slot_get<") + storage_type(dtype) + ">(" + slot + "[k], j)";
    return slot + "[k][j]";
  }
  // Lane j of a group's store: into its array, or into slot k of its store slot.
  void store_lane(std::ostream& os, const std::string& ind, const std::string& array, bool in_slot, DType dtype,
                  const std::string& v) const {
    std::string value = std::string("t_store<") + storage_type(dtype) + ">::from(" + v + ")";
    if (in_slot && packed_slots_.count(array)) os << ind << "t_slot_set(" << array << "[k], j, " << value << ");\n";
    else os << ind << array << (in_slot ? "[k][j]" : "[j]") << " = " << value << ";\n";
  }

  // A loop on the slot path: the loads of every group this thread takes (at most row_slots_),
  // then the groups' arithmetic and stores.
  void emit_slot_loop(std::ostream& os, const std::string& ind, const Domain& d, const std::string& groups,
                      const std::string& start, const std::string& step, const std::vector<const sched::Member*>& group,
                      const std::unordered_map<const Buffer*, std::string>& partials,
                      const std::unordered_map<Expr, std::string>& hoisted, const VectorPlan& plan) {
    const std::string Vs = std::to_string(vector_width_), K = std::to_string(row_slots_);
    std::unordered_map<Expr, std::string> slotted;      // load -> its slot array
    std::vector<std::pair<Expr, std::string>> to_load;  // read in the first phase
    size_t arrays = row_cache_.size() + store_slots_.size();
    for (auto& [l, a] : plan.loads) {
      if (a.kind != Access::Kind::Contiguous) continue;
      if (forwarded_loads_.count(l)) {
        slotted[l] = store_slots_.at(l.buffer()->storage);
        continue;
      }
      if (auto it = row_cache_.find(l); it != row_cache_.end()) {
        slotted[l] = it->second;
        if (cache_filled_.insert(l).second) to_load.emplace_back(l, it->second);
        continue;
      }
      // Read group by group, in the second phase.
      if (arrays >= slot_arrays_ || row_invariant(l)) continue;
      ++arrays;
      std::string t = declare_slot(os, ind, l.buffer()->storage->dtype);
      slotted[l] = t;
      to_load.emplace_back(l, t);
    }
    if (!prefetched_) {
      prefetched_ = true;
      for (Expr l : prefetch_)
        if (cache_filled_.insert(l).second) to_load.emplace_back(l, row_cache_.at(l));
    }
    const std::string in2 = ind + "  ", in3 = in2 + "  ";
    auto each_group = [&](auto&& body) {
      std::string g = tmp();
      os << ind << "#pragma unroll\n" << ind << "for (int k = 0; k < " << K << "; ++k) {\n";
      os << in2 << "const I " << g << " = " << start << " + static_cast<I>(k) * " << step << ";\n";
      os << in2 << "if (" << g << " < " << groups << ") {\n";
      body(g);
      os << in2 << "}\n" << ind << "}\n";
    };
    if (!to_load.empty())
      each_group([&](const std::string& g) {
        std::string f0 = tmp();
        os << in3 << "const I " << f0 << " = " << g << " * " << Vs << ";\n";
        unravel(os, in3, d, f0);
        for (auto& [l, arr] : to_load) {
          const char* nc = written(l.buffer()->storage) ? "false" : "true";
          if (packed_slots_.count(arr)) os << in3 << "t_vload_slot<" << nc << ">(";
          else os << in3 << "t_vload<" << Vs << ", " << nc << ">(";
          os << arr << "[k], " << ptr(l.buffer()->storage) << " + " << index(l.index()) << ");\n";
        }
      });
    // A var's values summed as offsets from the thread's first value, its partial made once after
    // the loop: ~3 operations a value where a group's two-pass statistics and merge take ~5
    // (layer_norm over 4096 bf16 on an H200: 90.2% of the copy bandwidth against 89.6-90.0%,
    // bench/RESULTS.md 38a).
    std::vector<const Buffer*> shifted;
    if (welford_shifted_)
      for (const sched::Member* m : group)
        if (m->buffer->kind == BufferKind::Reduction && m->buffer->reduce == ReduceOp::Var && partials.count(m->buffer)) {
          const std::string& p = partials.at(m->buffer);
          os << ind << acc_type(ReduceOp::Var, sched::member_body(*m).dtype()) << " " << p << "_k = 0, " << p << "_s1 = 0, " << p
             << "_s2 = 0, " << p << "_n = 0;\n";
          shifted.push_back(m->buffer);
          shifted_.insert(m->buffer);
        }
    each_group([&](const std::string& g) { emit_vector_group(os, in3, d, g, group, partials, hoisted, plan, &slotted); });
    for (const Buffer* b : shifted) {
      const std::string& p = partials.at(b);
      os << ind << p << " = t_welford_merge(" << p << ", t_welford_from_shift(" << p << "_n, " << p << "_k, " << p << "_s1, " << p
         << "_s2));\n";
      shifted_.erase(b);
    }
  }

  // One group of V elements starting at group index `g`. On the slot path (`slotted`), the loads
  // it names were read into their arrays' slot k before, and stores that a later loop reads back
  // go through their store slot.
  void emit_vector_group(std::ostream& os, const std::string& ind, const Domain& d, const std::string& g,
                         const std::vector<const sched::Member*>& group,
                         const std::unordered_map<const Buffer*, std::string>& partials,
                         const std::unordered_map<Expr, std::string>& hoisted, const VectorPlan& plan,
                         const std::unordered_map<Expr, std::string>* slotted) {
    const std::string Vs = std::to_string(vector_width_);
    std::string in2 = ind + "  ";
    std::string f0 = tmp();
    os << ind << "const I " << f0 << " = " << g << " * " << Vs << ";\n";
    unravel(os, ind, d, f0);
    std::unordered_map<Expr, std::string> names = hoisted;
    for (auto& [l, a] : plan.loads) {
      if (a.kind == Access::Kind::PerLane) continue;
      const Buffer* s = l.buffer()->storage;
      if (a.kind == Access::Kind::GroupInvariant) {
        std::string t = tmp();
        const char* T = compute_type(l.dtype());
        os << ind << "const " << T << " " << t << " = " << load(l) << ";\n";
        names[l] = t;
        continue;
      }
      if (slotted && slotted->count(l)) {
        names[l] = "t_load(" + slot_lane(slotted->at(l), s->dtype) + ")";
        continue;
      }
      std::string t = tmp();
      os << ind << storage_type(s->dtype) << " " << t << "[" << Vs << "];\n";
      os << ind << "t_vload<" << Vs << ", " << (written(s) ? "false" : "true") << ">(" << t << ", " << ptr(s) << " + "
         << index(l.index()) << ");\n";
      names[l] = "t_load(" + t + "[j])";
    }
    std::vector<std::string> arrays(group.size());
    for (size_t i = 0; i < group.size(); ++i)
      if (plan.stores[i].kind == Access::Kind::Contiguous && slotted && store_slots_.count(group[i]->buffer->storage)) {
        arrays[i] = store_slots_.at(group[i]->buffer->storage);
      } else if (plan.stores[i].kind == Access::Kind::Contiguous) {
        arrays[i] = tmp();
        os << ind << storage_type(group[i]->buffer->storage->dtype) << " " << arrays[i] << "[" << Vs << "];\n";
      }
    for (const sched::Member* m : group)
      if (m->buffer->kind == BufferKind::Reduction && m->buffer->reduce == ReduceOp::Var) {
        std::string arr = tmp();
        os << ind << acc_type(ReduceOp::Var, sched::member_body(*m).dtype()) << " " << arr << "[" << Vs << "];\n";
        welford_lanes_[m->buffer] = arr;
      }
    os << ind << "#pragma unroll\n" << ind << "for (int j = 0; j < " << Vs << "; ++j) {\n";
    os << in2 << "const I " << d.last().symbol().name << "_l = " << d.last().symbol().name << " + j;\n";
    os << in2 << "(void)" << d.last().symbol().name << "_l;\n";
    lane_var_ = d.last();
    auto saved = forwarded_;
    for (size_t i = 0; i < group.size(); ++i) {
      const sched::Member& m = *group[i];
      std::string v = value(os, in2, sched::member_body(m), names);
      std::string pos;
      if (m.buffer->kind == BufferKind::Pointwise && plan.stores[i].kind == Access::Kind::Contiguous)
        store_lane(os, in2, arrays[i], slotted && store_slots_.count(m.buffer->storage), m.buffer->storage->dtype, v);
      else if (m.buffer->kind == BufferKind::Pointwise)
        pos = index(sched::member_store_position(m));
      finish_element(os, in2, m, v, f0 + " + j", partials, pos);
    }
    forwarded_ = saved;
    lane_var_ = SymExpr();
    os << ind << "}\n";
    for (auto& [b, arr] : welford_lanes_) {
      const std::string& p = partials.at(b);
      if (slotted && shifted_.count(b))
        os << ind << "t_shift_add_group(" << p << "_k, " << p << "_s1, " << p << "_s2, " << p << "_n, " << arr << ", k);\n";
      else
        os << ind << p << " = t_welford_add_group(" << p << ", " << arr << ");\n";
    }
    welford_lanes_.clear();
    for (size_t i = 0; i < group.size(); ++i)
      if (!arrays[i].empty()) {
        const Buffer* st = group[i]->buffer->storage;
        bool in_slot = slotted && store_slots_.count(st);
        os << ind << (in_slot && packed_slots_.count(arrays[i]) ? "t_vstore_slot(" : "t_vstore<" + Vs + ">(") << ptr(st)
           << " + " << index(sched::member_store_position(*group[i])) << ", " << arrays[i] << (in_slot ? "[k]" : "")
           << ");\n";
      }
  }

  // The flat domain walked in the first stored buffer's memory order at its innermost: the
  // variable its position steps by 1 with comes last, so that neighbouring threads (and a
  // thread's vector group) touch neighbouring elements. A channels-last result (strides
  // [HWC, 1, WC, C]) walked as n, c, h, w had every access C elements apart.
  void innermost_unit_stride(Domain& d) const {
    const sched::Member* first = nullptr;
    for (const sched::Member& m : k_.members)
      if (m.buffer->kind == BufferKind::Pointwise) {
        first = &m;
        break;
      }
    if (!first || d.vars.size() < 2) return;
    SymExpr p = env_.simplify(sched::member_store_position(*first));
    if (step_along(p, d.vars.back()) == SymExpr::integer(1)) return;
    for (size_t k = d.vars.size() - 1; k-- > 0;)
      if (step_along(p, d.vars[k]) == SymExpr::integer(1)) {
        std::rotate(d.vars.begin() + static_cast<std::ptrdiff_t>(k), d.vars.begin() + static_cast<std::ptrdiff_t>(k) + 1, d.vars.end());
        std::rotate(d.sizes.begin() + static_cast<std::ptrdiff_t>(k), d.sizes.begin() + static_cast<std::ptrdiff_t>(k) + 1, d.sizes.end());
        return;
      }
  }

  void emit_flat(std::ostream& os, CudaKernel& out) {
    Domain d;
    for (size_t k = 0; k < k_.outer.size(); ++k) d.vars.push_back(sched::outer_var(k)), d.sizes.push_back(k_.outer[k]);
    for (size_t k = 0; k < k_.inner.size(); ++k) d.vars.push_back(sched::inner_var(k)), d.sizes.push_back(k_.inner[k]);
    innermost_unit_stride(d);
    std::vector<SymExpr> all = k_.outer;
    all.insert(all.end(), k_.inner.begin(), k_.inner.end());
    out.rows = SymExpr::integer(1);
    out.elements = numel_expr(all);
    std::vector<const sched::Member*> group;
    for (const sched::Member& m : k_.members) group.push_back(&m);
    if (d.vars.empty()) {  // a 0-dim result: one element
      os << "  if (t_block != 0 || threadIdx.x != 0) return;\n";
      std::unordered_map<Expr, std::string> names;
      for (const sched::Member* m : group) {
        std::string v = value(os, "  ", sched::member_body(*m), names);
        finish_element(os, "  ", *m, v, "0", {}, index(sched::member_store_position(*m)));
      }
      vector_width_ = 1;
      return;
    }
    emit_loop(os, "  ", d, "static_cast<I>(t_block) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x)",
              "static_cast<I>(t_blocks) * static_cast<I>(blockDim.x)", group, {});
  }

  // A row of the outer domain per block; members in order, consecutive inner ones sharing a loop.
  void emit_rows(std::ostream& os, CudaKernel& out) {
    out.rows = numel_expr(k_.outer);
    out.elements = numel_expr(k_.inner);
    // Four groups in flight per thread; rows known to have 1024 groups or more get eight (half
    // the threads): on an H200 softmax over 8192 f32 went from 84% to 93% of the copy bandwidth,
    // rmsnorm over 4096 f32 stayed at 94% (bench/RESULTS.md 25d). A layer norm over 4096 bf16
    // (512 groups) ran at 88% with four slots and 84% with eight once its weight and bias were
    // read group by group (26a): 64 threads a row leave too few warps to hide the row's syncs.
    std::optional<int64_t> row_elements = out.elements.as_int();
    const int64_t groups = row_elements ? (*row_elements + vector_width_ - 1) / vector_width_ : 0;
    // Short rows take eight slots and as few threads as that leaves, down to a segment of
    // eight lanes, several rows a block. On an H200 (bench/RESULTS.md 30a) a row of 49 f32
    // (swin's attention) went from 15% of the copy bandwidth with a warp-sized block a row to
    // 57%, layer norms over 768 from 82-88% to 91-93%; rows of 256 groups (softmax over 1024
    // f32) lost 3% against 64 threads a row, so they stay out.
    const bool short_rows = row_elements && !k_.outer.empty() && groups > 0 && groups <= kShortRowMaxGroups;
    row_slots_ = short_rows || (row_elements && *row_elements >= kEightSlotGroups * vector_width_) ? 8 : 4;
    if (std::optional<int64_t> tuned = env_count("TOROID_CUDA_ROW_SLOTS")) row_slots_ = static_cast<int>(std::clamp<int64_t>(*tuned, 1, 16));
    if (std::optional<int64_t> tuned = env_count("TOROID_CUDA_SLOT_ARRAYS"))
      slot_arrays_ = static_cast<size_t>(std::clamp<int64_t>(*tuned, 1, static_cast<int64_t>(kSlotArrays)));
    if (std::optional<int64_t> tuned = env_count("TOROID_CUDA_ROW_MIN_BLOCKS"))
      row_min_blocks_ = static_cast<int>(std::clamp<int64_t>(*tuned, 1, 32));
    welford_shifted_ = env_flag("TOROID_CUDA_WELFORD_SHIFTED").value_or(true);
    // A row of known length that fits the slots gets a block size of its own, compiled in: the
    // groups' offsets are constants and the launch bound tells the compiler the thread count.
    if (groups > 0) {
      int64_t threads = short_rows ? kMinRowThreads : 32;
      if (std::optional<int64_t> tuned = env_count("TOROID_CUDA_ROW_MIN_THREADS"); tuned && !k_.outer.empty())
        threads = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::clamp<int64_t>(*tuned, 1, 32))));
      while (threads * row_slots_ < groups && threads < kRowThreads) threads *= 2;
      if (threads * row_slots_ >= groups) {
        out.row_threads = static_cast<int>(threads);
        block_dim_ = "I(" + std::to_string(threads) + ")";
        row_elements_ = row_elements;
        even_row_split_ = *row_elements % vector_width_ == 0 && (*row_elements / vector_width_) % threads == 0 &&
                          env_flag("TOROID_CUDA_WELFORD_EVEN").value_or(true);
        if (threads < 32) segment_lanes_ = static_cast<int>(threads);
        // Rows of a warp or less share a block of threads x R: at least a warp, eight rows, and
        // 128 threads ($TOROID_CUDA_ROWS_PER_BLOCK sets R). A block a row of 32 threads leaves
        // a multiprocessor half its warps (32 blocks at most).
        if (threads <= 32 && !k_.outer.empty()) {
          int64_t rows = env_count("TOROID_CUDA_ROWS_PER_BLOCK").value_or(std::max<int64_t>(8, 128 / threads));
          rows = std::max<int64_t>(rows, 32 / threads);
          out.rows_per_block = static_cast<int>(std::bit_floor(static_cast<uint64_t>(std::clamp<int64_t>(rows, 1, kRowThreads / threads))));
        }
      }
    }
    Domain outer, inner;
    for (size_t k = 0; k < k_.outer.size(); ++k) outer.vars.push_back(sched::outer_var(k)), outer.sizes.push_back(k_.outer[k]);
    for (size_t k = 0; k < k_.inner.size(); ++k) inner.vars.push_back(sched::inner_var(k)), inner.sizes.push_back(k_.inner[k]);
    std::string ind = "  ";
    if (!outer.vars.empty()) {
      os << ind << "const I n_rows = " << numel(outer.sizes) << ";\n";
      // The half of each block reduction's shared partials this row uses (see t_block_reduce).
      os << ind << "unsigned t_half = 16u;\n";
      os << ind << "for (I row = t_block; row < n_rows; row += t_blocks) {\n";
      ind += "  ";
      os << ind << "t_half ^= 16u;\n";
      unravel(os, ind, outer, "row");
    } else {
      os << ind << "if (t_block == 0) {\n";
      ind += "  ";
      os << ind << "const unsigned t_half = 0u;\n";
    }
    // Items in order: an outer-level member, or a loop group (consecutive inner members, none
    // reading a reduction of the same group).
    std::vector<std::vector<const sched::Member*>> items;
    size_t i = 0;
    while (i < k_.members.size()) {
      const sched::Member& m = k_.members[i];
      if (!m.inner && m.buffer->kind == BufferKind::Pointwise) {
        items.push_back({&m});
        ++i;
        continue;
      }
      std::vector<const sched::Member*> group;
      std::unordered_set<const Buffer*> reductions;
      while (i < k_.members.size()) {
        const sched::Member& x = k_.members[i];
        if (!x.inner && x.buffer->kind == BufferKind::Pointwise) break;
        bool reads_group_reduction = false;
        for (Expr l : loop::loads(x.buffer->body)) reads_group_reduction = reads_group_reduction || reductions.count(l.buffer()->storage);
        if (reads_group_reduction) break;
        if (x.buffer->kind == BufferKind::Reduction) reductions.insert(x.buffer->storage);
        group.push_back(&x);
        ++i;
      }
      items.push_back(std::move(group));
    }
    auto is_loop = [](const std::vector<const sched::Member*>& item) {
      return item[0]->inner || item[0]->buffer->kind == BufferKind::Reduction;
    };
    plan_row_slots(os, ind, inner, items, is_loop);
    out.row_slots = slots_ok_.empty() ? 0 : row_slots_;
    std::unordered_set<const Buffer*> inner_written;  // by earlier loops of this row
    for (const auto& item : items) {
      if (!is_loop(item)) {
        emit_outer_member(os, ind, *item[0]);
        continue;
      }
      bool reads_earlier = false, all_in_slots = true;
      for (const sched::Member* x : item)
        for (Expr l : loop::loads(sched::member_body(*x)))
          if (inner_written.count(l.buffer()->storage)) {
            reads_earlier = true;
            all_in_slots = all_in_slots && l.op() == Op::Load && forwarded_loads_.count(l);
          }
      // On the slot path a thread reads back only what it stored itself (its groups, and the
      // scalar tail's elements, which every loop gives the same thread).
      if (reads_earlier && all_in_slots && !slots_ok_.empty())
        os << ind << "if (!" << slots_ok_ << ") t_row_sync" << segment_arg("<", ">") << "();  // earlier loops' stores, by other threads\n";
      else if (reads_earlier)
        os << ind << "t_row_sync" << segment_arg("<", ">") << "();  // earlier loops' stores, by other threads\n";
      emit_row_group(os, ind, inner, item);
      for (const sched::Member* x : item)
        if (x->inner) inner_written.insert(x->buffer->storage);
    }
    os << "  }\n";
  }

  // The slot path's flag and arrays for a row (see slots_ok_), declared at the row's start: the
  // flag holds when the row fits row_slots_ groups per thread and every loop's vector condition
  // does (uniform over the block).
  template <class IsLoop>
  void plan_row_slots(std::ostream& os, const std::string& ind, const Domain& inner,
                      const std::vector<std::vector<const sched::Member*>>& items, IsLoop is_loop) {
    row_cache_.clear();
    cache_filled_.clear();
    prefetch_.clear();
    prefetched_ = false;
    store_slots_.clear();
    forwarded_loads_.clear();
    slots_ok_.clear();
    if (inner.vars.empty()) return;
    std::vector<const std::vector<const sched::Member*>*> loops;
    for (const auto& item : items)
      if (is_loop(item)) loops.push_back(&item);
    if (loops.empty()) return;
    const std::string Vs = std::to_string(vector_width_), K = std::to_string(row_slots_);
    packed_slots_.clear();
    auto declare = [&](DType dtype) { return declare_slot(os, ind, dtype); };
    // Values one loop stores and a later one reads back at the same position.
    std::unordered_map<const Buffer*, int> writers;
    for (const sched::Member& m : k_.members) ++writers[m.buffer->storage];
    for (size_t i = 0; i < loops.size(); ++i)
      for (const sched::Member* m : *loops[i]) {
        const Buffer* s = m->buffer->storage;
        if (!m->inner || m->buffer->kind != BufferKind::Pointwise || writers[s] != 1) continue;
        SymExpr pos = env_.simplify(sched::member_store_position(*m));
        if (classify(pos, inner).kind != Access::Kind::Contiguous) continue;
        std::vector<Expr> readers;
        for (size_t j = i + 1; j < loops.size(); ++j)
          for (const sched::Member* x : *loops[j])
            for (Expr l : loop::loads(sched::member_body(*x)))
              if (l.op() == Op::Load && l.buffer()->storage == s && env_.simplify(l.index()) == pos) readers.push_back(l);
        if (readers.empty() || store_slots_.size() >= kRowArrays) continue;
        store_slots_[s] = declare(s->dtype);
        forwarded_loads_.insert(readers.begin(), readers.end());
      }
    // Read-only contiguous loads that two or more loops read.
    std::unordered_map<Expr, int> loops_reading;
    std::vector<Expr> order;
    for (const auto* item : loops) {
      std::unordered_set<Expr> here;
      for (const sched::Member* m : *item)
        for (Expr l : loop::loads(sched::member_body(*m)))
          if (l.op() == Op::Load && !written(l.buffer()->storage) && here.insert(l).second) {
            if (!loops_reading[l]++) order.push_back(l);
          }
    }
    for (Expr l : order) {
      if (row_cache_.size() + store_slots_.size() >= kRowArrays) break;
      if (loops_reading[l] < 2 || row_invariant(l) || classify(l.index(), inner).kind != Access::Kind::Contiguous) continue;
      row_cache_[l] = declare(l.buffer()->storage->dtype);
    }
    // Read-only loads of later loops only, prefetched (TOROID_CUDA_ROW_PREFETCH=0 turns it off).
    std::unordered_set<Expr> in_first;
    for (const sched::Member* m : *loops[0])
      for (Expr l : loop::loads(sched::member_body(*m))) in_first.insert(l);
    // The arrays the row holds: its caches and store slots, and the first loop's slot arrays.
    size_t row_arrays = row_cache_.size() + store_slots_.size();
    for (Expr l : in_first)
      if (!row_cache_.count(l) && !row_invariant(l) && classify(l.index(), inner).kind == Access::Kind::Contiguous) ++row_arrays;
    if (env_flag("TOROID_CUDA_ROW_PREFETCH").value_or(true))
      for (Expr l : order) {
        if (row_cache_.size() + store_slots_.size() >= kRowArrays) break;
        if (row_cache_.count(l) || in_first.count(l) || classify(l.index(), inner).kind != Access::Kind::Contiguous) continue;
        if (row_invariant(l) && row_arrays >= kInvariantPrefetchArrays) continue;
        row_cache_[l] = declare(l.buffer()->storage->dtype);
        prefetch_.push_back(l);
        ++row_arrays;
      }
    std::string cond = "(" + numel(inner.sizes) + ") / " + Vs + " <= " + K + " * " + block_dim_;
    for (const auto* item : loops) cond += " && " + plan_vector(inner, *item, {}).cond;
    slots_ok_ = tmp();
    os << ind << "const bool " << slots_ok_ << " = " << cond << ";\n";
  }

  void emit_outer_member(std::ostream& os, const std::string& ind, const sched::Member& m) {
    std::unordered_map<Expr, std::string> names;
    std::string v = value(os, ind, sched::member_body(m), names);
    os << ind << "if (threadIdx.x == 0) " << store(m.buffer, index(sched::member_store_position(m)), v);
    std::string t = tmp();
    os << ind << "const " << compute_type(m.buffer->storage->dtype) << " " << t << " = " << stored_value(m.buffer->storage, v)
       << ";\n" << ind << "(void)" << t << ";\n";
    forwarded_[m.buffer->storage] = t;
  }

  void emit_row_group(std::ostream& os, const std::string& ind, const Domain& inner,
                      const std::vector<const sched::Member*>& group) {
    std::unordered_map<const Buffer*, std::string> partials;
    for (const sched::Member* m : group) {
      const Buffer* b = m->buffer;
      if (b->kind != BufferKind::Reduction) continue;
      DType d = sched::member_body(*m).dtype();
      std::string A = acc_type(b->reduce, d), p = tmp();
      switch (b->reduce) {
        case ReduceOp::Sum:
        case ReduceOp::Mean: os << ind << A << " " << p << " = 0;\n"; break;
        case ReduceOp::Prod: os << ind << A << " " << p << " = 1;\n"; break;
        case ReduceOp::Max: os << ind << A << " " << p << " = t_limits<" << A << ">::lowest();\n"; break;
        case ReduceOp::Min: os << ind << A << " " << p << " = t_limits<" << A << ">::highest();\n"; break;
        case ReduceOp::Any: os << ind << "bool " << p << " = false;\n"; break;
        case ReduceOp::All: os << ind << "bool " << p << " = true;\n"; break;
        case ReduceOp::Var: os << ind << "t_welford<" << A << "> " << p << " = {0, 0, 0};\n"; break;
        case ReduceOp::ArgMax:
        case ReduceOp::ArgMin:
          os << ind << "t_arg<" << compute_type(d) << "> " << p << " = {" << compute_type(d) << "(), 0, false};\n";
          break;
      }
      partials[b] = p;
    }
    mean_from_welford_.clear();
    for (const sched::Member* v : group)
      for (const sched::Member* x : group)
        if (!mean_from_welford_.count(x->buffer) && welford_gives(*v, *x)) mean_from_welford_[x->buffer] = v->buffer;
    if (inner.vars.empty()) {  // reductions over nothing and pointwise of the row: one element
      os << ind << "{\n";
      std::unordered_map<Expr, std::string> names;
      for (const sched::Member* m : group) {
        std::string v = value(os, ind + "  ", sched::member_body(*m), names);
        std::string pos = m->buffer->kind == BufferKind::Pointwise ? index(sched::member_store_position(*m)) : "";
        if (!pos.empty()) os << ind << "  if (threadIdx.x == 0) " << store(m->buffer, pos, v);
        finish_element(os, ind + "  ", *m, v, "0", partials, "");
        if (m->buffer->kind == BufferKind::Pointwise) forwarded_.erase(m->buffer->storage);
      }
      os << ind << "}\n";
      // Every thread computed the same single element; keep one.
      for (auto& [b, p] : partials) os << ind << "if (threadIdx.x != 0) " << p << " = " << identity_of(*b, p) << ";\n";
    } else {
      emit_loop(os, ind, inner, "static_cast<I>(threadIdx.x)", block_dim_, group, partials);
    }
    // Var reductions first: the means taken from their Welford results follow.
    std::vector<const sched::Member*> reductions;
    for (int pass = 0; pass < 2; ++pass)
      for (const sched::Member* m : group)
        if (m->buffer->kind == BufferKind::Reduction && (m->buffer->reduce == ReduceOp::Var) == (pass == 0))
          reductions.push_back(m);
    std::unordered_map<const Buffer*, std::string> welford_of;
    for (const sched::Member* m : reductions) {
      const Buffer* b = m->buffer;
      DType d = sched::member_body(*m).dtype();
      std::string A = acc_type(b->reduce, d), p = partials.at(b), r = tmp(), sm = tmp();
      std::string n_red = numel(b->reduction_sizes);
      if (auto it = mean_from_welford_.find(b); it != mean_from_welford_.end()) {
        const std::string& w = welford_of.at(it->second);
        // An empty row's mean is 0 / 0, as on the other path.
        os << ind << "const " << A << " " << r << " = "
           << (b->reduce == ReduceOp::Sum ? w + ".mean * " + w + ".n"
                                          : "(" + n_red + ") > 0 ? " + w + ".mean : " + A + "(0) / " + A + "(0)")
           << ";\n";
      } else switch (b->reduce) {
        case ReduceOp::Sum:
        case ReduceOp::Mean:
        case ReduceOp::Prod:
        case ReduceOp::Max:
        case ReduceOp::Min:
        case ReduceOp::Any:
        case ReduceOp::All: {
          std::string f = b->reduce == ReduceOp::Prod ? "a * b"
                          : b->reduce == ReduceOp::Max ? (is_floating(d) ? "t_maximum(a, b)" : "t_imax(a, b)")
                          : b->reduce == ReduceOp::Min ? (is_floating(d) ? "t_minimum(a, b)" : "t_imin(a, b)")
                          : b->reduce == ReduceOp::Any ? "a || b"
                          : b->reduce == ReduceOp::All ? "a && b"
                                                       : "a + b";
          os << ind << "__shared__ " << A << " " << sm << "[32];\n";
          os << ind << A << " " << r << " = t_block_reduce" << segment_arg("<", ">") << "(" << p << ", [](" << A << " a, " << A << " b) { return " << f
             << "; }, " << sm << " + t_half);\n";
          if (b->reduce == ReduceOp::Mean) os << ind << r << " = " << r << " / static_cast<" << A << ">(" << n_red << ");\n";
          break;
        }
        case ReduceOp::Var: {
          char corr[64];
          std::snprintf(corr, sizeof corr, "%.17g", b->correction);
          os << ind << "__shared__ t_welford<" << A << "> " << sm << "[32];\n";
          std::string w = tmp();
          const bool even = even_row_split_ && env_.simplify(numel_expr(b->reduction_sizes)).as_int() == row_elements_;
          os << ind << "const t_welford<" << A << "> " << w << " = t_block_welford" << (even ? "_even" : "")
             << segment_arg("<", ">") << "(" << p << ", " << sm << " + t_half);\n";
          welford_of[b] = w;
          os << ind << "const " << A << " " << r << " = " << w << ".m2 / t_imax<" << A << ">(" << A << "(0), static_cast<" << A
             << ">(" << n_red << ") - " << A << "(" << corr << "));\n";
          break;
        }
        case ReduceOp::ArgMax:
        case ReduceOp::ArgMin: {
          std::string T = compute_type(d), mx = b->reduce == ReduceOp::ArgMax ? "true" : "false";
          os << ind << "__shared__ t_arg<" << T << "> " << sm << "[33];\n";
          os << ind << "const int64_t " << r << " = t_block_arg<" << T << ", " << mx << segment_arg(", ", "") << ">(" << p << ", " << sm << ").i;\n";
          break;
        }
      }
      if (!m->local) os << ind << "if (threadIdx.x == 0) " << store(b, index(sched::member_store_position(*m)), r);
      std::string t = tmp();
      os << ind << "const " << compute_type(b->storage->dtype) << " " << t << " = " << stored_value(b->storage, r) << ";\n"
         << ind << "(void)" << t << ";\n";
      forwarded_[b->storage] = t;
    }
  }

  // The identity a partial resets to (so that one thread's single element counts once).
  std::string identity_of(const Buffer& b, const std::string& p) const {
    switch (b.reduce) {
      case ReduceOp::Sum:
      case ReduceOp::Mean: return "0";
      case ReduceOp::Prod: return "1";
      case ReduceOp::Max: return "t_limits<decltype(" + p + ")>::lowest()";
      case ReduceOp::Min: return "t_limits<decltype(" + p + ")>::highest()";
      case ReduceOp::Any: return "false";
      case ReduceOp::All: return "true";
      case ReduceOp::Var: return "{0, 0, 0}";
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: return "{" + p + ".v, 0, false}";
    }
    return "0";
  }
};

}  // namespace

CudaKernel emit_cuda_kernel(const sched::Kernel& kernel, const SymbolSlots& slots, const ShapeEnv& env) {
  return CudaEmitter(kernel, slots, env).emit();
}

void assign_symbol(CudaKernel& k) {
  std::string kind = !k.parts.empty() ? "combo" : k.shape == CudaKernel::Shape::Rows ? "rows" : "flat";
  k.symbol = content_symbol(kind, k.definitions + k.entry_i32 + k.entry_i64, k.name);
}

std::string entry_symbol(const CudaKernel& k, bool i64) {
  return (k.symbol.empty() ? k.name : k.symbol) + (i64 ? "_i64" : "_i32");
}

std::string cuda_translation_unit(const CudaKernel& k, bool i64) {
  TOROID_CHECK(i64 || k.has_i32, k.name + " has no 32-bit entry point");
  return cuda_prelude() + "\n" +
         renamed_code(k.definitions + (i64 ? k.entry_i64 : k.entry_i32), k.name, k.symbol.empty() ? k.name : k.symbol);
}

}  // namespace toroid::codegen::cuda
