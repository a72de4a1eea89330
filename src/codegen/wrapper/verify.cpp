#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/support/error.h"

namespace toroid::codegen::wrapper {

namespace {

enum class State : uint8_t { Unallocated, Live, Freed, Taken };

class LifecycleCheck {
 public:
  explicit LifecycleCheck(const WrapperProgram& w) : w_(w), state_(w.slots.size(), State::Unallocated) {
    for (size_t s = 0; s < w.slots.size(); ++s)
      if (w.slots[s].kind == Slot::Kind::Input || w.slots[s].kind == Slot::Kind::Constant) state_[s] = State::Live;
    for (const OutputPlan& o : w.outputs())
      if (o.kind == OutputPlan::Kind::Tensor) returned_.insert(o.tensor.slot);
  }

  void run() {
    if (w_.lines.empty() || w_.lines.back().kind != Line::Kind::Return)
      TOROID_INTERNAL_ERROR("wrapper verifier: the program does not end with its return line");
    for (index_ = 0; index_ < w_.lines.size(); ++index_) line(w_.lines[index_]);
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

  void use(int s) {
    const Slot& b = slot(s);
    switch (state(s)) {
      case State::Live: return;
      case State::Unallocated: fail(b.name + " is used before it is allocated");
      case State::Freed:
      case State::Taken: fail(b.name + " is used after line " + std::to_string(freed_at_.at(s) + 1) + " freed it");
    }
  }

  void line(const Line& l) {
    const ShapeEnv& env = *w_.env;
    switch (l.kind) {
      case Line::Kind::Comment: return;
      case Line::Kind::Alloc:
        allocate(l.slot, l.nbytes);
        block_[l.slot] = l.nbytes;
        return;
      case Line::Kind::Reuse: {
        if (l.from < 0 || state(l.from) != State::Freed)
          fail("reuses " + (l.from < 0 ? std::string("nothing") : slot(l.from).name) + ", which is not a freed block");
        const Slot &from = slot(l.from), &to = slot(l.slot);
        if (from.device.type != to.device.type || from.device.index != to.device.index)
          fail("reuses memory of another device");
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
        if (b.kind != Slot::Kind::Intermediate) fail("frees " + b.name + ", which is an input or constant");
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
          verify_wrapper(p);
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
  size_t index_ = 0;
  std::unordered_map<int, size_t> freed_at_;
  std::unordered_map<int, SymExpr> block_;
  std::unordered_set<int> returned_;
};

}  // namespace

void verify_wrapper(const WrapperProgram& w) { LifecycleCheck(w).run(); }

}  // namespace toroid::codegen::wrapper
