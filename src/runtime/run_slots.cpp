#include "toroid/runtime/run_slots.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "toroid/support/env.h"
#include "toroid/support/error.h"

namespace toroid::runtime {

using codegen::wrapper::Line;

int64_t eval_int(const sym::ShapeEnv& env, const sym::Binding& binding, SymExpr e) {
  if (e.kind() == sym::Kind::IntConst) return e.int_value();  // a static graph's sizes: every call
  std::optional<sym::Scalar> v = env.evaluate(e, binding);
  if (!v) user_error("cannot evaluate " + e.str() + " for this call (unbound symbol)");
  return v->i;
}

std::vector<int64_t> eval_ints(const sym::ShapeEnv& env, const sym::Binding& binding, const std::vector<SymExpr>& v) {
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (SymExpr e : v) out.push_back(eval_int(env, binding, e));
  return out;
}

int64_t symbol_word(const sym::Scalar& value) {
  if (value.type != sym::Type::Float) return value.i;
  int64_t bits;
  std::memcpy(&bits, &value.f, sizeof bits);
  return bits;
}

double eval_real(const sym::ShapeEnv& env, const sym::Binding& binding, SymExpr e) {
  std::optional<sym::Scalar> v = env.evaluate(e, binding);
  if (!v) user_error("cannot evaluate " + e.str() + " for this call (unbound symbol)");
  return v->type == sym::Type::Float ? v->f : static_cast<double>(v->i);
}

bool lifecycle_verification() {
  return env_flag("TOROID_VERIFY_LIFECYCLE").value_or(false);
}

void RunSlots::init(const codegen::wrapper::WrapperProgram& w) {
  reused.assign(w.slots.size(), false);
  names.clear();
  for (const codegen::wrapper::Slot& s : w.slots) names.push_back(s.name);
  for (const Line& l : w.lines)
    if (l.kind == Line::Kind::Reuse) reused[static_cast<size_t>(l.from)] = true;
  verify = lifecycle_verification();
  pool_bytes.assign(w.pools.size(), 0);
  if (!fill) fill = [](ops::HostStorage& s, unsigned char byte) { std::memset(s.data(), byte, s.nbytes()); };
}

namespace {
// Holds the storage a rebased slot points into, and releases nothing itself.
struct KeepAlive : ops::HostStorage::Releaser {
  explicit KeepAlive(std::shared_ptr<ops::HostStorage> s) : storage(std::move(s)) {}
  void release(std::byte*, size_t) noexcept override {}
  std::shared_ptr<ops::HostStorage> storage;
};
}  // namespace

void RunSlots::start(const codegen::wrapper::WrapperProgram& w, const std::vector<ops::RtValue>& inputs,
                     const std::vector<std::shared_ptr<ops::HostStorage>>& constants,
                     std::vector<std::shared_ptr<ops::HostStorage>> bound_outputs, const sym::Binding& binding) {
  slots.assign(reused.size(), nullptr);
  freed.assign(reused.size(), nullptr);
  counted.assign(reused.size(), 0);
  freed_at.assign(reused.size(), -1);
  bound = std::move(bound_outputs);
  pools.assign(pool_bytes.size(), nullptr);
  for (std::vector<int64_t>& sizes : produced) sizes.clear();  // keeps each one's memory
  produced.resize(reused.size());
  call_symbols.clear();
  live = peak = 0;
  for (const codegen::wrapper::InputSlot& in : w.inputs) {
    const ops::RtValue& v = inputs.at(static_cast<size_t>(in.index));
    if (!v.is_tensor()) user_error("input " + std::to_string(in.index) + " must be a tensor");
    const ops::HostTensor& t = v.tensor();
    int64_t offset = t.offset();
    if (std::optional<int64_t> c = in.offset.as_int()) {  // the usual case, without the evaluator
      offset = *c;
    } else if (std::optional<sym::Scalar> want = w.env->evaluate(in.offset, binding)) {
      offset = want->i;
    }
    if (offset == t.offset() || !t.storage()->data()) {
      slots[static_cast<size_t>(in.slot)] = t.storage();
      continue;
    }
    // The slot's memory starts `offset` elements before the tensor's first element: no kernel
    // reads below that element (every read is at the graph's offset or past it).
    auto es = static_cast<int64_t>(dtype_size(t.dtype()));
    std::byte* first = t.storage()->data() + t.offset() * es;
    auto keep = std::make_shared<KeepAlive>(t.storage());
    slots[static_cast<size_t>(in.slot)] = std::make_shared<ops::HostStorage>(
        first - offset * es, t.storage()->nbytes() - static_cast<size_t>(t.offset() * es) + static_cast<size_t>(offset * es),
        keep);
  }
  for (size_t i = 0; i < constants.size() && i < slots.size(); ++i)
    if (constants[i]) slots[i] = constants[i];
}

void RunSlots::count(int slot, int64_t nbytes) {
  counted[static_cast<size_t>(slot)] = nbytes;
  live += nbytes;
  peak = std::max(peak, live);
}

void RunSlots::reuse(const Line& l, int64_t nbytes) {
  auto id = static_cast<size_t>(l.slot);
  auto from = static_cast<size_t>(l.from);
  if (!freed[from])
    TOROID_INTERNAL_ERROR("lifecycle: " + names[id] + " reuses the block of " + names[from] + ", which holds no freed memory");
  counted[id] = counted[from];
  if (const auto& mine = bound[id]) {
    slots[id] = mine;  // the freed block stays held (and counted) to the run's end
  } else {
    slots[id] = std::move(freed[from]);
    if (static_cast<int64_t>(slots[id]->nbytes()) < nbytes)
      TOROID_INTERNAL_ERROR("lifecycle: " + names[id] + " needs " + std::to_string(nbytes) + " bytes; the block of " +
                            names[from] + " it reuses holds " + std::to_string(slots[id]->nbytes()));
  }
}

void RunSlots::free(const Line& l, size_t line) {
  // Memory a later line reuses stays held (and counted); the rest is released.
  auto id = static_cast<size_t>(l.slot);
  auto& s = slots[id];
  if (!s) TOROID_INTERNAL_ERROR("lifecycle: line " + std::to_string(line + 1) + " frees " + names[id] + ", which holds no memory");
  if (verify) fill(*s, 0xff);
  freed_at[id] = static_cast<int>(line);
  if (reused[id]) {
    freed[id] = std::move(s);
  } else {
    live -= counted[id];
    s.reset();
  }
}

void RunSlots::pool_alloc(const Line& l, std::shared_ptr<ops::HostStorage> memory, int64_t nbytes) {
  auto p = static_cast<size_t>(l.pool);
  pools.at(p) = std::move(memory);
  pool_bytes[p] = nbytes;
  live += nbytes;
  peak = std::max(peak, live);
}

void RunSlots::place_in_pool(const Line& l, int64_t offset, int64_t nbytes, size_t line) {
  auto id = static_cast<size_t>(l.slot);
  const auto& pool = pools.at(static_cast<size_t>(l.pool));
  if (!pool)
    TOROID_INTERNAL_ERROR("lifecycle: line " + std::to_string(line + 1) + " places " + names[id] +
                          " in a pool that holds no memory");
  if (offset < 0 || offset + nbytes > static_cast<int64_t>(pool->nbytes()))
    TOROID_INTERNAL_ERROR("lifecycle: line " + std::to_string(line + 1) + " places " + names[id] + " (" +
                          std::to_string(nbytes) + " bytes at " + std::to_string(offset) + ") outside its pool of " +
                          std::to_string(pool->nbytes()) + " bytes");
  slots[id] = std::make_shared<ops::HostStorage>(pool->data() + offset, static_cast<size_t>(nbytes),
                                                 std::make_shared<KeepAlive>(pool));
  counted[id] = 0;  // the pool's bytes are counted once, by its PoolAlloc
}

void RunSlots::pool_free(const Line& l, size_t line) {
  auto p = static_cast<size_t>(l.pool);
  if (!pools.at(p))
    TOROID_INTERNAL_ERROR("lifecycle: line " + std::to_string(line + 1) + " frees a pool that holds no memory");
  if (verify && pools[p].use_count() > 1)
    TOROID_INTERNAL_ERROR("lifecycle: line " + std::to_string(line + 1) + " frees a pool a live buffer is still in");
  pools[p].reset();
  live -= pool_bytes[p];
}

void RunSlots::produced_sizes(const codegen::wrapper::ReferenceCall& call,
                              const codegen::wrapper::ReferenceCall::Result& r, const std::vector<int64_t>& sizes,
                              const sym::ShapeEnv& env, sym::Binding& binding) {
  produced.at(static_cast<size_t>(r.ref.slot)) = sizes;
  bool same = sizes.size() == r.ref.sizes.size();
  for (size_t d = 0; same && d < sizes.size(); ++d) {
    SymExpr want = r.ref.sizes[d];
    if (want.is_symbol() && !binding.count(want)) {
      binding[want] = sym::Scalar{sym::Type::Int, sizes[d], 0};
      call_symbols.push_back(want);
      continue;
    }
    std::optional<sym::Scalar> v = env.evaluate(want, binding);
    same = v && v->i == sizes[d];
  }
  if (same) return;
  std::string got = "[", planned = "[", value = "[";
  for (size_t d = 0; d < sizes.size(); ++d) got += (d ? ", " : "") + std::to_string(sizes[d]);
  for (size_t d = 0; d < r.ref.sizes.size(); ++d) {
    std::optional<sym::Scalar> v = env.evaluate(r.ref.sizes[d], binding);
    planned += (d ? ", " : "") + r.ref.sizes[d].str();
    value += (d ? ", " : "") + (v ? std::to_string(v->i) : std::string("?"));
  }
  user_error(call.op_name + ": result " + std::to_string(r.index) + " came out with sizes " + got +
                 "], but the graph says " + planned + "] = " + value + "]",
             call.loc);
}

void RunSlots::end_call(sym::Binding& binding) {
  for (SymExpr s : call_symbols) binding.erase(s);
  call_symbols.clear();
}

const std::shared_ptr<ops::HostStorage>& RunSlots::memory(int slot, size_t line) const {
  const auto& s = slots.at(static_cast<size_t>(slot));
  if (s) return s;
  int at = freed_at.at(static_cast<size_t>(slot));
  TOROID_INTERNAL_ERROR("lifecycle: line " + std::to_string(line + 1) + " uses " + names.at(static_cast<size_t>(slot)) +
                        (at >= 0 ? ", which line " + std::to_string(at + 1) + " freed" : ", which holds no memory yet"));
}

ops::HostTensor RunSlots::view(const codegen::wrapper::TensorRef& r, size_t line, const sym::ShapeEnv& env,
                               const sym::Binding& binding) const {
  return ops::HostTensor::from_storage(memory(r.slot, line), r.dtype, eval_ints(env, binding, r.sizes),
                                       eval_ints(env, binding, r.strides), eval_int(env, binding, r.offset));
}

int64_t RunSlots::check_peak(const codegen::wrapper::WrapperProgram& w, const sym::Binding& binding) const {
  std::optional<sym::Scalar> planned = w.env->evaluate(w.planned_peak_bytes, binding);
  if (!planned)
    TOROID_INTERNAL_ERROR("lifecycle: the planned peak " + w.planned_peak_bytes.str() + " cannot be evaluated after the run");
  if (verify && peak > planned->i)
    TOROID_INTERNAL_ERROR("lifecycle: the run held " + std::to_string(peak) + " bytes at once, more than the " +
                          std::to_string(planned->i) + " its plan allows (" + w.planned_peak_bytes.str() + ")");
  return planned->i;
}

void RunSlots::finish() {
  slots.clear();
  pools.clear();
  freed.clear();
  bound.clear();
}

}  // namespace toroid::runtime
