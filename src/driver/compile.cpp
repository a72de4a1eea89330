#include "toroid/driver/compile.h"

#include <chrono>

#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/interp/interpreter.h"
#include "toroid/loop/lower.h"
#include "toroid/ops/registry.h"
#include "toroid/passes/pipeline.h"
#include "toroid/sched/schedule.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::driver {

namespace {

// The binding of `from`'s symbols, re-keyed to the symbols of the same names in `env`.
sym::Binding rekey(const sym::Binding& from, const ShapeEnv& env) {
  sym::Binding out;
  for (const auto& [s, v] : from) {
    SymExpr t = env.lookup(s.symbol().name);
    if (t) out[t] = v;
  }
  return out;
}

}  // namespace

std::unique_ptr<Specialization> CompiledModule::build(const sym::Binding* sizes) const {
  auto start = std::chrono::steady_clock::now();
  auto s = std::make_unique<Specialization>();
  s->graph = parse_graph(text_, filename_);
  verify_or_throw(*s->graph);
  if (sizes) {
    ShapeEnv& env = s->graph->shape_env();
    for (const auto& [sym, v] : rekey(*sizes, env)) {
      const sym::SymbolInfo* info = env.info(sym);
      if (info && !info->unbacked && sym.is_int()) env.set_hint(sym, v.i);
    }
  }
  PassManagerOptions po;
  po.verify_each = options_.verify_each;
  run_compile_pipeline(*s->graph, po);
  s->loop = loop::lower(*s->graph);
  sched::Schedule schedule = sched::schedule(*s->loop);
  s->wrapper = codegen::wrapper::build_wrapper(*s->loop, schedule);
  codegen::wrapper::plan_memory(s->wrapper);
  s->source = codegen::wrapper::kernels_source(s->wrapper);
  s->so = runtime::compile_and_load(s->source);
  s->executor = std::make_unique<runtime::Executor>(s->wrapper, s->so);
  for (const Node* n : s->graph->nodes()) s->stats.ops += n->is_call() ? 1 : 0;
  s->stats.kernels = static_cast<int>(s->wrapper.kernels.size());
  for (const codegen::wrapper::Line& l : s->wrapper.lines) {
    s->stats.extern_calls += l.kind == codegen::wrapper::Line::Kind::ExternCall;
    s->stats.fallback_calls += l.kind == codegen::wrapper::Line::Kind::FallbackCall;
  }
  s->stats.cache_hit = s->so.cache_hit;
  s->stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  TOROID_LOG("driver", "compiled " + s->graph->name() + " in " + std::to_string(s->stats.compile_ms) + " ms (" +
                           (s->stats.cache_hit ? "cache hit" : "cache miss") + ")");
  return s;
}

std::unique_ptr<CompiledModule> CompiledModule::compile(const std::string& text, const std::string& filename,
                                                        const CompileOptions& options) {
  ops::install_schema_op_info();
  std::unique_ptr<CompiledModule> m(new CompiledModule());
  m->text_ = text;
  m->filename_ = filename;
  m->options_ = options;
  m->source_graph_ = parse_graph(text, filename);
  verify_or_throw(*m->source_graph_);
  m->specs_.push_back(m->build(nullptr));
  return m;
}

std::vector<ops::RtValue> CompiledModule::run(const std::vector<ops::RtValue>& inputs, runtime::RunStats* stats) {
  // The graph's own guards and the inputs' sizes and strides: bad inputs are user errors.
  sym::Binding binding = interp::bind_inputs(*source_graph_, inputs);
  std::vector<ops::RtValue> laid_out = interp::materialize_inputs(*source_graph_, inputs);
  for (auto it = specs_.rbegin(); it != specs_.rend(); ++it) {
    Specialization& s = **it;
    sym::Binding b = rekey(binding, s.graph->shape_env());
    if (s.graph->shape_env().first_failing_guard(b)) continue;
    return s.executor->run(laid_out, std::move(b), stats);
  }
  TOROID_LOG("driver", "a guard of every compiled specialization fails for these sizes: compiling again");
  specs_.push_back(build(&binding));
  Specialization& s = *specs_.back();
  sym::Binding b = rekey(binding, s.graph->shape_env());
  if (std::optional<size_t> g = s.graph->shape_env().first_failing_guard(b))
    TOROID_INTERNAL_ERROR("a fresh specialization fails its own guard " + std::to_string(*g));
  return s.executor->run(laid_out, std::move(b), stats);
}

std::string emit(const Specialization& s, const std::string& what) {
  if (what == "graph") return print_graph(*s.graph);
  if (what == "loop") return loop::print_program(*s.loop);
  if (what == "wrapper") return codegen::wrapper::print_wrapper(s.wrapper);
  if (what == "cpp") return s.source;
  user_error("unknown --emit form '" + what + "' (expected graph, loop, wrapper or cpp)");
}

}  // namespace toroid::driver
