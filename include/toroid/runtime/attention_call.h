// A scaled_dot_product_attention line's operands as the fused kernels read them (the CPU's
// generated one and the GPU's device kernel): every tensor as (batch, head, row, col) element
// strides, shared by both executors.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/host_tensor.h"

namespace toroid::runtime {

struct AttentionOperands {
  ops::HostTensor q, k, v, out;
  std::optional<ops::HostTensor> mask;  // bool (allowed where true) or additive
  // Element strides of dims (batch, head, row, col), 0 where a dim broadcasts (or is missing).
  int64_t q_strides[4] = {}, k_strides[4] = {}, v_strides[4] = {}, mask_strides[4] = {}, out_strides[4] = {};
  int64_t batch = 1, heads = 1, L = 0, S = 0, E = 0, Ev = 0;
  int64_t group = 1;  // query heads per key head (enable_gqa)
  double scale = 1.0;
  bool causal = false;
};

// The operands of `call` (aten.scaled_dot_product_attention.default: query, key, value,
// attn_mask, dropout_p, is_causal, scale, enable_gqa); `view` gives an argument's tensor,
// `result` the result's (allocating it), `real` evaluates a scalar. None where the fused kernels
// do not take them (more than two batch dims, a mask of rank below 2, a flag only the run knows):
// the reference kernel runs it then.
std::optional<AttentionOperands> attention_operands(
    const codegen::wrapper::ReferenceCall& call,
    const std::function<ops::HostTensor(const codegen::wrapper::TensorRef&)>& view,
    const std::function<ops::HostTensor(const codegen::wrapper::ReferenceCall::Result&)>& result,
    const std::function<double(SymExpr)>& real);

}  // namespace toroid::runtime
