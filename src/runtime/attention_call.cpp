#include "toroid/runtime/attention_call.h"

#include <algorithm>
#include <cmath>

namespace toroid::runtime {

namespace {

using codegen::wrapper::CallArg;

bool tensor_arg(const CallArg& a) { return a.kind == CallArg::Kind::Tensor && a.tensor.slot >= 0; }

// The (batch, head, row, col) strides of `t` read at the positions of `batch_dims` output batch
// dims (at most two): its batch dims align on the right, one of size 1 (or one it lacks) read at
// stride 0, as is a row or column dim of size 1 (a mask broadcast over rows). False when `t` has
// more batch dims than that.
bool four_strides(const ops::HostTensor& t, size_t batch_dims, int64_t* s) {
  size_t r = t.sizes().size();
  if (r < 2 || r - 2 > batch_dims) return false;
  std::fill(s, s + 4, 0);
  for (size_t d = 0; d < r; ++d)
    if (t.sizes()[d] != 1) s[d + 2 >= r ? d + 4 - r : 2 - (r - 2) + d] = t.strides()[d];
  return true;
}

}  // namespace

std::optional<AttentionOperands> attention_operands(
    const codegen::wrapper::ReferenceCall& c, const std::function<ops::HostTensor(const codegen::wrapper::TensorRef&)>& view,
    const std::function<ops::HostTensor(const codegen::wrapper::ReferenceCall::Result&)>& result,
    const std::function<double(SymExpr)>& real) {
  if (c.args.size() != 8 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[1]) || !tensor_arg(c.args[2]) ||
      c.results.size() != 1 || c.results[0].ref.sizes.size() < 2 || c.results[0].ref.sizes.size() > 4 ||
      !c.args[5].scalar.is_constant() || !c.args[7].scalar.is_constant())
    return std::nullopt;
  AttentionOperands a;
  a.q = view(c.args[0].tensor);
  a.k = view(c.args[1].tensor);
  a.v = view(c.args[2].tensor);
  size_t batch_dims = c.results[0].ref.sizes.size() - 2;
  if (tensor_arg(c.args[3])) {
    a.mask = view(c.args[3].tensor);
    if (!four_strides(*a.mask, batch_dims, a.mask_strides)) return std::nullopt;
  }
  if (!four_strides(a.q, batch_dims, a.q_strides) || !four_strides(a.k, batch_dims, a.k_strides) ||
      !four_strides(a.v, batch_dims, a.v_strides))
    return std::nullopt;
  a.out = result(c.results[0]);
  if (!four_strides(a.out, batch_dims, a.out_strides)) return std::nullopt;
  const std::vector<int64_t>& out = a.out.sizes();
  a.batch = batch_dims == 2 ? out[0] : 1;
  a.heads = batch_dims >= 1 ? out[batch_dims - 1] : 1;
  a.L = a.q.size(-2);
  a.E = a.q.size(-1);
  a.S = a.k.size(-2);
  a.Ev = a.v.size(-1);
  int64_t key_heads = a.k.dim() >= 3 ? a.k.size(-3) : 1;
  if (c.args[7].scalar == SymExpr::boolean(true) && key_heads > 0 && key_heads != a.heads) {
    a.group = a.heads / key_heads;
    a.k_strides[1] = a.k.strides()[a.k.sizes().size() - 3];  // read at head / group, not broadcast
    a.v_strides[1] = a.v.strides()[a.v.sizes().size() - 3];
  }
  a.causal = c.args[5].scalar == SymExpr::boolean(true);
  a.scale = c.args[6].kind == CallArg::Kind::Scalar ? real(c.args[6].scalar) : 1.0 / std::sqrt(static_cast<double>(a.E));
  return a;
}

}  // namespace toroid::runtime
