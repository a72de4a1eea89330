#include "toroid/runtime/output_binding.h"

#include <optional>

#include "toroid/support/error.h"

namespace toroid::runtime {

using codegen::wrapper::OutputPlan;
using codegen::wrapper::WrapperProgram;

namespace {

int64_t eval_layout(const WrapperProgram& w, const sym::Binding& b, SymExpr e, const std::string& what) {
  std::optional<sym::Scalar> v = w.env->evaluate(e, b);
  if (!v) user_error(what + " depends on data (" + e.str() + "): use toroid_run for this graph");
  return v->i;
}

}  // namespace

int64_t view_extent(std::span<const int64_t> sizes, std::span<const int64_t> strides, const std::string& what) {
  for (int64_t s : sizes)
    if (s == 0) return 0;
  int64_t e = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(e, step, &e))
      user_error(what + ": sizes and strides reach past 2^63 elements");
  }
  return e;
}

std::vector<std::shared_ptr<ops::HostStorage>> bind_outputs(const WrapperProgram& w,
                                                            const std::vector<std::shared_ptr<ops::HostStorage>>& outputs,
                                                            const sym::Binding& binding) {
  std::vector<std::shared_ptr<ops::HostStorage>> bound(w.slots.size());
  const std::vector<OutputPlan>& plan = w.outputs();
  for (size_t i = 0; i < plan.size() && i < outputs.size(); ++i) {
    if (!plan[i].bindable || !outputs[i]) continue;
    auto slot = static_cast<size_t>(plan[i].tensor.slot);
    std::optional<sym::Scalar> nbytes = w.env->evaluate(w.slots[slot].nbytes, binding);
    if (nbytes && static_cast<size_t>(nbytes->i) <= outputs[i]->nbytes()) bound[slot] = outputs[i];
  }
  return bound;
}

std::vector<bool> slots_in_caller_memory(const WrapperProgram& w, const sym::Binding& binding) {
  std::vector<bool> given(w.slots.size());
  const std::vector<OutputPlan>& plan = w.outputs();
  std::vector<OutputLayout> layouts = describe_outputs(w, binding);
  for (size_t i = 0; i < plan.size(); ++i) {
    const OutputLayout& o = layouts[i];
    if (!plan[i].bindable || o.is_scalar || o.alias_input >= 0 || o.alias_output >= 0) continue;
    auto slot = static_cast<size_t>(plan[i].tensor.slot);
    std::optional<sym::Scalar> nbytes = w.env->evaluate(w.slots[slot].nbytes, binding);
    int64_t span = view_extent(o.sizes, o.strides, "output " + std::to_string(i)) * static_cast<int64_t>(dtype_size(o.dtype));
    if (nbytes && nbytes->i <= span) given[slot] = true;
  }
  return given;
}

std::vector<OutputLayout> describe_outputs(const WrapperProgram& w, const sym::Binding& b) {
  std::vector<OutputLayout> out;
  const std::vector<OutputPlan>& plan = w.outputs();
  for (size_t i = 0; i < plan.size(); ++i) {
    const OutputPlan& o = plan[i];
    OutputLayout info;
    if (o.kind != OutputPlan::Kind::Tensor) {
      info.is_scalar = true;
      out.push_back(info);
      continue;
    }
    std::string what = "output " + std::to_string(i);
    info.dtype = o.tensor.dtype;
    for (size_t d = 0; d < o.tensor.sizes.size(); ++d) {
      info.sizes.push_back(eval_layout(w, b, o.tensor.sizes[d], what + "'s size"));
      info.strides.push_back(eval_layout(w, b, o.tensor.strides[d], what + "'s stride"));
    }
    int64_t offset = eval_layout(w, b, o.tensor.offset, what + "'s offset");
    if (o.input_index >= 0) {
      info.alias_input = o.input_index;
      info.offset = offset - eval_layout(w, b, o.input_offset, "input offset");
    }
    // A view of an earlier output that starts its buffer, inside that output's span; any other
    // sharing is given memory of its own (the run copies it out).
    for (size_t j = 0; j < i && info.alias_input < 0 && info.alias_output < 0; ++j) {
      const OutputLayout& e = out[j];
      if (e.is_scalar || e.alias_input >= 0 || e.alias_output >= 0 || plan[j].tensor.slot != o.tensor.slot) continue;
      if (eval_layout(w, b, plan[j].tensor.offset, "offset") != 0) continue;
      if (offset + view_extent(info.sizes, info.strides, "output") > view_extent(e.sizes, e.strides, "output")) continue;
      info.alias_output = static_cast<int>(j);
      info.offset = offset;
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<ops::RtValue> collect_outputs(const WrapperProgram& w, const sym::Binding& binding,
                                          const std::vector<ops::RtValue>& inputs,
                                          const std::function<ops::RtValue(const codegen::wrapper::TensorRef&)>& view) {
  std::vector<ops::RtValue> out;
  for (const OutputPlan& o : w.outputs()) {
    switch (o.kind) {
      case OutputPlan::Kind::Tensor: out.push_back(view(o.tensor)); break;
      case OutputPlan::Kind::Input: out.push_back(inputs.at(static_cast<size_t>(o.input_index))); break;
      case OutputPlan::Kind::Scalar: {
        std::optional<sym::Scalar> s = w.env->evaluate(o.scalar, binding);
        out.push_back(s ? ops::rt_scalar(*s) : ops::RtValue());
        break;
      }
      case OutputPlan::Kind::None: out.emplace_back(); break;
    }
  }
  return out;
}

}  // namespace toroid::runtime
