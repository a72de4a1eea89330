#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/support/error.h"

namespace toroid::codegen::wrapper {

namespace {

enum class State : uint8_t { Unallocated, Live, Freed, Taken };

using Symbols = std::unordered_set<SymExpr>;

class LifecycleCheck {
 public:
  // `bound`: the unbacked symbols bound where the program starts (its owner's, for a nested
  // one), besides those its inputs bind.
  LifecycleCheck(const WrapperProgram& w, Symbols bound)
      : w_(w), state_(w.slots.size(), State::Unallocated), pool_state_(w.pools.size(), State::Unallocated),
        bound_(std::move(bound)) {
    bound_.insert(w.input_symbols.begin(), w.input_symbols.end());
    for (size_t s = 0; s < w.slots.size(); ++s)
      if (w.slots[s].kind == Slot::Kind::Input || w.slots[s].kind == Slot::Kind::Constant) state_[s] = State::Live;
    for (size_t s = 0; s < w.slots.size(); ++s)
      if (w.slots[s].kind == Slot::Kind::Input && w.slots[s].donated) block_[static_cast<int>(s)] = w.slots[s].nbytes;
    for (const OutputPlan& o : w.outputs())
      if (o.kind == OutputPlan::Kind::Tensor) returned_.insert(o.tensor.slot);
  }

  void run() {
    if (w_.lines.empty() || w_.lines.back().kind != Line::Kind::Return)
      TOROID_INTERNAL_ERROR("wrapper verifier: the program does not end with its return line");
    for (index_ = 0; index_ < w_.lines.size(); ++index_) {
      const Line& l = w_.lines[index_];
      check_symbols(l);
      line(l);
    }
    for (size_t p = 0; p < w_.pools.size(); ++p)
      if (pool_state_[p] != State::Freed)
        TOROID_INTERNAL_ERROR("wrapper verifier: " + w_.pools[p].name +
                              (pool_state_[p] == State::Live ? " is never freed" : " is never allocated"));
  }

 private:
  const Slot& slot(int s) const {
    if (s < 0 || static_cast<size_t>(s) >= w_.slots.size()) fail("names slot " + std::to_string(s) + ", which no buffer has");
    return w_.slots[static_cast<size_t>(s)];
  }
  State& state(int s) {
    slot(s);
    return state_[static_cast<size_t>(s)];
  }

  [[noreturn]] void fail(const std::string& why) const {
    TOROID_INTERNAL_ERROR("wrapper verifier: line " + std::to_string(index_ + 1) + " `" +
                          print_line(w_, w_.lines[index_]) + "`: " + why);
  }

  void allocate(int s, SymExpr nbytes) {
    const Slot& b = slot(s);
    if (b.kind != Slot::Kind::Intermediate) fail(b.name + " is not memory the program allocates");
    if (state(s) != State::Unallocated) fail(b.name + " already has memory");
    if (nbytes != b.nbytes) fail(b.name + " needs " + b.nbytes.str() + " bytes, the line says " + nbytes.str());
    state(s) = State::Live;
  }

  // Returned buffer `s` in donated input `donor`'s memory: the caller gets each output in it as
  // a view of that input (its dtype), and the program writes the input where it is.
  void returned_in_donated(int s, int donor) {
    const Slot &b = slot(s), &in = slot(donor);
    if (b.dtype != in.dtype) fail("returns " + b.name + " in the memory of " + in.name + ", of another dtype");
    int index = -1;
    for (const InputSlot& i : w_.inputs)
      if (i.slot == donor) index = i.index;
    for (const OutputPlan& o : w_.outputs())
      if (o.kind == OutputPlan::Kind::Tensor && o.tensor.slot == s && (o.input_index != index || o.bindable))
        fail("returns " + b.name + " in the memory of donated input " + in.name + ", but not as a view of it");
    if (!w_.writes_inputs) fail("returns " + b.name + " in the memory of donated input " + in.name + " without writing inputs");
  }

  void use(int s) {
    const Slot& b = slot(s);
    switch (state(s)) {
      case State::Live: return;
      case State::Unallocated: fail(b.name + " is used before it is allocated");
      case State::Freed:
      case State::Taken: fail(b.name + " is used after line " + std::to_string(freed_at_.at(s) + 1) + " freed it");
    }
  }

  // A buffer placed in a pool: the pool is live, on its device, and the block lies inside it.
  void in_pool(const Line& l) {
    if (static_cast<size_t>(l.pool) >= w_.pools.size()) fail("names a pool the program does not have");
    const Pool& p = w_.pools[static_cast<size_t>(l.pool)];
    const Slot& b = slot(l.slot);
    if (pool_state_[static_cast<size_t>(l.pool)] != State::Live) fail("places " + b.name + " in " + p.name + ", which holds no memory");
    if (b.device.type != p.device.type || b.device.index != p.device.index) fail("places " + b.name + " in a pool of another device");
    if (returned_.count(l.slot)) fail("places " + b.name + ", which the graph returns, in " + p.name);
    // Within the block the plan rounded it up to (which holds it: a multiple of 64 at least as large).
    if (!w_.env->statically_known_true(sym::le(l.offset + pool_block_bytes(*w_.env, l.nbytes), p.nbytes)) ||
        !w_.env->statically_known_true(sym::ge(l.offset, SymExpr::integer(0))))
      fail(b.name + " at " + l.offset.str() + " is not provably inside " + p.name + " (" + p.nbytes.str() + " bytes)");
    pool_of_[l.slot] = l.pool;
  }

  // An unbacked symbol is read only after the line that binds it (an item() read, a SymbolDefs
  // line), or where the program starts with it bound.
  void need(SymExpr e, const std::string& what) {
    if (e.is_null()) return;
    for (SymExpr s : e.free_symbols()) {
      const sym::SymbolInfo* info = w_.env->info(s);
      if (info && info->unbacked && !bound_.count(s))
        fail(what + " reads " + s.str() + " before a line binds it");
    }
  }
  void need(const TensorRef& r) {
    if (r.slot < 0) return;
    for (SymExpr e : r.sizes) need(e, "the view of " + r.name);
    for (SymExpr e : r.strides) need(e, "the view of " + r.name);
    need(r.offset, "the view of " + r.name);
  }
  void need_args(const std::vector<CallArg>& args) {
    for (const CallArg& a : args) {
      if (a.kind == CallArg::Kind::Tensor) need(a.tensor);
      if (a.kind == CallArg::Kind::Scalar) need(a.scalar, "an argument");
      need_args(a.list);
    }
  }

  void check_symbols(const Line& l) {
    switch (l.kind) {
      case Line::Kind::Alloc:
      case Line::Kind::Reuse:
      case Line::Kind::PoolAlloc:
        need(l.nbytes, "its size");
        need(l.offset, "its offset");
        return;
      case Line::Kind::KernelCall: {
        const std::vector<size_t>& syms = w_.target.is_cuda() ? w_.cuda_kernels.at(static_cast<size_t>(l.kernel)).sym_slots
                                                              : w_.kernels.at(static_cast<size_t>(l.kernel)).sym_slots;
        for (size_t k : syms) need(w_.symbols.at(k), "its kernel");
        return;
      }
      case Line::Kind::ExternCall:
        need(l.result);
        for (const TensorRef& r : l.operands) need(r);
        return;
      case Line::Kind::UserKernel:
        for (const TensorRef& r : l.launch.tensors) need(r);
        for (SymExpr e : l.launch.grid) need(e, "its grid");
        for (SymExpr e : l.launch.block) need(e, "its block");
        for (SymExpr e : l.launch.scalars) need(e, "a scalar argument");
        return;
      case Line::Kind::FallbackCall: need_args(l.call.args); return;  // its results may define symbols
      case Line::Kind::ScalarRead:
        need(l.operands.at(0));
        if (l.scalar.is_symbol()) bound_.insert(l.scalar);
        return;
      case Line::Kind::SymbolDefs:
        for (const SymbolDef& d : l.defs) bound_.insert(d.symbol);
        return;
      case Line::Kind::Assert: need(l.scalar, "its condition"); return;
      case Line::Kind::Cond:
      case Line::Kind::While:
        need(l.scalar, "its predicate");
        for (const TensorRef& r : l.operands) need(r);
        for (const TensorRef& r : l.results) need(r);
        return;
      case Line::Kind::Return:
        for (const OutputPlan& o : l.outputs) {
          if (o.kind == OutputPlan::Kind::Tensor) need(o.tensor);
          if (o.kind == OutputPlan::Kind::Scalar) need(o.scalar, "an output");
        }
        return;
      default: return;
    }
  }

  void line(const Line& l) {
    const ShapeEnv& env = *w_.env;
    switch (l.kind) {
      case Line::Kind::Comment: return;
      case Line::Kind::Alloc:
        allocate(l.slot, l.nbytes);
        block_[l.slot] = l.nbytes;
        if (l.pool >= 0) in_pool(l);
        return;
      case Line::Kind::PoolAlloc:
      case Line::Kind::PoolFree: {
        if (l.pool < 0 || static_cast<size_t>(l.pool) >= w_.pools.size()) fail("names a pool the program does not have");
        const Pool& p = w_.pools[static_cast<size_t>(l.pool)];
        State& st = pool_state_[static_cast<size_t>(l.pool)];
        if (l.kind == Line::Kind::PoolAlloc) {
          if (st != State::Unallocated) fail(p.name + " already has memory");
          if (l.nbytes != p.nbytes) fail(p.name + " needs " + p.nbytes.str() + " bytes, the line says " + l.nbytes.str());
          st = State::Live;
          return;
        }
        if (st != State::Live) fail("frees " + p.name + ", which holds no memory");
        for (const auto& [slot, pool] : pool_of_)
          if (pool == l.pool && state_[static_cast<size_t>(slot)] == State::Live)
            fail("frees " + p.name + " while " + w_.slots[static_cast<size_t>(slot)].name + " in it is live");
        st = State::Freed;
        return;
      }
      case Line::Kind::SymbolDefs:
        for (const SymbolDef& d : l.defs) {
          use(d.slot);
          const sym::SymbolInfo* info = env.info(d.symbol);
          if (!d.symbol.is_symbol() || !info || !info->unbacked) fail("defines " + d.symbol.str() + ", not an unbacked symbol");
        }
        return;
      case Line::Kind::Reuse: {
        if (pool_of_.count(l.from)) fail("reuses the block of " + slot(l.from).name + ", which its pool owns");
        if (l.from < 0 || state(l.from) != State::Freed)
          fail("reuses " + (l.from < 0 ? std::string("nothing") : slot(l.from).name) + ", which is not a freed block");
        const Slot &from = slot(l.from), &to = slot(l.slot);
        if (from.device.type != to.device.type || from.device.index != to.device.index)
          fail("reuses memory of another device");
        if (from.kind == Slot::Kind::Input || donor_.count(l.from)) {
          int donor = from.kind == Slot::Kind::Input ? l.from : donor_.at(l.from);
          if (returned_.count(l.slot)) returned_in_donated(l.slot, donor);
          donor_[l.slot] = donor;
        }
        SymExpr have = block_.at(l.from);
        if (!env.statically_known_true(sym::ge(have, l.nbytes)))
          fail("the block of " + from.name + " holds " + have.str() + " bytes, not provably the " + l.nbytes.str() +
               " that " + to.name + " needs");
        allocate(l.slot, l.nbytes);
        state(l.from) = State::Taken;
        block_[l.slot] = have;
        return;
      }
      case Line::Kind::Free: {
        const Slot& b = slot(l.slot);
        if (b.kind != Slot::Kind::Intermediate && !(b.kind == Slot::Kind::Input && b.donated))
          fail("frees " + b.name + ", which is an input or constant its caller did not donate");
        if (returned_.count(l.slot)) fail("frees " + b.name + ", which the graph returns");
        use(l.slot);
        state(l.slot) = State::Freed;
        freed_at_[l.slot] = index_;
        return;
      }
      case Line::Kind::KernelCall:
      case Line::Kind::ExternCall:
      case Line::Kind::ScalarRead:
      case Line::Kind::Return:
        for (int s : touched_slots(l)) use(s);
        return;
      case Line::Kind::UserKernel:
        if (l.launch.kernel < 0 || static_cast<size_t>(l.launch.kernel) >= w_.user_kernels.size())
          fail("launches a user kernel the program does not have");
        for (int s : touched_slots(l)) use(s);
        for (int p : l.launch.written)
          if (p < 0 || static_cast<size_t>(p) >= l.launch.tensors.size() ||
              slot(l.launch.tensors[static_cast<size_t>(p)].slot).kind != Slot::Kind::Intermediate)
            fail("a user kernel writes tensor " + std::to_string(p) + ", which is not in memory the program owns");
        return;
      case Line::Kind::Assert: return;
      case Line::Kind::Cond:
      case Line::Kind::While: {
        if (l.programs.size() != 2) fail("runs " + std::to_string(l.programs.size()) + " programs, not 2");
        for (int s : touched_slots(l)) use(s);
        for (size_t i = 0; i < l.programs.size(); ++i) {
          const WrapperProgram& p = *l.programs[i];
          bool predicate = l.kind == Line::Kind::While && i == 0;
          if (!predicate && p.outputs().size() != l.results.size())
            fail("program " + std::to_string(i) + " returns " + std::to_string(p.outputs().size()) + " values for " +
                 std::to_string(l.results.size()) + " results");
          for (size_t r = 0; !predicate && r < l.results.size(); ++r)
            if (!p.outputs()[r].bindable)
              fail("program " + std::to_string(i) + " cannot write result " + std::to_string(r) + " into its memory");
          LifecycleCheck(p, bound_).run();
        }
        return;
      }
      case Line::Kind::FallbackCall: {
        std::unordered_set<int> results;
        for (const ReferenceCall::Result& r : l.call.results) results.insert(r.ref.slot);
        for (int s : touched_slots(l)) {
          if (!results.count(s) || state(s) != State::Unallocated) {
            use(s);
            continue;
          }
          if (slot(s).kind != Slot::Kind::Intermediate) fail("writes a result into " + slot(s).name);
          state(s) = State::Live;  // the call allocates its results
          for (const ReferenceCall::Result& r : l.call.results)
            if (r.ref.slot == s) block_[s] = r.nbytes;
        }
        return;
      }
    }
  }

  const WrapperProgram& w_;
  std::vector<State> state_;
  std::vector<State> pool_state_;
  std::unordered_map<int, int> pool_of_;  // a pooled buffer's pool
  Symbols bound_;
  size_t index_ = 0;
  std::unordered_map<int, size_t> freed_at_;
  std::unordered_map<int, SymExpr> block_;
  std::unordered_set<int> returned_;
  std::unordered_map<int, int> donor_;  // slots holding a donated input's memory: that input's slot
};

}  // namespace

namespace {

// Partitions in line order, inside the program, each a run with no capture barrier.
void check_partitions(const WrapperProgram& w) {
  size_t after = 0;
  for (size_t k = 0; k < w.partitions.size(); ++k) {
    const Partition& p = w.partitions[k];
    std::string where = "wrapper verifier: partition " + std::to_string(k);
    if (p.begin < after || p.end <= p.begin || p.end > w.lines.size())
      TOROID_INTERNAL_ERROR(where + " spans lines " + std::to_string(p.begin) + ".." + std::to_string(p.end) +
                            ", out of order or outside the program");
    for (size_t i = p.begin; i < p.end; ++i)
      if (const char* why = capture_barrier(w.lines[i]))
        TOROID_INTERNAL_ERROR(where + " holds line " + std::to_string(i + 1) + " `" + print_line(w, w.lines[i]) +
                              "`, which cannot be captured: " + why);
    after = p.end;
  }
  for (const Line& l : w.lines)
    for (const auto& p : l.programs) check_partitions(*p);
}

}  // namespace

void verify_wrapper(const WrapperProgram& w) {
  LifecycleCheck(w, {}).run();
  check_partitions(w);
}

}  // namespace toroid::codegen::wrapper
