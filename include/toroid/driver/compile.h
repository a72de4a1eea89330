// The compiler driver: .tir text in, a callable module out. Runs the pipeline (passes, lowering,
// scheduling, C++ generation, memory planning), compiles the kernels through the on-disk cache,
// and checks the guards on every call: a guard the compilation relied on that fails for new
// sizes compiles again for them (a guard of the graph itself failing is a user error).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/driver/debug.h"
#include "toroid/graph/graph.h"
#include "toroid/ops/rt_value.h"
#include "toroid/runtime/executor.h"
#include "toroid/runtime/output_binding.h"

namespace toroid::driver {

// Kernels compiled ahead of time (an AOT package's, driver/package.h), by the key of the source
// they were compiled from: a compile given them loads these and runs no compiler.
struct PrebuiltKernels {
  std::unordered_map<std::string, std::string> cpu;  // runtime::content_key(source) -> the shared object
  std::string cpu_isa;  // the host_isa() they were built for (-march=native)
  std::shared_ptr<const std::unordered_map<std::string, std::string>> cuda;  // cuda::prebuilt_key -> cubin
};

struct CompileOptions {
  bool verify_each = false;  // verify the graph after every pass
  // What to compile for (graph/target.h). A CUDA target's arch 0 becomes the GPU's when the
  // module loads on one, else 90; compile() records the resolved target in options().
  Target target;
  // Compile the generated kernels (C++ compiler, or NVRTC); load them and build an executor.
  // Without `compile`, only the text forms exist (emit); without `load`, nothing runs, but the
  // kernels are checked by their compiler (NVRTC needs no GPU).
  bool compile = true;
  bool load = true;
  // Dynamic shapes: symbolic sizes stay symbolic, one specialization serves every size its
  // guards allow. Off: each specialization pins every backed symbol to its value (range and
  // guard), so new sizes compile again, with the sizes as constants.
  bool dynamic = true;
  // Debug directories (driver/debug.h): each compile writes <dump_dir>/<graph>.<n>/ (n the first
  // number free) with the graph after each pass, loop IR, Wrapper IR, kernels, memory plan,
  // provenance map, compile record and report.html. Empty: $TOROID_DEBUG=1 puts them in
  // $TOROID_DEBUG_DIR (default ./toroid_debug); otherwise none are written.
  std::string dump_dir;
  // Calls with no compiled kernel or library call may run their op's reference kernel; off, they
  // are compile errors at their node (loop::LowerOptions::reference_kernels).
  bool reference_kernels = true;
  // Results that do not vary between runs (loop::LowerOptions::deterministic).
  bool deterministic = false;
  // CUDA graphs over each specialization's partitions (runtime::RunOptions::cuda_graphs) in the
  // runs that give a workspace; the symbols' values are part of a call's key, so a dynamic
  // module captures per size. TOROID_CUDA_GRAPHS=0 in the environment turns them off everywhere.
  bool cuda_graphs = true;
  // Combo kernels on CUDA (sched::ScheduleOptions::combo_kernels): independent flat kernels in
  // one launch. TOROID_COMBO_KERNELS=0 in the environment turns them off everywhere.
  bool combo_kernels = true;
  // f32 convolutions and matmuls on CUDA may round their operands to TF32 on tensor cores, as
  // PyTorch's torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 allow
  // (loop::LowerOptions). Off: f32 products are exact, as the reference kernels'.
  bool tf32_convolutions = false;
  bool tf32_matmuls = false;
  // bf16/f16 values round after each op inside a kernel, as eager rounds them
  // (sched::ScheduleOptions::emulate_precision_casts); off, as Inductor by default, they keep
  // float precision between a kernel's ops and round when stored.
  // TOROID_EMULATE_PRECISION_CASTS=1 in the environment turns it on everywhere.
  bool emulate_precision_casts = false;
  // Load the kernels from here instead of compiling them (a UserError when one is missing).
  std::shared_ptr<const PrebuiltKernels> prebuilt;
  // Keep each specialization's compiled kernels (Specialization::kernel_images), to package them
  // (a CUDA module that does not load has both entry points of every kernel compiled).
  bool keep_kernels = false;
};

struct CompileStats {
  double compile_ms = 0;  // the whole pipeline, kernel compilation included
  bool cache_hit = false;
  int kernels = 0;
  int extern_calls = 0;
  int fallback_calls = 0;
  int ops = 0;  // calls in the graph after the passes
  double kernel_compile_ms = 0;  // NVRTC or the C++ compiler (cache lookups included)
};

// One compilation of a graph for the hints its ShapeEnv holds. Modules compiled from the same
// text and options share their specializations (CompiledModule::compile's in-memory cache); the
// executors keep per-run state, so runs take `run_mutex`.
struct Specialization {
  Specialization();
  ~Specialization();
  std::mutex run_mutex;
  // The wrapper points into the loop program (constants, the shape environment), which points
  // into the graph: all three live as long as the specialization.
  std::unique_ptr<Graph> graph;  // after the passes
  std::unique_ptr<loop::LoopProgram> loop;
  codegen::wrapper::WrapperProgram wrapper;
  std::string source;
  runtime::SharedObject so;
  std::unique_ptr<runtime::Executor> executor;  // when loaded: the target's
  CompileStats stats;
  std::unique_ptr<CompileTrace> trace;  // with a debug directory only
  // With CompileOptions::keep_kernels: (key, bytes) of the compiled kernels, keyed as
  // PrebuiltKernels is (one shared object on the CPU, every cubin on CUDA).
  std::vector<std::pair<std::string, std::string>> kernel_images;

  // What a run with these symbol values (from specialize()) returns: each output's sizes,
  // strides and aliasing, from the program's output plan.
  std::vector<runtime::OutputLayout> output_layouts(const sym::Binding& binding) const;
  // The plan's peak bytes for these sizes (a UserError when they depend on data).
  int64_t planned_peak_bytes(const sym::Binding& binding) const;
  // The bytes a caller's workspace needs for these sizes (0: the target takes none); with
  // `outputs_given`, for a run given memory for its outputs (runtime::Executor::workspace_bytes).
  size_t workspace_bytes(const sym::Binding& binding, bool outputs_given = true) const;
};

class CompiledModule {
 public:
  // Parses, verifies and compiles. UserError on bad input, with its location. The same text
  // and options compiled again in the process reuse the earlier compilation (its graph, kernels
  // and specializations), from an in-memory cache of the last 32 graphs; $TOROID_MODULE_CACHE=0
  // turns it off.
  static std::unique_ptr<CompiledModule> compile(const std::string& text, const std::string& filename,
                                                 const CompileOptions& options = {});
  // Milliseconds this compile() took, and whether it came from the in-memory cache.
  double compile_ms() const { return compile_ms_; }
  bool reused() const { return reused_; }

  // Runs on inputs ordered as graph_inputs(graph()) orders them. Host inputs and
  // outputs; a CUDA module copies them to the device and back.
  std::vector<ops::RtValue> run(const std::vector<ops::RtValue>& inputs, runtime::RunStats* stats = nullptr);
  // A CUDA module on device-resident inputs (runtime/cuda/executor.h), laid out as the graph's
  // inputs are; device-resident outputs, queued on the device's stream.
  // `stream` is a CUstream (nullptr: toroid's own). The host does not wait for the GPU: an out of
  // range gather position is reported by a later run_device (once the faulty run has
  // finished on the GPU) or by check_device_errors().
  std::vector<ops::RtValue> run_device(const std::vector<ops::RtValue>& inputs, runtime::RunStats* stats = nullptr,
                                       void* stream = nullptr);
  // Runs `inputs` on `s` with `binding` (both from specialize(inputs, ...)): host inputs for a
  // CPU module (laid out as the graph's inputs are, here), device-resident ones for a CUDA one.
  // `options` gives a workspace or a stream, and caller memory for outputs (RunOptions): an
  // output with caller memory always ends there (computed in place where the output plan allows,
  // else copied over: the caller's memory has the output's strides, from output_layouts()).
  std::vector<ops::RtValue> run_specialized(Specialization& s, const std::vector<ops::RtValue>& inputs,
                                            sym::Binding binding, const runtime::RunOptions& options,
                                            runtime::RunStats* stats = nullptr);
  // Waits for the earlier run_device calls' gather checks; a UserError for the first failure.
  void check_device_errors();
  const CompileOptions& options() const { return options_; }
  // The specialization that runs `inputs` (checked as run() checks them; host or device
  // tensors alike, data is not read), compiled first when no guard set admits them; `binding`
  // receives its symbols' values.
  Specialization& specialize(const std::vector<ops::RtValue>& inputs, sym::Binding* binding);

  const Graph& graph() const { return *source_graph_; }  // as parsed
  // graph_inputs(graph()), listed once: a call must not walk the graph's nodes.
  const std::vector<const Value*>& input_values() const { return input_values_; }
  const Specialization& current() const;  // the newest
  size_t num_specializations() const;

 private:
  CompiledModule() = default;
  std::unique_ptr<Specialization> build(const sym::Binding* sizes) const;
  // The debug directory of a fresh specialization (history_'s new entry), when there is one.
  void record_compile(const Specialization& s, std::string reason);
  Specialization& specialization_for(const sym::Binding& binding, sym::Binding* rekeyed);
  // run_device's body; run() checks its own run's gather and division records before returning.
  std::vector<ops::RtValue> run_on_device(const std::vector<ops::RtValue>& inputs, runtime::RunStats* stats,
                                          void* stream, bool deferred_checks);
  Specialization* find_specialization(const sym::Binding& binding, sym::Binding* rekeyed) const;
  std::vector<std::shared_ptr<Specialization>> specializations() const;

  std::string text_, filename_;
  CompileOptions options_;
  std::shared_ptr<const Graph> source_graph_;
  std::vector<const Value*> input_values_;
  // Calls come from many threads: specs_ is read under specs_mutex_, and grown (after a
  // compile) under build_mutex_ as well, so that one size is compiled once.
  std::vector<std::shared_ptr<Specialization>> specs_;
  mutable std::mutex specs_mutex_;
  std::mutex build_mutex_;
  double compile_ms_ = 0;
  bool reused_ = false;
  std::vector<CompileEvent> history_;  // this module's compiles (under build_mutex_)
};

// Whether a CUDA module can run here (a GPU and its driver); `why` says why not.
bool cuda_available(std::string* why = nullptr);

// The device memory toroid's caching allocator lends (all zero without CUDA); `reset_peak`
// restarts the peak afterwards (toroid_device_memory_stats).
struct DeviceMemoryStats {
  int64_t lent_bytes = 0, peak_lent_bytes = 0, cached_bytes = 0, fresh_blocks = 0, reused_blocks = 0;
};
DeviceMemoryStats device_memory_stats(bool reset_peak);

// Whether graphs may call `op` (an ATen name such as "aten.add.Tensor"): it has a meta function
// and a reference kernel or a decomposition.
bool op_supported(const std::string& op);
// Whether `op` also compiles to kernels or library calls (or decomposes into ops that do) on
// every device, so that it never runs as a reference fallback.
bool op_lowered(const std::string& op);
// The same on one device ("cpu", "cuda"): the GPU's device kernels (nonzero, cumsum, index_put)
// count there only.
bool op_lowered(const std::string& op, const Device& device);

// Text forms of the pipeline's stages (toroidc --emit): "graph", "loop", "wrapper", the
// provenance map ("provenance", JSON), and the kernels' source, "cpp" (CPU) or "cuda" (GPU).
std::string emit(const Specialization& s, const std::string& what);

}  // namespace toroid::driver
