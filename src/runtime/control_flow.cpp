#include "toroid/runtime/control_flow.h"

#include <algorithm>

#include "toroid/support/error.h"

namespace toroid::runtime {

using codegen::wrapper::Line;
using codegen::wrapper::TensorRef;
using ops::HostStorage;
using ops::HostTensor;
using ops::RtValue;

namespace {

std::string scalar_str(sym::Scalar v) {
  return v.type == sym::Type::Float ? std::to_string(v.f) : std::to_string(v.i);
}

bool truth(sym::Scalar v) { return v.type == sym::Type::Float ? v.f != 0 : v.i != 0; }

const SourceLoc& where(const Line& l) { return l.call.loc; }

}  // namespace

sym::Scalar element_value(const HostTensor& t) {
  if (t.numel() != 1)
    user_error("a tensor with " + std::to_string(t.numel()) + " elements has no single value to read");
  if (is_floating(t.dtype())) return sym::Scalar{sym::Type::Float, 0, t.get_double(0)};
  return sym::Scalar{t.dtype() == DType::Bool ? sym::Type::Bool : sym::Type::Int, t.get_int(0), 0};
}

namespace {
void check_range(const Line& l, const sym::SymbolInfo& info, int64_t value, const char* verb) {
  const sym::ValueRange& r = info.range;
  if (value < r.lo || value > r.hi)
    user_error(l.call.op_name + " " + verb + " " + std::to_string(value) + " for " + info.symbol.str() +
                   ", outside its range " + r.str(),
               where(l));
}
}  // namespace

void bind_symbol_defs(const Line& l, const std::vector<std::vector<int64_t>>& produced, const sym::ShapeEnv& env,
                      sym::Binding& binding) {
  for (const codegen::wrapper::SymbolDef& d : l.defs) {
    const std::vector<int64_t>& sizes = produced.at(static_cast<size_t>(d.slot));
    if (d.dim >= sizes.size())
      TOROID_INTERNAL_ERROR("lifecycle: " + d.symbol.str() + " is dim " + std::to_string(d.dim) +
                            " of a result the call before did not produce");
    int64_t value = sizes[d.dim];
    if (auto it = binding.find(d.symbol); it != binding.end()) {
      if (it->second.i != value)
        user_error(l.call.op_name + " produced " + std::to_string(value) + " for " + d.symbol.str() +
                       ", which is already " + std::to_string(it->second.i),
                   where(l));
      continue;
    }
    check_range(l, *env.info(d.symbol), value, "produced");
    binding[d.symbol] = sym::Scalar{sym::Type::Int, value, 0};
  }
}

void bind_scalar_read(const Line& l, sym::Scalar value, const sym::ShapeEnv& env, sym::Binding& binding) {
  SymExpr s = l.scalar;
  const sym::SymbolInfo* info = s.is_symbol() ? env.info(s) : nullptr;
  if (info && info->unbacked) {
    if (s.is_int()) {
      if (value.type == sym::Type::Float) value = sym::Scalar{sym::Type::Int, static_cast<int64_t>(value.f), 0};
      check_range(l, *info, value.i, "read");
      value.type = sym::Type::Int;
    } else if (value.type != sym::Type::Float) {
      value = sym::Scalar{sym::Type::Float, 0, static_cast<double>(value.i)};
    }
    binding[s] = value;  // a loop body's read binds it again each iteration
    return;
  }
  std::optional<sym::Scalar> want = env.evaluate(s, binding);
  if (!want) user_error(l.call.op_name + ": cannot evaluate " + s.str() + " to check the value read", where(l));
  bool same = want->type == sym::Type::Float || value.type == sym::Type::Float
                  ? (want->type == sym::Type::Float ? want->f : static_cast<double>(want->i)) ==
                        (value.type == sym::Type::Float ? value.f : static_cast<double>(value.i))
                  : want->i == value.i;
  if (!same)
    user_error(l.call.op_name + " read " + scalar_str(value) + " but the graph says it is " + s.str() + " = " +
                   scalar_str(*want),
               where(l));
}

void check_assert(const Line& l, const sym::ShapeEnv& env, const sym::Binding& binding) {
  std::optional<sym::Scalar> v = env.evaluate(l.scalar, binding);
  if (!v) user_error(l.call.op_name + ": cannot evaluate " + l.scalar.str() + " (an unbound symbol)", where(l));
  if (!truth(*v)) user_error(l.call.op_name + ": " + l.text + " (" + l.scalar.str() + " is false)", where(l));
}

namespace {

HostTensor like(const HostTensor& t, std::shared_ptr<HostStorage> storage) {
  return HostTensor::from_storage(std::move(storage), t.dtype(), t.sizes(), t.strides(), t.offset());
}

// Each program output i into `into[i]`, unless the program placed it there.
void land(const std::vector<RtValue>& got, const std::vector<HostTensor>& into, const ControlHooks& hooks) {
  for (size_t i = 0; i < into.size(); ++i) {
    const HostTensor& src = got.at(i).tensor();
    if (src.storage() != into[i].storage() || src.offset() != into[i].offset()) hooks.copy(into[i], src);
  }
}

std::vector<std::shared_ptr<HostStorage>> storages(const std::vector<HostTensor>& ts) {
  std::vector<std::shared_ptr<HostStorage>> out;
  for (const HostTensor& t : ts) out.push_back(t.storage());
  return out;
}

bool predicate(const RtValue& v, const ControlHooks& hooks) {
  if (v.is_tensor()) return truth(hooks.read(v.tensor()));
  if (v.is_number()) return v.to_double() != 0;
  user_error("the loop's cond_fn returned no value");
}

// The bytes of the results' slots: a program that writes them counts them in its peak, as the
// caller already has.
int64_t result_bytes(const codegen::wrapper::WrapperProgram& w, const Line& l, const sym::Binding& binding) {
  int64_t n = 0;
  for (const TensorRef& r : l.results) {
    std::optional<sym::Scalar> v = w.env->evaluate(w.slots.at(static_cast<size_t>(r.slot)).nbytes, binding);
    if (!v) user_error("cannot size the results of " + l.call.op_name + " for this call", where(l));
    n += v->i;
  }
  return n;
}

int64_t run_cond(const codegen::wrapper::WrapperProgram& w, const Line& l, const ControlHooks& hooks,
                 const sym::Binding& binding) {
  const sym::ShapeEnv& env = *w.env;
  bool p = false;
  size_t first = 0;
  if (l.scalar.is_null()) {
    p = truth(hooks.read(hooks.view(l.operands.at(0))));
    first = 1;
  } else {
    std::optional<sym::Scalar> v = env.evaluate(l.scalar, binding);
    if (!v) user_error("cannot evaluate the predicate " + l.scalar.str() + " of " + l.call.op_name, where(l));
    p = truth(*v);
  }
  std::vector<RtValue> inputs;
  for (size_t i = first; i < l.operands.size(); ++i) inputs.emplace_back(hooks.view(l.operands[i]));
  std::vector<HostTensor> results;
  for (const TensorRef& r : l.results) results.push_back(hooks.view(r));
  int64_t peak = 0;
  land(hooks.run(p ? 0 : 1, inputs, storages(results), true, &peak), results, hooks);
  return peak - result_bytes(w, l, binding);
}

// Iteration k reads the carried values from where iteration k-1 wrote them (the operands for
// the first) and writes the results' memory when k is even, the second set when odd.
int64_t run_while(const codegen::wrapper::WrapperProgram& w, const Line& l, const ControlHooks& hooks,
                  const sym::Binding& binding) {
  size_t carried = l.results.size();
  std::vector<RtValue> current;
  for (const TensorRef& r : l.operands) current.emplace_back(hooks.view(r));
  std::vector<HostTensor> results, second;
  for (const TensorRef& r : l.results) {
    results.push_back(hooks.view(r));
    second.push_back(like(results.back(), hooks.allocate(results.back().storage()->nbytes())));
  }
  // The second set is as large as the results; the body counts the set it writes.
  int64_t scratch = result_bytes(w, l, binding);
  int64_t most = 0;
  size_t iterations = 0;
  for (;; ++iterations) {
    int64_t held = 0;
    bool go = predicate(hooks.run(0, current, {}, false, &held).at(0), hooks);
    most = std::max(most, held);
    if (!go) break;
    const std::vector<HostTensor>& into = iterations % 2 == 0 ? results : second;
    held = 0;
    land(hooks.run(1, current, storages(into), false, &held), into, hooks);
    most = std::max(most, held - scratch);
    for (size_t i = 0; i < carried; ++i) current[i] = RtValue(into[i]);
  }
  if (iterations == 0) {
    for (size_t i = 0; i < carried; ++i) hooks.copy(results[i], current[i].tensor());
  } else if (iterations % 2 == 0) {  // the last iteration wrote the second set
    for (size_t i = 0; i < carried; ++i) hooks.copy(results[i], second[i]);
  }
  return scratch + most;
}

}  // namespace

int64_t run_control(const codegen::wrapper::WrapperProgram& w, const Line& l, const ControlHooks& hooks,
                    const sym::Binding& binding) {
  if (l.kind == Line::Kind::Cond) return run_cond(w, l, hooks, binding);
  TOROID_CHECK(l.kind == Line::Kind::While, "run_control of a line that is neither cond nor while");
  return run_while(w, l, hooks, binding);
}

}  // namespace toroid::runtime
