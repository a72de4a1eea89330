#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/support/error.h"

namespace toroid::codegen::wrapper {

using loop::Buffer;
using loop::BufferKind;

namespace {

enum class State : uint8_t { Unallocated, Live, Freed, Taken };

class LifecycleCheck {
 public:
  explicit LifecycleCheck(const WrapperProgram& w) : w_(w), env_(w.program->graph->shape_env()) {
    for (const auto& b : w.program->buffers)
      if (b->storage == b.get() && (b->kind == BufferKind::Input || b->kind == BufferKind::Constant))
        state_[b.get()] = State::Live;
    for (const loop::OutputRef& o : w.program->outputs)
      if (o.buffer) outputs_.insert(o.buffer->storage);
  }

  void run() {
    for (index_ = 0; index_ < w_.lines.size(); ++index_) line(w_.lines[index_]);
    for (const Buffer* b : outputs_)
      if (state(b) != State::Live) fail_at_end(b->name + " is a graph output but is not live at the return");
  }

 private:
  State state(const Buffer* b) const {
    auto it = state_.find(b);
    return it == state_.end() ? State::Unallocated : it->second;
  }

  [[noreturn]] void fail(const std::string& why) const {
    TOROID_INTERNAL_ERROR("wrapper verifier: line " + std::to_string(index_ + 1) + " `" +
                          print_line(w_, w_.lines[index_]) + "`: " + why);
  }
  [[noreturn]] void fail_at_end(const std::string& why) const { TOROID_INTERNAL_ERROR("wrapper verifier: " + why); }

  SymExpr own_bytes(const Buffer* b) const {
    return env_.simplify(b->storage_numel * SymExpr::integer(dtype_size(b->dtype)));
  }

  void allocate(const Buffer* b, SymExpr nbytes) {
    if (b->storage != b) fail(b->name + " writes " + b->storage->name + "'s memory and has none of its own");
    if (state(b) != State::Unallocated) fail(b->name + " already has memory");
    if (nbytes != own_bytes(b))
      fail(b->name + " needs " + own_bytes(b).str() + " bytes, the line says " + nbytes.str());
    state_[b] = State::Live;
  }

  void use(const Buffer* b) const {
    switch (state(b)) {
      case State::Live: return;
      case State::Unallocated: fail(b->name + " is used before it is allocated");
      case State::Freed:
      case State::Taken: fail(b->name + " is used after line " + std::to_string(freed_at_.at(b) + 1) + " freed it");
    }
  }

  void line(const Line& l) {
    switch (l.kind) {
      case Line::Kind::Comment: return;
      case Line::Kind::Alloc:
        allocate(l.buffer, l.nbytes);
        block_[l.buffer] = l.nbytes;
        return;
      case Line::Kind::Reuse: {
        if (!l.from || state(l.from) != State::Freed)
          fail("reuses " + std::string(l.from ? l.from->name : "nothing") + ", which is not a freed block");
        if (l.from->device.type != l.buffer->device.type || l.from->device.index != l.buffer->device.index)
          fail("reuses memory of another device");
        SymExpr have = block_.at(l.from);
        if (!env_.statically_known_true(sym::ge(have, l.nbytes)))
          fail("the block of " + l.from->name + " holds " + have.str() + " bytes, not provably the " + l.nbytes.str() +
               " that " + l.buffer->name + " needs");
        allocate(l.buffer, l.nbytes);
        state_[l.from] = State::Taken;
        block_[l.buffer] = have;
        return;
      }
      case Line::Kind::Free: {
        const Buffer* b = l.buffer;
        if (b->kind == BufferKind::Input || b->kind == BufferKind::Constant) fail("frees an input or constant");
        if (outputs_.count(b)) fail("frees " + b->name + ", which the graph returns");
        use(b);
        state_[b] = State::Freed;
        freed_at_[b] = index_;
        return;
      }
      case Line::Kind::KernelCall:
        for (const Buffer* b : l.args) use(b);
        return;
      case Line::Kind::ExternCall:
        for (const Buffer* b : l.args) use(b);
        for (const TensorRef& r : l.operands)
          if (r.slot >= 0) use(slot_buffer(r.slot));
        use(l.buffer);
        if (l.result.slot != l.buffer->storage->id) fail("writes a slot that is not its buffer's");
        return;
      case Line::Kind::FallbackCall:
        for (const Value* in : l.node->inputs())
          if (in->is_tensor())
            if (auto it = w_.program->owners.find(in->meta().storage); it != w_.program->owners.end())
              use(it->second->storage);
        for (const Buffer* r : l.results)
          if (state(r) == State::Unallocated) {  // the call allocates its results
            state_[r] = State::Live;
            block_[r] = own_bytes(r);
          } else {
            use(r);
          }
        return;
    }
  }

  const Buffer* slot_buffer(int slot) {
    if (by_slot_.empty())
      for (const auto& b : w_.program->buffers) by_slot_[b->id] = b.get();
    auto it = by_slot_.find(slot);
    if (it == by_slot_.end()) fail("names slot " + std::to_string(slot) + ", which no buffer has");
    return it->second;
  }

  const WrapperProgram& w_;
  const ShapeEnv& env_;
  size_t index_ = 0;
  std::unordered_map<const Buffer*, State> state_;
  std::unordered_map<const Buffer*, size_t> freed_at_;
  std::unordered_map<const Buffer*, SymExpr> block_;
  std::unordered_set<const Buffer*> outputs_;
  std::unordered_map<int, const Buffer*> by_slot_;
};

}  // namespace

void verify_wrapper(const WrapperProgram& w) { LifecycleCheck(w).run(); }

}  // namespace toroid::codegen::wrapper
