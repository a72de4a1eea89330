#include "toroid/driver/compile.h"
#include "toroid/driver/user_kernels.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/bind/inputs.h"
#include "toroid/codegen/cpu/cpp_kernel.h"
#include "toroid/loop/lower.h"
#include "toroid/ops/registry.h"
#include "toroid/passes/decompose.h"
#include "toroid/passes/pipeline.h"
#include "toroid/sched/schedule.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/support/env.h"
#include "toroid/support/file.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"
#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/executor.h"
#include "toroid/runtime/cuda/device_allocator.h"
#endif

namespace toroid::driver {

namespace {

// An environment switch set to "0".
bool env_flag_off(const char* name) { return env_flag(name) == false; }

// The binding of `from`'s symbols, re-keyed to the symbols of the same names in `env`.
sym::Binding rekey(const sym::Binding& from, const ShapeEnv& env) {
  sym::Binding out;
  for (const auto& [s, v] : from) {
    SymExpr t = env.lookup(s.symbol().name);
    if (t) out[t] = v;
  }
  return out;
}

#ifdef TOROID_WITH_CUDA
// NVRTC compiles every kernel (in parallel, through the cubin cache); a GPU loads them.
void compile_cuda(Specialization& s, const CompileOptions& o) {
  namespace cu = runtime::cuda;
  cu::NvrtcOptions no;
  std::string why;
  if (o.load && !cu::available(&why)) user_error("--device cuda needs a GPU: " + why);
  no.arch = o.target.cuda_arch;
  if (o.prebuilt) {
    if (!o.prebuilt->cuda) user_error("the package holds no CUDA kernels");
    no.prebuilt = o.prebuilt->cuda;
  }
  auto start = std::chrono::steady_clock::now();
  // A module that will not run gets both entry points of every kernel compiled (a check);
  // one that runs gets the 32-bit ones, and 64-bit ones when a launch needs them.
  std::vector<cu::CubinRequest> requests = cu::cubin_requests(s.wrapper, !o.load);
  const size_t kernels = requests.size();
  // The hand-written kernels the run will launch compile in the same batch (in parallel, into the
  // cubin cache their first launch reads), not one after another at the first call.
  if (o.load && !o.prebuilt) {
    std::vector<cu::CubinRequest> more = cu::device_kernel_requests(s.wrapper, no.arch);
    requests.insert(requests.end(), more.begin(), more.end());
  }
  std::vector<cu::Cubin> cubins = cu::compile_cubins(requests, no);
  cubins.resize(kernels);
  if (o.keep_kernels)
    for (size_t i = 0; i < kernels; ++i)
      s.kernel_images.emplace_back(cu::prebuilt_key(requests[i].source, no.arch), cubins[i].image);
  s.stats.kernel_compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  s.stats.cache_hit = true;
  for (const cu::Cubin& c : cubins) s.stats.cache_hit = s.stats.cache_hit && c.cache_hit;
  if (o.load) s.executor = std::make_unique<cu::CudaExecutor>(s.wrapper, cubins, no);
}
#endif

// A package's key for the CPU kernels of `w`: what g++ compiles (kernels under their symbols),
// in one part, so that any core count and any naming of the same kernels agree.
std::string prebuilt_cpu_key(const codegen::wrapper::WrapperProgram& w) {
  return runtime::content_key(codegen::wrapper::kernels_sources(w, 1).front());
}

// The package's shared object for `key`, loaded; a UserError when it has none or was built for
// another CPU.
runtime::SharedObject load_prebuilt(const PrebuiltKernels& p, const std::string& key, const std::string& graph) {
  auto it = p.cpu.find(key);
  if (it == p.cpu.end())
    user_error("the package has no CPU kernels for " + graph +
               " at these sizes (it was compiled for others, or by another toroid version)");
  if (p.cpu_isa != runtime::host_isa())
    user_error("the package's CPU kernels were built for another instruction set (-march=native on a CPU with \"" +
               p.cpu_isa + "\"); this CPU has \"" + runtime::host_isa() + "\": package it on this kind of CPU");
  return runtime::load_shared_object(it->second, "the package's " + graph);
}

// An output computed elsewhere than the caller's memory for it (a view into a larger buffer, a
// constant, a fallback's result) is copied there: that memory has the output's strides, so the
// span copies over as it is, and the output is returned as a view of it.
void land_output(ops::RtValue& v, size_t index, const std::shared_ptr<ops::HostStorage>& dst, bool cuda, void* stream) {
  if (!dst || !v.is_tensor() || v.tensor().data() == dst->data()) return;
  const ops::HostTensor& t = v.tensor();
  std::string what = "output " + std::to_string(index);
  size_t n = static_cast<size_t>(runtime::view_extent(t.sizes(), t.strides(), what)) * static_cast<size_t>(t.element_size());
  if (dst->nbytes() < n)
    user_error(what + ": the caller's memory for it has " + std::to_string(dst->nbytes()) + " bytes, but it spans " +
               std::to_string(n));
  if (cuda) {
#ifdef TOROID_WITH_CUDA
    runtime::cuda::copy_device_to_device(dst->data(), t.data(), n, stream);
#else
    (void)stream;
#endif
  } else if (n > 0) {
    std::memcpy(dst->data(), t.data(), n);
  }
  v = ops::RtValue(ops::HostTensor::from_storage(dst, t.dtype(), t.sizes(), t.strides(), 0));
}

// A CUDA target's architecture when none was asked for: the GPU's where the module will run on
// one, else sm_90 (what NVRTC checks compile for).
Target resolve(Target t, bool loads) {
  if (!t.is_cuda() || t.cuda_arch != 0) return t;
  t.cuda_arch = 90;
#ifdef TOROID_WITH_CUDA
  if (loads && runtime::cuda::available()) t.cuda_arch = runtime::cuda::device().arch();
#else
  (void)loads;
#endif
  return t;
}

// TOROID_LOG=time: each compile phase's milliseconds ("time: lower 12.5 ms"); a debug
// directory's trace keeps them too.
class PhaseClock {
 public:
  explicit PhaseClock(CompileTrace* trace) : trace_(trace) {}
  void lap(const char* phase) {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    TOROID_LOG("time", std::string(phase) + " " + std::to_string(ms) + " ms");
    if (trace_) trace_->phases.emplace_back(phase, ms);
    last_ = now;
  }

 private:
  CompileTrace* trace_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Static shapes: every backed integer symbol becomes its hint (a one-value range, which the
// simplifier folds to a constant, and a guard, which sends other sizes to a new compile).
void pin_symbols(ShapeEnv& env) {
  std::vector<std::pair<SymExpr, int64_t>> pins;
  for (const sym::SymbolInfo& info : env.symbols())
    if (!info.unbacked && info.hint && info.symbol.is_int()) pins.emplace_back(info.symbol, *info.hint);
  for (const auto& [s, v] : pins) {
    env.constrain_range(s, sym::ValueRange::exactly(v));
    env.add_guard(sym::eq(s, SymExpr::integer(v)));
  }
}

// "s0=8, s1=64": the backed symbols' values this compile is for.
std::string sizes_of(const ShapeEnv& env) {
  std::string out;
  for (const sym::SymbolInfo& info : env.symbols())
    if (info.hint) out += (out.empty() ? "" : ", ") + info.symbol.str() + "=" + std::to_string(*info.hint);
  return out;
}

// Why none of `specs` runs `binding`: each one's first failing guard.
std::string why_recompiled(const std::vector<std::shared_ptr<Specialization>>& specs, const sym::Binding& binding) {
  std::string out;
  for (size_t k = 0; k < specs.size(); ++k) {
    const ShapeEnv& env = specs[k]->graph->shape_env();
    sym::Binding b = rekey(binding, env);
    std::optional<size_t> g = env.first_failing_guard(b);
    if (!g) continue;
    std::string what = *g < env.guards().size() ? "guard " + env.guards()[*g].condition.str() + " fails"
                                                : "a size lies outside its symbol's range";
    if (*g < env.guards().size() && env.guards()[*g].loc.known()) what += " (" + env.guards()[*g].loc.str() + ")";
    out += (out.empty() ? "" : "; ") + ("specialization " + std::to_string(k) + ": " + what);
  }
  return out;
}

}  // namespace

Specialization::Specialization() = default;
Specialization::~Specialization() = default;

std::unique_ptr<Specialization> CompiledModule::build(const sym::Binding* sizes) const {
  auto start = std::chrono::steady_clock::now();
  auto s = std::make_unique<Specialization>();
  if (!options_.dump_dir.empty()) s->trace = std::make_unique<CompileTrace>();
  PhaseClock clock(s->trace.get());
  s->graph = parse_graph(text_, filename_);
  clock.lap("parse");
  verify_or_throw(*s->graph);
  clock.lap("verify");
  if (sizes) {
    ShapeEnv& env = s->graph->shape_env();
    for (const auto& [sym, v] : rekey(*sizes, env)) {
      const sym::SymbolInfo* info = env.info(sym);
      if (info && !info->unbacked && sym.is_int()) env.set_hint(sym, v.i);
    }
  }
  if (!options_.dynamic) pin_symbols(s->graph->shape_env());
  PassManagerOptions po;
  po.verify_each = options_.verify_each;
  if (CompileTrace* trace = s->trace.get()) {
    trace->passes.push_back({"input", print_graph(*s->graph)});
    po.after_each = [trace](const char* pass, const Graph& g) { trace->passes.push_back({pass, print_graph(g)}); };
  }
  run_compile_pipeline(*s->graph, po, options_.target);
  clock.lap("passes");
  // User kernels write what their IR says, not only what the call declares.
  if (options_.target.is_cuda()) check_user_kernels(*s->graph, options_.target.cuda_arch);
  loop::LowerOptions lo;
  lo.target = options_.target;
  lo.verify_each = options_.verify_each;
  lo.reference_kernels = options_.reference_kernels;
  lo.deterministic = options_.deterministic;
  lo.tf32_convolutions = options_.tf32_convolutions;
  lo.tf32_matmuls = options_.tf32_matmuls;
  s->loop = loop::lower(*s->graph, lo);
  clock.lap("lower");
  sched::ScheduleOptions so;
  so.combo_kernels = options_.combo_kernels && options_.target.is_cuda() && !env_flag_off("TOROID_COMBO_KERNELS");
  so.emulate_precision_casts = options_.emulate_precision_casts;
  sched::Schedule schedule = sched::schedule(*s->loop, so);
  clock.lap("schedule");
  s->wrapper = codegen::wrapper::build_wrapper(*s->loop, schedule);
  if (options_.target.is_cuda()) prepare_user_kernels(s->wrapper, options_.target.cuda_arch);
  clock.lap("wrapper");
  codegen::wrapper::plan_memory(s->wrapper);
  codegen::wrapper::partition_program(s->wrapper);
  clock.lap("memory_plan");
  codegen::wrapper::verify_wrapper(s->wrapper);
  clock.lap("verify_wrapper");
  s->source = codegen::wrapper::kernels_source(s->wrapper);
  clock.lap("codegen");
  if (options_.compile && !options_.target.is_cuda()) {
    auto kstart = std::chrono::steady_clock::now();
    if (options_.prebuilt) {
      s->so = load_prebuilt(*options_.prebuilt, prebuilt_cpu_key(s->wrapper), s->graph->name());
    } else {
      // Large modules compile in parts, one g++ per core (at most 8), linked into one object.
      size_t cores = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
      runtime::CompileFlags flags = runtime::compile_flags_for(options_.target);
      flags.precompiled_prefix = codegen::cpu::cpp_prelude_headers();
      s->so = runtime::compile_and_load(codegen::wrapper::kernels_sources(s->wrapper, cores), flags);
    }
    if (options_.keep_kernels) s->kernel_images.emplace_back(prebuilt_cpu_key(s->wrapper), read_file(s->so.path));
    s->stats.kernel_compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kstart).count();
    s->stats.cache_hit = s->so.cache_hit;
    clock.lap("cxx");
    if (options_.load) s->executor = runtime::make_cpu_executor(s->wrapper, s->so);
  } else if (options_.compile) {
#ifdef TOROID_WITH_CUDA
    compile_cuda(*s, options_);
    clock.lap("nvrtc");
#else
    user_error("this toroid was built without the CUDA toolkit's headers: no --device cuda");
#endif
  }
  for (const Node* n : s->graph->nodes()) s->stats.ops += n->is_call() ? 1 : 0;
  for (const codegen::wrapper::WrapperProgram* p : codegen::wrapper::nested_programs(s->wrapper)) {
    s->stats.kernels += static_cast<int>(p->kernels.size() + p->cuda_kernels.size());
    for (const codegen::wrapper::Line& l : p->lines) {
      bool fallback = l.kind == codegen::wrapper::Line::Kind::FallbackCall;
      s->stats.extern_calls += l.kind == codegen::wrapper::Line::Kind::ExternCall || (fallback && l.device_kernel);
      s->stats.fallback_calls += fallback && !l.device_kernel;
    }
  }
  s->stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  TOROID_LOG("driver", "compiled " + s->graph->name() + " in " + std::to_string(s->stats.compile_ms) + " ms (" +
                           (s->stats.cache_hit ? "cache hit" : "cache miss") + ")");
  return s;
}

void CompiledModule::record_compile(const Specialization& s, std::string reason) {
  if (!s.trace) return;
  CompileEvent e;
  e.index = history_.empty() ? 0 : history_.back().index + 1;
  e.sizes = sizes_of(s.graph->shape_env());
  e.reason = std::move(reason);
  e.compile_ms = s.stats.compile_ms;
  history_.push_back(std::move(e));
  std::string dir = write_debug_dir(s, *s.trace, history_, options_.dump_dir);
  TOROID_LOG("driver", "debug directory " + dir);
}

namespace {

// The in-memory module cache: the compiled state of recent graphs, keyed by their text and the
// options, least recently used first.
struct CachedModule {
  std::shared_ptr<const Graph> source;
  std::vector<std::shared_ptr<Specialization>> specs;
};

class ModuleCache {
 public:
  static constexpr size_t kCapacity = 32;
  static ModuleCache& global() {
    static ModuleCache c;
    return c;
  }
  bool enabled() const { return enabled_; }
  std::optional<CachedModule> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first != key) continue;
      entries_.splice(entries_.end(), entries_, it);
      return entries_.back().second;  // the key (the whole text) is not copied
    }
    return std::nullopt;
  }
  // Records `source` and `specs` under `key` (replacing what was there).
  void store(const std::string& key, std::shared_ptr<const Graph> source, std::vector<std::shared_ptr<Specialization>> specs) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.remove_if([&](const std::pair<std::string, CachedModule>& e) { return e.first == key; });
    entries_.emplace_back(key, CachedModule{std::move(source), std::move(specs)});
    while (entries_.size() > kCapacity) entries_.pop_front();
  }

 private:
  ModuleCache() {
    enabled_ = env_flag("TOROID_MODULE_CACHE").value_or(true);
  }
  bool enabled_ = true;
  std::mutex mu_;
  std::list<std::pair<std::string, CachedModule>> entries_;  // by key, least recently used first
};

std::string cache_key(const std::string& text, const std::string& filename, const CompileOptions& o) {
  return o.target.str() + "|" + (o.verify_each ? "v" : "") +
         (o.dynamic ? "d" : "s") + (o.reference_kernels ? "r" : "") + (o.deterministic ? "D" : "") +
         (o.cuda_graphs ? "G" : "") + (o.combo_kernels ? "C" : "") + (o.tf32_convolutions ? "T" : "") +
         (o.tf32_matmuls ? "t" : "") + (o.emulate_precision_casts ? "E" : "") + "|" + o.dump_dir + "|" + filename +
         "|" + text;
}

}  // namespace

std::unique_ptr<CompiledModule> CompiledModule::compile(const std::string& text, const std::string& filename,
                                                        const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  ops::install_schema_op_info();
  std::unique_ptr<CompiledModule> m(new CompiledModule());
  m->text_ = text;
  m->filename_ = filename;
  m->options_ = options;
  m->options_.target = resolve(options.target, options.compile && options.load);
  m->options_.dump_dir = debug_root(options.dump_dir);
  if (env_flag("TOROID_EMULATE_PRECISION_CASTS") == true) m->options_.emulate_precision_casts = true;
  // Only runnable modules are cached: the others are for their text forms and compile checks.
  bool cacheable = options.compile && options.load && ModuleCache::global().enabled();
  std::string key = cacheable ? cache_key(text, filename, m->options_) : std::string();
  if (std::optional<CachedModule> hit = cacheable ? ModuleCache::global().find(key) : std::nullopt) {
    m->source_graph_ = hit->source;
    m->specs_ = hit->specs;
    m->reused_ = true;
    TOROID_LOG("driver", "reusing the compiled " + m->source_graph_->name() + " from the in-memory cache");
  } else {
    std::unique_ptr<Graph> g = parse_graph(text, filename);
    verify_or_throw(*g);
    m->source_graph_ = std::move(g);
    m->specs_.push_back(m->build(nullptr));
    m->record_compile(*m->specs_.back(), "");
    if (cacheable) ModuleCache::global().store(key, m->source_graph_, m->specs_);
  }
  m->input_values_ = graph_inputs(*m->source_graph_);
  m->compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

const Specialization& CompiledModule::current() const {
  std::lock_guard<std::mutex> lock(specs_mutex_);
  return *specs_.back();
}

size_t CompiledModule::num_specializations() const {
  std::lock_guard<std::mutex> lock(specs_mutex_);
  return specs_.size();
}

std::vector<std::shared_ptr<Specialization>> CompiledModule::specializations() const {
  std::lock_guard<std::mutex> lock(specs_mutex_);
  return specs_;
}

Specialization* CompiledModule::find_specialization(const sym::Binding& binding, sym::Binding* rekeyed) const {
  std::vector<std::shared_ptr<Specialization>> specs = specializations();
  for (auto it = specs.rbegin(); it != specs.rend(); ++it) {
    Specialization& s = **it;
    sym::Binding b = rekey(binding, s.graph->shape_env());
    if (s.graph->shape_env().first_failing_guard(b)) continue;
    *rekeyed = std::move(b);
    return &s;  // specializations live as long as the module
  }
  return nullptr;
}

Specialization& CompiledModule::specialization_for(const sym::Binding& binding, sym::Binding* rekeyed) {
  if (Specialization* s = find_specialization(binding, rekeyed)) return *s;
  // One compile at a time per module: a thread that waited finds what the other compiled.
  std::lock_guard<std::mutex> building(build_mutex_);
  if (Specialization* s = find_specialization(binding, rekeyed)) return *s;
  std::string why = why_recompiled(specializations(), binding);
  TOROID_LOG("driver", "compiling again: " + why);
  std::shared_ptr<Specialization> fresh = build(&binding);
  record_compile(*fresh, why);
  {
    std::lock_guard<std::mutex> lock(specs_mutex_);
    specs_.push_back(fresh);
  }
  if (options_.compile && options_.load && ModuleCache::global().enabled())
    ModuleCache::global().store(cache_key(text_, filename_, options_), source_graph_, specializations());
  *rekeyed = rekey(binding, fresh->graph->shape_env());
  if (std::optional<size_t> g = fresh->graph->shape_env().first_failing_guard(*rekeyed))
    TOROID_INTERNAL_ERROR("a fresh specialization fails its own guard " + std::to_string(*g));
  return *fresh;
}

Specialization& CompiledModule::specialize(const std::vector<ops::RtValue>& inputs, sym::Binding* binding) {
  return specialization_for(bind::bind_inputs(*source_graph_, inputs), binding);
}

namespace {

// The caller's inputs get the values the run left in the copies it ran on (`ran`, laid out as
// the graph's inputs are, on the host).
void copy_back_inputs(const std::vector<ops::RtValue>& caller, const std::vector<ops::RtValue>& ran) {
  for (size_t i = 0; i < caller.size() && i < ran.size(); ++i) {
    if (!caller[i].is_tensor() || !ran[i].is_tensor()) continue;
    const ops::HostTensor &dst = caller[i].tensor(), &src = ran[i].tensor();
    if (dst.storage() == src.storage() && dst.offset() == src.offset() && dst.strides() == src.strides()) continue;
    ops::copy_into("input " + std::to_string(i), dst, src);
  }
}

}  // namespace

std::vector<ops::RtValue> CompiledModule::run(const std::vector<ops::RtValue>& inputs, runtime::RunStats* stats) {
  if (options_.target.is_cuda()) {
#ifdef TOROID_WITH_CUDA
    // Host inputs laid out as the graph's, copied whole (views stay views), and the outputs back.
    std::vector<ops::RtValue> on_device;
    for (const ops::RtValue& v : bind::materialize_inputs(*source_graph_, inputs))
      on_device.push_back(runtime::cuda::to_device(v));
    check_device_errors();  // earlier run_device calls' checks first
    std::vector<ops::RtValue> out = run_on_device(on_device, stats, nullptr, false);
    for (ops::RtValue& v : out) v = runtime::cuda::to_host(v);
    // The device copies' writes (a trailing copy_) reach the caller's tensors. Every
    // specialization of a graph writes the same inputs, so the newest one says.
    if (current().wrapper.writes_inputs) {
      std::vector<ops::RtValue> written;
      for (const ops::RtValue& v : on_device) written.push_back(v.is_tensor() ? runtime::cuda::to_host(v) : v);
      copy_back_inputs(inputs, written);
    }
    return out;
#endif
  }
  sym::Binding b;
  Specialization& s = specialize(inputs, &b);
  return run_specialized(s, inputs, std::move(b), {}, stats);
}

std::vector<ops::RtValue> CompiledModule::run_device(const std::vector<ops::RtValue>& inputs, runtime::RunStats* stats,
                                                    void* stream) {
  return run_on_device(inputs, stats, stream, true);
}

std::vector<ops::RtValue> CompiledModule::run_on_device(const std::vector<ops::RtValue>& inputs,
                                                       runtime::RunStats* stats, void* stream, bool deferred_checks) {
  if (!options_.target.is_cuda()) user_error("run_device needs a module compiled for CUDA");
  sym::Binding b;
  Specialization& s = specialize(inputs, &b);
  runtime::RunOptions o;
  o.stream = stream;
  o.deferred_checks = deferred_checks;
  return run_specialized(s, inputs, std::move(b), o, stats);
}

std::vector<ops::RtValue> CompiledModule::run_specialized(Specialization& s, const std::vector<ops::RtValue>& inputs,
                                                         sym::Binding binding, const runtime::RunOptions& options,
                                                         runtime::RunStats* stats) {
  if (!s.executor) user_error("this module was compiled without loading its kernels: it cannot run");
  std::lock_guard<std::mutex> lock(s.run_mutex);  // specializations are shared (module cache)
  bool cuda = options_.target.is_cuda();
  static const bool graphs_allowed = !env_flag_off("TOROID_CUDA_GRAPHS");
  runtime::RunOptions with_graphs;
  const runtime::RunOptions* run_options = &options;
  if (cuda && options_.cuda_graphs && graphs_allowed && !options.cuda_graphs) {
    with_graphs = options;
    with_graphs.cuda_graphs = true;
    run_options = &with_graphs;
  }
  // The graph's own guards and the inputs' sizes and strides were checked by specialize().
  // A CUDA module's inputs are on the device as the graph lays them out (specialize() checked).
  std::vector<ops::RtValue> host_laid_out;
  if (!cuda) host_laid_out = bind::materialize_inputs(*source_graph_, input_values_, inputs, binding);
  const std::vector<ops::RtValue>& laid_out = cuda ? inputs : host_laid_out;
  std::vector<ops::RtValue> out = s.executor->run(laid_out, std::move(binding), stats, *run_options);
  if (!cuda && s.wrapper.writes_inputs) copy_back_inputs(inputs, laid_out);  // a copy's writes reach the caller
  for (size_t i = 0; i < options.outputs.size() && i < out.size(); ++i)
    land_output(out[i], i, options.outputs[i], cuda, options.stream);
  return out;
}

void CompiledModule::check_device_errors() {
  for (const auto& s : specializations()) {
    std::lock_guard<std::mutex> lock(s->run_mutex);
    if (s->executor) s->executor->check_errors();
  }
}

std::vector<runtime::OutputLayout> Specialization::output_layouts(const sym::Binding& binding) const {
  return runtime::describe_outputs(wrapper, binding);
}

int64_t Specialization::planned_peak_bytes(const sym::Binding& binding) const {
  std::optional<sym::Scalar> v = graph->shape_env().evaluate(wrapper.planned_peak_bytes, binding);
  if (!v) user_error("the planned peak depends on data (" + wrapper.planned_peak_bytes.str() + "): run the graph to know it");
  return v->i;
}

size_t Specialization::workspace_bytes(const sym::Binding& binding, bool outputs_given) const {
  return executor ? executor->workspace_bytes(binding, outputs_given) : 0;
}

bool cuda_available(std::string* why) {
#ifdef TOROID_WITH_CUDA
  return runtime::cuda::available(why);
#else
  if (why) *why = "this toroid was built without the CUDA toolkit's headers";
  return false;
#endif
}

DeviceMemoryStats device_memory_stats(bool reset_peak) {
  DeviceMemoryStats out;
#ifdef TOROID_WITH_CUDA
  runtime::cuda::DeviceAllocator& a = runtime::cuda::DeviceAllocator::global();
  runtime::cuda::DeviceCacheStats s = a.stats();
  out = {s.lent_bytes, s.peak_lent_bytes, s.cached_bytes, s.fresh_blocks, s.reused_blocks};
  if (reset_peak) a.reset_peak();
#else
  (void)reset_peak;
#endif
  return out;
}

namespace {
bool is_decomposed(const std::string& op) {
  static const std::vector<std::string> decomposed = decomposed_ops();  // sorted
  return std::binary_search(decomposed.begin(), decomposed.end(), op);
}
}  // namespace

bool op_supported(const std::string& op) {
  ops::install_schema_op_info();
  const ops::OpEntry* e = ops::OpRegistry::global().find(op);
  return e && e->meta && (e->kernel || is_decomposed(op));
}

bool op_lowered(const std::string& op) { return op_supported(op) && (loop::has_lowering(op) || is_decomposed(op)); }

bool op_lowered(const std::string& op, const Device& device) {
  return op_lowered(op) || (op_supported(op) && loop::has_library_kernel(op, device));
}

std::string emit(const Specialization& s, const std::string& what) {
  if (what == "graph") return print_graph(*s.graph);
  if (what == "loop") return loop::print_program(*s.loop);
  if (what == "wrapper") return codegen::wrapper::print_wrapper(s.wrapper);
  if (what == "provenance") return codegen::wrapper::print_provenance(s.wrapper);
  bool cuda = s.wrapper.target.is_cuda();
  if (what == "cpp" || what == "cuda") {
    if (cuda != (what == "cuda"))
      user_error("--emit=" + what + " shows " + (cuda ? "CPU" : "CUDA") + " kernels, but this module is compiled for " +
                 s.wrapper.target.device_name() + (cuda ? " (use --emit=cuda)" : " (use --device cuda)"));
    return s.source;
  }
  user_error("unknown --emit form '" + what + "' (expected graph, loop, wrapper, provenance, cpp or cuda)");
}

}  // namespace toroid::driver
