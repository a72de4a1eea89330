// The loop IR verifier: the structural invariants every pass over a LoopProgram keeps.
#include <unordered_map>
#include <unordered_set>

#include "toroid/loop/lower.h"
#include "toroid/support/error.h"

namespace toroid::loop {

namespace {

class ProgramCheck {
 public:
  explicit ProgramCheck(const LoopProgram& p) : p_(p), env_(p.graph->shape_env()) {}

  void run() {
    for (size_t i = 0; i < p_.buffers.size(); ++i) {
      const Buffer* b = p_.buffers[i].get();
      if (!b) fail("buffer " + std::to_string(i) + " is null");
      if (!ids_.insert(b->id).second) fail(b->name + ": id " + std::to_string(b->id) + " is taken by another buffer");
      position_[b] = i;
    }
    for (const auto& b : p_.buffers) buffer(*b);
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      const Buffer* b = p_.inputs[i];
      if (b && (!known(b) || b->kind != BufferKind::Input || b->input_index != static_cast<int>(i)))
        fail("input " + std::to_string(i) + " is not an Input buffer of the program with that position");
    }
    for (const OutputRef& o : p_.outputs)
      if (o.buffer && !known(o.buffer)) fail("an output names a buffer that is not in the program");
    for (const auto& [storage, owner] : p_.owners)
      if (!known(owner) || owner->storage != owner) fail("the owner of a storage is not a buffer that owns its memory");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { TOROID_INTERNAL_ERROR("loop verifier: " + why); }
  [[noreturn]] void fail(const Buffer& b, const std::string& why) const {
    TOROID_INTERNAL_ERROR("loop verifier: " + b.name + " (" + buffer_kind_name(b.kind) + "): " + why);
  }
  bool known(const Buffer* b) const { return position_.count(b) != 0; }

  // A size, stride or index: its symbols are the graph's, or the index variables in `vars`.
  void symbols_of(const Buffer& b, SymExpr e, const std::unordered_set<SymExpr>& vars, const char* what) const {
    if (e.is_null()) fail(b, std::string("a null ") + what);
    for (SymExpr s : e.free_symbols())
      if (!vars.count(s) && env_.lookup(s.symbol().name) != s)
        fail(b, std::string(what) + " " + e.str() + " uses " + s.str() +
                    ", which is neither a symbol of the graph nor an index variable of this buffer");
  }

  void read(const Buffer& b, const Buffer* r) const {
    if (!known(r)) fail(b, "reads a buffer that is not in the program");
    if (position_.at(r) >= position_.at(&b)) fail(b, "reads " + r->name + ", which comes later (buffers are in dependency order)");
  }

  void buffer(const Buffer& b) const {
    if (b.sizes.size() != b.strides.size())
      fail(b, std::to_string(b.sizes.size()) + " sizes but " + std::to_string(b.strides.size()) + " strides");
    const std::unordered_set<SymExpr> none;
    for (SymExpr s : b.sizes) symbols_of(b, s, none, "size");
    for (SymExpr s : b.strides) symbols_of(b, s, none, "stride");
    symbols_of(b, b.offset, none, "offset");
    if (!b.storage || !known(b.storage)) fail(b, "its storage is not a buffer of the program");
    if (b.storage != &b && b.kind == BufferKind::Fallback) {
      in_place(b);
    } else if (b.storage != &b && b.kind != BufferKind::UserKernel &&
               (b.storage->kind != BufferKind::Input || b.storage->storage != b.storage)) {
      fail(b, "writes the memory of " + b.storage->name + ", which is not a graph input owning its memory");
    }
    if (b.storage != &b && b.kind == BufferKind::UserKernel &&
        (b.storage->storage != b.storage || b.storage->kind == BufferKind::Input || b.storage->kind == BufferKind::Constant ||
         !b.storage->holds_memory()))
      fail(b, "a user kernel writes the memory of " + b.storage->name + ", which is not an intermediate owning its memory");
    if (b.storage == &b && b.kind != BufferKind::Input) symbols_of(b, b.storage_numel, none, "storage size");
    if (b.is_computed() != static_cast<bool>(b.body)) fail(b, b.body ? "has a body but is not computed" : "has no body");
    if (b.kind != BufferKind::Reduction && !b.reduction_sizes.empty()) fail(b, "reduction sizes outside a reduction");
    switch (b.kind) {
      case BufferKind::Input:
        if (b.input_index < 0 || static_cast<size_t>(b.input_index) >= p_.inputs.size() ||
            p_.inputs[static_cast<size_t>(b.input_index)] != &b)
          fail(b, "input position " + std::to_string(b.input_index) + " is not its place among the program's inputs");
        break;
      case BufferKind::Constant:
        if (!b.constant) fail(b, "no constant node");
        break;
      case BufferKind::Extern: {
        if (!b.node) fail(b, "no graph call");
        if (b.library_operands.empty()) fail(b, "a library call with no operands");
        const LibraryKernel* k = find_library_kernel(b.node->target(), b.dtype, p_.target.device, b.result_index);
        if (!k || k->call != b.library || runs_as_fallback(k->call))
          fail(b, std::string("calls the library's ") + library_call_name(b.library) + ", which the table has not for " +
                      b.node->target() + " in " + dtype_short_name(b.dtype) + " on " + p_.target.device_name());
        break;
      }
      case BufferKind::Fallback: {
        if (!b.node) fail(b, "no graph call");
        const LibraryKernel* k = b.on_device ? find_library_kernel(b.node->target(), b.dtype, p_.target.device) : nullptr;
        if (b.on_device && (!k || k->call != b.library || !runs_as_fallback(k->call)))
          fail(b, std::string("runs the device's ") + library_call_name(b.library) + ", which the table has not for " +
                      b.node->target() + " on " + p_.target.device_name());
        break;
      }
      case BufferKind::Scalar:
        if (!b.node || !b.scalar) fail(b, "a scalar step without its call or value");
        if (b.library_operands.size() > 1) fail(b, "a scalar read of more than one tensor");
        break;
      case BufferKind::UserKernel:
        if (!b.node || b.result_index >= b.node->num_results()) fail(b, "no graph call or no such result of it");
        break;
      case BufferKind::Control:
        if (!b.node) fail(b, "no graph call");
        for (const auto& sub : b.subprograms) {
          if (!sub) fail(b, "a missing subprogram");
          verify_program(*sub);
        }
        break;
      case BufferKind::Pointwise:
      case BufferKind::Reduction: body(b); break;
    }
    for (const Buffer* r : b.reads()) read(b, r);
  }

  // A fallback in its first operand's memory (Lowering::updatable_operand): a device call that
  // updates that operand, which is an intermediate owning its memory, read by this call alone.
  void in_place(const Buffer& b) const {
    const Buffer& m = *b.storage;
    if (!b.on_device || !updates_first_operand(b.library) || !b.node || b.result_index != 0)
      fail(b, "writes the memory of " + m.name + ", but is not a call that updates its first operand");
    if (m.storage != &m || m.kind == BufferKind::Input || m.kind == BufferKind::Constant || !m.holds_memory())
      fail(b, "updates " + m.name + " in place, which is not an intermediate owning its memory");
    const Argument& self = b.node->args().at(0);
    auto owner = self.is_value() && self.value()->is_tensor() ? p_.owners.find(self.value()->meta().storage) : p_.owners.end();
    if (owner == p_.owners.end() || owner->second != &m)
      fail(b, "updates " + m.name + " in place, which does not hold the call's first operand");
    if (self.value()->users().size() != 1)
      fail(b, "updates " + m.name + " in place, which another call reads too");
  }

  void body(const Buffer& b) const {
    std::unordered_set<SymExpr> vars;
    for (size_t k = 0; k < b.sizes.size(); ++k) vars.insert(index_var(k));
    for (size_t k = 0; k < b.reduction_sizes.size(); ++k) {
      symbols_of(b, b.reduction_sizes[k], {}, "reduction size");
      vars.insert(reduction_var(k));
    }
    visit(b.body, [&](Expr e) {
      if (e.op() != Op::Load && e.op() != Op::Index && e.op() != Op::IndirectLoad) return;
      symbols_of(b, e.index(), vars, "index");
      if (e.op() == Op::IndirectLoad)
        for (size_t k = 0; k < e.operands().size(); ++k) {
          symbols_of(b, e.stride(k), vars, "gather stride");
          symbols_of(b, e.size(k), vars, "gather size");
        }
    });
  }

  const LoopProgram& p_;
  const ShapeEnv& env_;
  std::unordered_set<int> ids_;
  std::unordered_map<const Buffer*, size_t> position_;
};

}  // namespace

void verify_program(const LoopProgram& program) {
  if (!program.graph) TOROID_INTERNAL_ERROR("loop verifier: the program has no graph");
  ProgramCheck(program).run();
}

}  // namespace toroid::loop
