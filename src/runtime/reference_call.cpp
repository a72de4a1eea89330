#include "toroid/runtime/reference_call.h"

#include "toroid/ops/registry.h"

namespace toroid::runtime {

using codegen::wrapper::CallArg;

namespace {

ops::RtValue evaluate(const CallArg& a, const sym::ShapeEnv& env, const sym::Binding& binding,
                      const std::function<ops::RtValue(const codegen::wrapper::TensorRef&)>& tensor, const SourceLoc& loc) {
  switch (a.kind) {
    case CallArg::Kind::Constant: return a.constant;
    case CallArg::Kind::Scalar: {
      std::optional<sym::Scalar> s = env.evaluate(a.scalar, binding);
      if (!s) user_error("cannot evaluate " + a.scalar.str() + " for this call (unbound symbol)", loc);
      return ops::rt_scalar(*s);
    }
    case CallArg::Kind::Tensor: return a.tensor.slot < 0 ? ops::RtValue() : tensor(a.tensor);
    case CallArg::Kind::List: {
      ops::RtValue::List l;
      for (const CallArg& e : a.list) l.push_back(evaluate(e, env, binding, tensor, loc));
      return ops::RtValue(std::move(l));
    }
  }
  return {};
}

}  // namespace

std::vector<ops::RtValue> run_reference(const codegen::wrapper::ReferenceCall& call, const sym::ShapeEnv& env,
                                        const sym::Binding& binding,
                                        const std::function<ops::RtValue(const codegen::wrapper::TensorRef&)>& tensor) {
  std::vector<ops::RtValue> values;
  for (const CallArg& a : call.args) values.push_back(evaluate(a, env, binding, tensor, call.loc));
  ops::RtArgs args(call.op->schema, std::move(values));
  uint64_t philox_offset = 0;
  ops::KernelContext ctx{0, &philox_offset};
  try {
    return ops::run_kernel(*call.op, args, ctx);
  } catch (const UserError& e) {
    if (e.loc().known()) throw;
    user_error(e.message(), call.loc);
  }
}

}  // namespace toroid::runtime
