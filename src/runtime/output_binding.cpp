#include "toroid/runtime/output_binding.h"

#include <algorithm>
#include <optional>

#include "toroid/ops/registry.h"

namespace toroid::runtime {

std::vector<int> bindable_output_slots(const loop::LoopProgram& p) {
  std::vector<int> out;
  for (const loop::OutputRef& r : p.outputs) {
    int slot = -1;
    if (r.value && r.buffer) {
      const loop::Buffer* b = r.buffer->storage;
      bool owned = b->kind != loop::BufferKind::Input && b->kind != loop::BufferKind::Constant;
      // An output that views its buffer at an offset, or shares it with an earlier output, is
      // copied out after the run instead (the caller's memory holds only the output's span).
      std::optional<int64_t> offset = r.value->meta().offset.as_int();
      if (owned && offset == std::optional<int64_t>(0) && std::find(out.begin(), out.end(), b->id) == out.end())
        slot = b->id;
    }
    out.push_back(slot);
  }
  return out;
}

std::vector<std::shared_ptr<ops::HostStorage>> bind_outputs(const loop::LoopProgram& p, const std::vector<int>& slots,
                                                            const std::vector<std::shared_ptr<ops::HostStorage>>& outputs,
                                                            size_t num_slots, const sym::Binding& binding) {
  std::vector<std::shared_ptr<ops::HostStorage>> bound(num_slots);
  const ShapeEnv& env = p.graph->shape_env();
  for (size_t i = 0; i < slots.size() && i < outputs.size(); ++i) {
    if (slots[i] < 0 || !outputs[i]) continue;
    const loop::Buffer* b = p.outputs[i].buffer->storage;
    std::optional<sym::Scalar> numel = env.evaluate(b->storage_numel, binding);
    if (numel && static_cast<size_t>(numel->i) * dtype_size(b->dtype) <= outputs[i]->nbytes())
      bound[static_cast<size_t>(slots[i])] = outputs[i];
  }
  return bound;
}

std::vector<ops::RtValue> collect_outputs(const loop::LoopProgram& p, const sym::ShapeEnv& env,
                                          const sym::Binding& binding, const std::vector<ops::RtValue>& inputs,
                                          const std::function<ops::RtValue(const Value*)>& view) {
  std::vector<ops::RtValue> out;
  for (const loop::OutputRef& o : p.outputs) {
    if (o.value) {
      out.push_back(view(o.value));
    } else if (o.input_index >= 0) {
      out.push_back(inputs.at(static_cast<size_t>(o.input_index)));
    } else if (o.scalar) {
      std::optional<sym::Scalar> s = env.evaluate(o.scalar, binding);
      out.push_back(s ? ops::rt_scalar(*s) : ops::RtValue());
    } else {
      out.emplace_back();
    }
  }
  return out;
}

}  // namespace toroid::runtime
