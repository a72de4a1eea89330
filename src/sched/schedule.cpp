#include "toroid/sched/schedule.h"

#include <unordered_map>
#include <unordered_set>

#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::sched {

using loop::Buffer;
using loop::BufferKind;
using loop::Expr;

namespace {

// A kernel takes at most this many buffers (as Inductor's max_fusion_size): past it, the
// kernel's C++ grows faster to compile than the fusion saves, and the checks below stay cheap.
constexpr size_t kMaxKernelMembers = 64;
// ... and at most this many ops (unless it is a single buffer): one kernel is one C++ function,
// and a large module's kernels compile in parallel.
constexpr int kMaxKernelOps = 1024;

bool is_one(SymExpr s) { return s.as_int() == std::optional<int64_t>(1); }

std::vector<SymExpr> squeezed(const std::vector<SymExpr>& sizes) {
  std::vector<SymExpr> out;
  for (SymExpr s : sizes)
    if (!is_one(s)) out.push_back(s);
  return out;
}

// Maps the non-1 dims of `sizes` to vars(from), vars(from + 1), ...; size-1 dims read 0.
std::vector<SymExpr> map_dims(const std::vector<SymExpr>& sizes, SymExpr (*var)(size_t), size_t from) {
  std::vector<SymExpr> out;
  for (SymExpr s : sizes) out.push_back(is_one(s) ? SymExpr::integer(0) : var(from++));
  return out;
}

std::vector<SymExpr> concat(std::vector<SymExpr> a, const std::vector<SymExpr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Where `b` would sit in kernel `k`, if its domain fits.
std::optional<Member> place(Buffer* b, const Kernel& k) {
  Member m;
  m.buffer = b;
  if (b->kind == BufferKind::Reduction) {
    if (squeezed(b->sizes) != k.outer || squeezed(b->reduction_sizes) != k.inner) return std::nullopt;
    m.index = map_dims(b->sizes, outer_var, 0);
    m.reduction_index = map_dims(b->reduction_sizes, inner_var, 0);
    return m;
  }
  std::vector<SymExpr> s = squeezed(b->sizes);
  if (s == concat(k.outer, k.inner)) {
    m.inner = true;
    // The first |outer| non-1 dims are outer, the rest inner.
    size_t seen = 0;
    for (SymExpr size : b->sizes) {
      if (is_one(size)) {
        m.index.push_back(SymExpr::integer(0));
      } else {
        m.index.push_back(seen < k.outer.size() ? outer_var(seen) : inner_var(seen - k.outer.size()));
        ++seen;
      }
    }
    return m;
  }
  if (s == k.outer) {
    m.index = map_dims(b->sizes, outer_var, 0);
    return m;
  }
  return std::nullopt;
}

std::unique_ptr<Kernel> new_kernel(Buffer* b, int id) {
  auto k = std::make_unique<Kernel>();
  k->id = id;
  k->name = "kernel" + std::to_string(id);
  if (b->kind == BufferKind::Reduction) {
    k->outer = squeezed(b->sizes);
    k->inner = squeezed(b->reduction_sizes);
  } else {
    std::vector<SymExpr> s = squeezed(b->sizes);
    if (!s.empty()) {
      k->inner = {s.back()};
      s.pop_back();
    }
    k->outer = s;
  }
  return k;
}

SymExpr map_index(SymExpr index, const Member& m) {
  return sym::substitute(index, [&](SymExpr s) -> SymExpr {
    for (size_t k = 0; k < m.index.size(); ++k)
      if (s == loop::index_var(k)) return m.index[k];
    for (size_t k = 0; k < m.reduction_index.size(); ++k)
      if (s == loop::reduction_var(k)) return m.reduction_index[k];
    return s;
  });
}

class Scheduler {
 public:
  Scheduler(const loop::LoopProgram& p, const ScheduleOptions& o) : prog_(p) { out_.options = o; }

  Schedule run() {
    for (const auto& owned : prog_.buffers) {
      Buffer* b = owned.get();
      switch (b->kind) {
        case BufferKind::Input:
        case BufferKind::Constant:
          break;
        case BufferKind::Extern:
        case BufferKind::Fallback:
        case BufferKind::Control:
        case BufferKind::Scalar:
        case BufferKind::UserKernel:
          add_call(b);
          break;
        case BufferKind::Pointwise:
        case BufferKind::Reduction:
          add_computed(b);
          break;
      }
    }
    return std::move(out_);
  }

 private:
  const loop::LoopProgram& prog_;
  Schedule out_;
  std::unordered_map<const Buffer*, size_t> step_of_;  // buffer -> step that computes it
  std::unordered_map<const Node*, size_t> call_step_;
  std::unordered_map<const Kernel*, size_t> kernel_step_;
  // The step that binds each unbacked symbol (an item() read, a fallback's data-dependent size):
  // nothing that uses the symbol runs before it.
  std::unordered_map<SymExpr, size_t> symbol_step_;

  static Step::Kind step_kind(BufferKind k) {
    switch (k) {
      case BufferKind::Extern: return Step::Kind::Extern;
      case BufferKind::Scalar: return Step::Kind::Scalar;
      case BufferKind::Control: return Step::Kind::Control;
      case BufferKind::UserKernel: return Step::Kind::UserKernel;
      default: return Step::Kind::Fallback;
    }
  }

  void note_defined(SymExpr e, size_t step) {
    if (e.is_null()) return;
    for (SymExpr s : e.free_symbols()) {
      const sym::SymbolInfo* info = prog_.graph->shape_env().info(s);
      if (info && info->unbacked) symbol_step_.emplace(s, step);
    }
  }

  // The last step binding a symbol `b` uses in its layout, sizes or body.
  size_t symbols_ready(const Buffer* b) const {
    size_t at = 0;
    auto use = [&](SymExpr e) {
      if (e.is_null() || symbol_step_.empty()) return;
      for (SymExpr s : e.free_symbols()) {
        auto it = symbol_step_.find(s);
        if (it != symbol_step_.end()) at = std::max(at, it->second);
      }
    };
    for (SymExpr e : b->sizes) use(e);
    for (SymExpr e : b->strides) use(e);
    for (SymExpr e : b->reduction_sizes) use(e);
    use(b->offset);
    use(b->storage_numel);
    if (b->body && !symbol_step_.empty())
      loop::visit(b->body, [&](Expr e) {
        if (e.op() == loop::Op::Load || e.op() == loop::Op::Index || e.op() == loop::Op::IndirectLoad) use(e.index());
      });
    return at;
  }

  // One step per call, shared by its results' buffers; each Extern buffer is a library call of
  // its own (convolution_backward's grad_input and grad_weight).
  void add_call(Buffer* b) {
    auto it = b->kind == BufferKind::Extern ? call_step_.end() : call_step_.find(b->node);
    if (it != call_step_.end()) {
      step_of_[b] = it->second;
      for (SymExpr e : b->sizes) note_defined(e, it->second);
      return;
    }
    Step s{step_kind(b->kind), nullptr, b, {}};
    out_.steps.push_back(s);
    size_t step = out_.steps.size() - 1;
    if (b->kind != BufferKind::Extern) call_step_[b->node] = step;
    step_of_[b] = step;
    if (b->kind == BufferKind::Scalar) note_defined(b->scalar.is_symbol() ? b->scalar : SymExpr(), step);
    else if (b->kind != BufferKind::Extern)
      for (SymExpr e : b->sizes) note_defined(e, step);
  }

  // Can `m` join kernel `k`? Every read of a member must be the element that member stores
  // in the same outer iteration (and, from an inner loop, the same inner element).
  bool legal(const Member& m, const Kernel& k, std::string& why) const {
    std::unordered_map<const Buffer*, const Member*> members;
    for (const Member& x : k.members) members[x.buffer] = &x;
    for (Expr l : loop::loads(m.buffer->body)) {
      auto it = members.find(l.buffer());
      if (it == members.end()) continue;
      const Member& p = *it->second;
      if (l.op() == loop::Op::IndirectLoad) {  // which element is only known at run time
        why = "reads " + p.buffer->name + " at a data-dependent position";
        return false;
      }
      if (!m.inner && p.inner && m.buffer->kind == BufferKind::Pointwise) {
        why = "an outer-level value cannot read the inner loop of " + p.buffer->name;
        return false;
      }
      ShapeEnv& env = prog_.graph->shape_env();
      if (env.simplify(map_index(l.index(), m)) != env.simplify(member_store_position(p))) {
        why = "reads " + p.buffer->name + " at another element than the one it stores in this iteration";
        return false;
      }
    }
    return true;
  }

  // Can write-into-input `m` join epilogue kernel `k`? Every member computes from the inputs'
  // old values, and runs in member order within an iteration: `m` must not read an input a
  // member writes (the member wrote it already), and a member may read the input `m` writes only
  // at the element `m` stores in the same iteration (read before `m` writes it, and no other
  // iteration's element).
  bool epilogue_legal(const Member& m, const Kernel& k, std::string& why) const {
    ShapeEnv& env = prog_.graph->shape_env();
    const Buffer* target = m.buffer->storage;
    if (!m.inner) {  // an outer-level member runs once per row, before or after the row's elements
      why = "its iteration space is the kernel's outer one only";
      return false;
    }
    for (const Member& x : k.members) {
      if (x.buffer->storage == target) {
        why = "both write " + target->name;
        return false;
      }
      for (Expr l : loop::loads(m.buffer->body))
        if (l.buffer() == x.buffer->storage || l.buffer() == x.buffer) {
          why = "reads " + l.buffer()->name + ", which " + x.buffer->name + " writes";
          return false;
        }
      for (Expr l : loop::loads(x.buffer->body)) {
        if (l.buffer() != target && l.buffer() != m.buffer) continue;
        if (l.op() == loop::Op::IndirectLoad ||
            env.simplify(map_index(l.index(), x)) != env.simplify(member_store_position(m))) {
          why = x.buffer->name + " reads " + target->name + " at another element than the one written";
          return false;
        }
      }
    }
    return true;
  }

  static bool reads(const Kernel& k, const Buffer* storage) {
    for (const Member& x : k.members)
      for (Expr l : loop::loads(x.buffer->body))
        if (l.buffer() == storage) return true;
    return false;
  }

  bool related(const Buffer* b, const Kernel& k) const {
    std::unordered_set<const Buffer*> reads;
    for (Buffer* r : b->reads()) reads.insert(r);
    for (const Member& m : k.members) {
      if (reads.count(m.buffer)) return true;
      for (Buffer* r : m.buffer->reads())
        if (reads.count(r)) return true;
    }
    return false;
  }

  void add_computed(Buffer* b) {
    size_t earliest = symbols_ready(b);
    for (Buffer* r : b->reads()) {
      auto it = step_of_.find(r);
      if (it != step_of_.end()) earliest = std::max(earliest, it->second);
    }
    bool epilogue = b->storage != b;
    const int ops = loop::op_count(b->body);
    if (!epilogue) {
      for (size_t s = out_.steps.size(); s-- > earliest;) {
        if (out_.steps[s].kind != Step::Kind::Kernel) continue;
        Kernel& k = *out_.steps[s].kernel;
        if (k.closed) break;
        if (k.members.size() >= kMaxKernelMembers || k.ops + ops > kMaxKernelOps) continue;
        std::optional<Member> m = place(b, k);
        if (!m) continue;
        std::string why;
        if (!related(b, k)) continue;
        if (!legal(*m, k, why)) {
          TOROID_LOG("fusion", "not fusing " + b->name + " into " + k.name + ": " + why);
          continue;
        }
        TOROID_LOG("fusion", "fusing " + b->name + " into " + k.name + " (" + (m->inner ? "inner loop" : b->kind == BufferKind::Reduction ? "reduction" : "outer level") + ")");
        k.members.push_back(std::move(*m));
        k.ops += ops;
        step_of_[b] = s;
        return;
      }
    } else {
      // Writes into inputs share a kernel with the trailing ones of their iteration space (an
      // optimizer step's updates, horizontally: one launch, not one per tensor).
      // A kernel passed over runs after the one `b` joins: it must not read what `b` writes.
      for (size_t s = out_.steps.size(); s-- > earliest;) {
        if (out_.steps[s].kind != Step::Kind::Kernel || !out_.steps[s].kernel->epilogues) break;
        Kernel& k = *out_.steps[s].kernel;
        std::optional<Member> m;
        bool joins = !out_.options.combo_kernels || related(b, k);  // else a combo part of its own
        if (joins && k.members.size() < kMaxKernelMembers && k.ops + ops <= kMaxKernelOps) m = place(b, k);
        std::string why;
        if (m && epilogue_legal(*m, k, why)) {
          TOROID_LOG("fusion", "fusing " + b->name + " into " + k.name + " (writes into input " + b->storage->name + ")");
          k.members.push_back(std::move(*m));
          k.ops += ops;
          step_of_[b] = s;
          return;
        }
        if (m) TOROID_LOG("fusion", "not fusing " + b->name + " into " + k.name + ": " + why);
        if (reads(k, b->storage)) break;
      }
      for (auto& k : out_.kernels) k->closed = true;
    }
    std::unique_ptr<Kernel> k = new_kernel(b, static_cast<int>(out_.kernels.size()));
    k->emulate_precision_casts = out_.options.emulate_precision_casts;
    std::optional<Member> m = place(b, *k);
    TOROID_CHECK(m.has_value(), "a buffer does not fit its own kernel");
    k->members.push_back(std::move(*m));
    k->ops = ops;
    k->closed = epilogue;
    k->epilogues = epilogue;
    TOROID_LOG("fusion", "new " + k->name + " for " + b->name + (epilogue ? " (writes into input " + b->storage->name + ")" : ""));
    out_.steps.push_back(Step{Step::Kind::Kernel, k.get(), nullptr, {}});
    step_of_[b] = out_.steps.size() - 1;
    out_.kernels.push_back(std::move(k));
  }
};

}  // namespace

SymExpr outer_var(size_t k) { return loop::named_var('o', k); }
SymExpr inner_var(size_t k) { return loop::named_var('q', k); }

loop::Expr member_body(const Member& m) {
  return loop::map_indices(m.buffer->body, [&](SymExpr index) { return map_index(index, m); });
}

SymExpr member_store_position(const Member& m) {
  return loop::position(m.buffer->strides, m.buffer->offset, m.index);
}

Schedule schedule(const loop::LoopProgram& program, const ScheduleOptions& options) {
  Schedule s = Scheduler(program, options).run();
  if (options.combo_kernels) combine_kernels(s);
  if (program.target.is_cuda()) keep_local_reductions(s, program);
  return s;
}

}  // namespace toroid::sched
