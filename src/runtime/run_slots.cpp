#include "toroid/runtime/run_slots.h"

#include <algorithm>
#include <optional>

#include "toroid/support/error.h"

namespace toroid::runtime {

using codegen::wrapper::Line;

void RunSlots::init(const codegen::wrapper::WrapperProgram& w, int num_slots) {
  reused.assign(static_cast<size_t>(num_slots), false);
  for (const Line& l : w.lines)
    if (l.kind == Line::Kind::Reuse) reused[static_cast<size_t>(l.from->id)] = true;
}

namespace {
// Holds the storage a rebased slot points into, and releases nothing itself.
struct KeepAlive : ops::HostStorage::Releaser {
  explicit KeepAlive(std::shared_ptr<ops::HostStorage> s) : storage(std::move(s)) {}
  void release(std::byte*, size_t) noexcept override {}
  std::shared_ptr<ops::HostStorage> storage;
};
}  // namespace

void RunSlots::start(const loop::LoopProgram& p, const std::vector<ops::RtValue>& inputs,
                     const std::vector<std::shared_ptr<ops::HostStorage>>& constants,
                     std::vector<std::shared_ptr<ops::HostStorage>> bound_outputs, const sym::Binding& binding) {
  slots.assign(reused.size(), nullptr);
  freed.assign(reused.size(), nullptr);
  bound = std::move(bound_outputs);
  live = peak = 0;
  for (const loop::Buffer* in : p.inputs) {
    if (!in) continue;
    const ops::RtValue& v = inputs.at(static_cast<size_t>(in->input_index));
    if (!v.is_tensor()) user_error("input " + std::to_string(in->input_index) + " must be a tensor");
    const ops::HostTensor& t = v.tensor();
    std::optional<sym::Scalar> want = p.graph->shape_env().evaluate(in->offset, binding);
    int64_t offset = want ? want->i : t.offset();
    if (offset == t.offset() || !t.storage()->data()) {
      slots[static_cast<size_t>(in->id)] = t.storage();
      continue;
    }
    // The slot's memory starts `offset` elements before the tensor's first element: no kernel
    // reads below that element (every read is at the graph's offset or past it).
    auto es = static_cast<int64_t>(dtype_size(t.dtype()));
    std::byte* first = t.storage()->data() + t.offset() * es;
    auto keep = std::make_shared<KeepAlive>(t.storage());
    slots[static_cast<size_t>(in->id)] = std::make_shared<ops::HostStorage>(
        first - offset * es, t.storage()->nbytes() - static_cast<size_t>(t.offset() * es) + static_cast<size_t>(offset * es),
        keep);
  }
  for (size_t i = 0; i < constants.size() && i < slots.size(); ++i)
    if (constants[i]) slots[i] = constants[i];
}

void RunSlots::count(int64_t nbytes) {
  live += nbytes;
  peak = std::max(peak, live);
}

void RunSlots::reuse(const Line& l) {
  auto id = static_cast<size_t>(l.buffer->id);
  if (const auto& mine = bound[id])
    slots[id] = mine;
  else
    slots[id] = std::move(freed[static_cast<size_t>(l.from->id)]);
}

void RunSlots::free(const Line& l) {
  // Memory a later line reuses stays held (and counted); the rest is released.
  auto id = static_cast<size_t>(l.buffer->id);
  auto& s = slots[id];
  if (reused[id]) {
    freed[id] = std::move(s);
  } else {
    if (s) live -= static_cast<int64_t>(s->nbytes());
    s.reset();
  }
}

void RunSlots::finish() {
  slots.clear();
  freed.clear();
  bound.clear();
}

}  // namespace toroid::runtime
