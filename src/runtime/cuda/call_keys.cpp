#include "call_keys.h"

#include <algorithm>
#include <bit>

#include "../cache_entry.h"
#include "toroid/runtime/cuda/executor.h"
#include "toroid/runtime/output_binding.h"
#include "toroid/support/env.h"
#include "toroid/support/log.h"

namespace toroid::runtime::cuda {

using ops::HostStorage;
using ops::HostTensor;
using ops::RtValue;

namespace {

// Tensors a pooled call can copy: non-negative strides (their bytes run from data() on).
bool stageable(const std::vector<RtValue>& inputs) {
  for (const RtValue& v : inputs)
    if (v.is_tensor())
      for (int64_t s : v.tensor().strides())
        if (s < 0) return false;
  return true;
}

// Notes in moves[i] whether addresses[i] changed since last[i], and keeps them as last.
void note(const std::vector<uintptr_t>& addresses, std::vector<uintptr_t>& last, std::vector<char>& moves) {
  if (moves.size() != addresses.size()) {
    moves.assign(addresses.size(), 0);
    last.assign(addresses.size(), 0);
  }
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (last[i] && addresses[i] != last[i]) moves[i] = 1;
    last[i] = addresses[i];
  }
}

}  // namespace

CallKeys::CallKeys(const codegen::wrapper::WrapperProgram& w)
    : max_pooled_bytes_(static_cast<size_t>(env_count("TOROID_CUDA_GRAPH_STAGE_MIB").value_or(32)) << 20), w_(w) {}

void CallKeys::note_moves(const std::vector<RtValue>& inputs, const RunOptions& o, const void* workspace) {
  input_address_.resize(inputs.size());
  output_address_.resize(o.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    input_address_[i] = inputs[i].is_tensor() ? reinterpret_cast<uintptr_t>(inputs[i].tensor().data()) : 0;
  for (size_t i = 0; i < o.outputs.size(); ++i)
    output_address_[i] = o.outputs[i] ? reinterpret_cast<uintptr_t>(o.outputs[i]->data()) : 0;
  note(input_address_, last_input_address_, input_moves_);
  note(output_address_, last_output_address_, output_moves_);
  auto ws = reinterpret_cast<uintptr_t>(workspace);
  if (last_workspace_ && ws != last_workspace_) workspace_moves_ = true;
  last_workspace_ = ws;
}

// Pooled keys hold 1 for what moves (it goes through the key's buffers).
void CallKeys::key_of(const std::vector<RtValue>& inputs, const RunOptions& o, Stream stream, const sym::Binding& binding) {
  std::vector<uint64_t>& key = key_;
  key.assign({reinterpret_cast<uintptr_t>(stream), pooled_ && workspace_moves_ ? 1 : last_workspace_});
  for (size_t i = 0; i < inputs.size(); ++i) {
    const RtValue& v = inputs[i];
    if (v.is_tensor()) key.push_back(pooled_ && input_moves_[i] ? 1 : last_input_address_[i]);
    else if (v.is_number()) key.push_back(std::bit_cast<uint64_t>(v.to_double()));
    else key.push_back(0);
  }
  for (size_t i = 0; i < o.outputs.size(); ++i) key.push_back(pooled_ && output_moves_[i] ? 1 : last_output_address_[i]);
  symbols_.clear();
  for (const auto& [e, v] : binding)
    symbols_.emplace_back(e.hash(), v.type == sym::Type::Float ? std::bit_cast<uint64_t>(v.f) : static_cast<uint64_t>(v.i));
  std::sort(symbols_.begin(), symbols_.end());
  for (const auto& [h, v] : symbols_) key.insert(key.end(), {h, v});
}

// Under TOROID_LOG=cuda, a new key (the first 16) and what differs from the last call's: why it
// does not replay.
void CallKeys::log_new_key(const std::vector<uint64_t>& key, size_t n_in, size_t n_out) {
  if (captured_.count(key) || keys_seen_ >= 16) return;
  std::string what;
  int addresses = 0;  // the first few moves say from where to where (which allocation took what)
  for (size_t i = 0; i < key.size() && !last_key_.empty(); ++i) {
    if (i < last_key_.size() && key[i] == last_key_[i]) continue;
    std::string part = i == 0 ? "stream" : i == 1 ? "workspace" : i < 2 + n_in ? "input " + std::to_string(i - 2)
                     : i < 2 + n_in + n_out ? "output " + std::to_string(i - 2 - n_in) : "symbols";
    if (what.find(part) != std::string::npos) continue;
    what += (what.empty() ? "" : ", ") + part;
    if (i >= 1 && i < 2 + n_in + n_out && i < last_key_.size() && addresses++ < 8)
      what += " (" + runtime::detail::hex64(last_key_[i]) + " -> " + runtime::detail::hex64(key[i]) + ")";
  }
  TOROID_LOG("cuda", "call key " + std::to_string(keys_seen_ + 1) + " of " + w_.graph_name + " (" +
                         std::to_string(w_.partitions.size()) + " partitions)" +
                         (what.empty() ? std::string() : "; new: " + what));
}

size_t CallKeys::staged_bytes(const std::vector<RtValue>& inputs, const RunOptions& o) const {
  size_t n = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].is_tensor() && input_moves_[i]) n += inputs[i].tensor().storage()->nbytes();
  for (size_t i = 0; i < o.outputs.size(); ++i) n += o.outputs[i] && output_moves_[i] ? o.outputs[i]->nbytes() : 0;
  return n + (workspace_moves_ ? o.workspace_bytes : 0);
}

std::string CallKeys::why_not_pooled(const std::vector<RtValue>& inputs, const RunOptions& o) const {
  if (w_.writes_inputs) return "it writes an input, which must be written where it is";
  if (!stageable(inputs)) return "an input has negative strides";
  size_t bytes = staged_bytes(inputs, o);
  if (bytes > max_pooled_bytes_)
    return std::to_string(bytes >> 20) + " MiB to stage, over the limit of " +
           std::to_string(max_pooled_bytes_ >> 20) + " MiB (TOROID_CUDA_GRAPH_STAGE_MIB)";
  return "";
}

CapturedCall& CallKeys::find(const std::vector<RtValue>& inputs, const RunOptions& o, const void* workspace,
                             Stream stream, const sym::Binding& binding) {
  note_moves(inputs, o, workspace);
  key_of(inputs, o, stream, binding);
  if (log_enabled("cuda")) {
    log_new_key(key_, inputs.size(), o.outputs.size());
    last_key_ = key_;
  }
  auto it = captured_.find(key_);
  bool fresh = it == captured_.end();
  if (fresh) it = captured_.emplace(key_, CapturedCall{}).first;
  if (fresh) ++keys_seen_;
  fresh_streak_ = fresh ? fresh_streak_ + 1 : 0;
  if (fresh && !pooled_ && !pooling_declined_ && fresh_streak_ >= kFreshKeysBeforePooling) {
    if (std::string why = why_not_pooled(inputs, o); !why.empty()) {
      pooling_declined_ = true;
      TOROID_LOG("cuda", w_.graph_name + ": addresses move every call, but its keys are not pooled: " + why);
    } else {
      // Addresses that never repeat (a training step's activations): from now on this program's
      // keys leave out what moved, which goes through buffers of the key's own, copied in before
      // the run and out after it.
      pooled_ = true;
      captured_.clear();
      TOROID_LOG("cuda", w_.graph_name + ": addresses move every call; its CUDA graphs now copy the inputs, outputs "
                                         "and workspace that moved through buffers of their own");
      return find(inputs, o, workspace, stream, binding);
    }
  }
  if (fresh) {
    it->second.static_inputs.resize(inputs.size());
    it->second.static_outputs.resize(o.outputs.size());
    it->second.capturable.assign(w_.partitions.size(), 1);
    it->second.graphs.resize(w_.partitions.size());
    if (captured_.size() > kMaxCapturedCalls) {
      auto oldest = captured_.end();
      for (auto c = captured_.begin(); c != captured_.end(); ++c)
        if (c != it && (oldest == captured_.end() || c->second.last_used < oldest->second.last_used)) oldest = c;
      captured_.erase(oldest);
    }
  }
  it->second.last_used = ++clock_;
  return it->second;
}

std::vector<RtValue> CallKeys::stage_inputs(CapturedCall& call, const std::vector<RtValue>& inputs, Stream s) const {
  std::vector<RtValue> staged = inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_tensor() || !input_moves_[i]) continue;
    const HostTensor& t = inputs[i].tensor();
    size_t n = static_cast<size_t>(view_extent(t.sizes(), t.strides(), "input " + std::to_string(i))) *
               static_cast<size_t>(t.element_size());
    std::shared_ptr<HostStorage>& buffer = call.static_inputs[i];
    if (!buffer || buffer->nbytes() < n) buffer = device_storage(n, s);
    if (n) copy_device_to_device(buffer->data(), t.data(), n, s);
    staged[i] = RtValue(HostTensor::from_storage(buffer, t.dtype(), t.sizes(), t.strides(), 0));
  }
  return staged;
}

RunOptions CallKeys::stage_outputs(CapturedCall& call, const RunOptions& o, Stream s) const {
  RunOptions staged = o;
  if (o.workspace && workspace_moves_) {  // scratch: the key's own, so that its address never changes
    if (!call.static_workspace || call.static_workspace->nbytes() < o.workspace_bytes)
      call.static_workspace = device_storage(o.workspace_bytes, s);
    staged.workspace = call.static_workspace->data();
  }
  for (size_t i = 0; i < o.outputs.size(); ++i) {
    if (!o.outputs[i] || !output_moves_[i]) continue;
    std::shared_ptr<HostStorage>& buffer = call.static_outputs[i];
    if (!buffer || buffer->nbytes() < o.outputs[i]->nbytes()) buffer = device_storage(o.outputs[i]->nbytes(), s);
    staged.outputs[i] = buffer;
  }
  return staged;
}

}  // namespace toroid::runtime::cuda
