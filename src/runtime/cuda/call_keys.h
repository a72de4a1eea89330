// The call keys of a CUDA program's graphs (RunOptions::cuda_graphs): per key (the stream, the
// workspace, every input's and output's address, every symbol's value) the graphs captured for
// its partitions. A key's first call runs as usual and notes the partitions that ran host work
// (never captured); its second captures the others, launching what it captured; later ones
// replay them. A key whose addresses never repeat is never captured, unless the program's keys
// become pooled: after a few calls in a row with new keys, what moved (inputs, outputs,
// workspace, each tracked on its own) leaves the key and goes through buffers of the key's own.
// The executor decides whether a call takes graphs at all and runs the partitions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"
#include "toroid/runtime/cuda/driver.h"
#include "toroid/runtime/executor.h"
#include "toroid/sym/shape_env.h"

namespace toroid::runtime::cuda {

struct CapturedCall {
  int calls = 0;
  std::vector<char> capturable;                     // by partition
  std::vector<std::unique_ptr<GraphExec>> graphs;  // by partition, once captured
  uint64_t last_used = 0;
  // Pooled keys: the buffers the moving inputs are copied into and the moving outputs computed in.
  std::vector<std::shared_ptr<ops::HostStorage>> static_inputs, static_outputs;
  std::shared_ptr<ops::HostStorage> static_workspace;
};

class CallKeys {
 public:
  explicit CallKeys(const codegen::wrapper::WrapperProgram& w);

  // This call's key's state, made on its first call (the least recently used of more than
  // kMaxCapturedCalls dropped). Notes what moved since the last call, and may switch the
  // program to pooled keys.
  CapturedCall& find(const std::vector<ops::RtValue>& inputs, const RunOptions& o, const void* workspace, Stream stream,
                     const sym::Binding& binding);
  bool pooled() const { return pooled_; }
  // Pooled keys: the inputs that moved, copied into the key's buffers (on stream s).
  std::vector<ops::RtValue> stage_inputs(CapturedCall& call, const std::vector<ops::RtValue>& inputs, Stream s) const;
  // Pooled keys: the options with the key's buffers for the outputs and workspace that moved
  // (the caller's memory gets a copy: CompiledModule); what stays where it is is used in place.
  RunOptions stage_outputs(CapturedCall& call, const RunOptions& o, Stream s) const;

 private:
  static constexpr size_t kMaxCapturedCalls = 8;
  static constexpr int kFreshKeysBeforePooling = 3;
  // The most a pooled key may hold in buffers of its own (the inputs, outputs and workspace that
  // moved; TOROID_CUDA_GRAPH_STAGE_MIB, 32 MiB by default): more is memory the caller's tensors
  // already take, held again for the module's life, for a step long enough that its launches
  // are a small part of it (BERT's forward would stage its 218 MiB of saved activations).
  size_t max_pooled_bytes_;

  void note_moves(const std::vector<ops::RtValue>& inputs, const RunOptions& o, const void* workspace);
  // Into key_ (its memory kept from call to call).
  void key_of(const std::vector<ops::RtValue>& inputs, const RunOptions& o, Stream stream, const sym::Binding& binding);
  void log_new_key(const std::vector<uint64_t>& key, size_t inputs, size_t outputs);
  size_t staged_bytes(const std::vector<ops::RtValue>& inputs, const RunOptions& o) const;
  std::string why_not_pooled(const std::vector<ops::RtValue>& inputs, const RunOptions& o) const;

  const codegen::wrapper::WrapperProgram& w_;
  std::map<std::vector<uint64_t>, CapturedCall> captured_;
  uint64_t clock_ = 0;
  bool pooled_ = false;
  bool pooling_declined_ = false;  // for good, with the reason logged once
  int fresh_streak_ = 0;
  std::vector<uintptr_t> last_input_address_, last_output_address_;
  std::vector<char> input_moves_, output_moves_;  // by input and output: its address changed between two calls
  uintptr_t last_workspace_ = 0;
  bool workspace_moves_ = false;
  uint64_t keys_seen_ = 0;          // call keys made (the first 16 are logged)
  std::vector<uint64_t> last_key_;  // under TOROID_LOG=cuda: the last call's, to say what changed
  std::vector<uintptr_t> input_address_, output_address_;  // this call's (note_moves' scratch)
  std::vector<uint64_t> key_;                               // this call's (key_of's result)
  std::vector<std::pair<uint64_t, uint64_t>> symbols_;      // key_of's scratch
};

}  // namespace toroid::runtime::cuda
