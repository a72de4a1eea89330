// toroidc: the toroid compiler driver. `run` compiles a .tir graph to native kernels and runs it
// (or, with --reference, runs the reference interpreter) on .npy or seeded random inputs;
// --check compares the two, --emit prints a stage of the pipeline (docs/toroidc.md).
//
// Exit status: 0 on success, 1 on bad input (parse, verification, input or run-time errors,
// printed as "file:line:col: error: message"), 2 on bad command-line usage, 3 on an internal error.
#include <chrono>
#include <cstdlib>
#include <set>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "compare.h"
#include "summary.h"
#include "toroid/bind/inputs.h"
#include "toroid/driver/compile.h"
#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/interp/interpreter.h"
#include "toroid/ops/npy.h"
#include "toroid/ops/registry.h"
#include "toroid/driver/package.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/support/error.h"
#include "toroid/support/tool.h"
#include "toroid/support/file.h"

namespace {

using toroid::ops::HostTensor;
using toroid::ops::RtValue;

constexpr const char* kUsage =
    "usage: toroidc run FILE [options]\n"
    "       toroidc aot FILE -o PACKAGE [options]\n"
    "       toroidc cache info|clear|flags\n"
    "       toroidc --help | --version\n"
    "\n"
    "Compiles a .tir graph (FILE '-' reads standard input) into CPU or CUDA kernels, runs it and\n"
    "prints one summary line per output. FILE may also be an AOT package (.toroidpkg): its\n"
    "packaged kernels and parameters run, with no compiler.\n"
    "\n"
    "options of 'run':\n"
    "  --reference          run with the reference interpreter instead of compiling\n"
    "  --check              run both, compare within the dtype's tolerance; exit 1 on a mismatch\n"
    "  --emit=FORM          print a stage instead of running: graph (after the passes), loop,\n"
    "                       wrapper, provenance (JSON: which kernel or library call runs each\n"
    "                       node, and where it came from), cpp (CPU kernels) or cuda (CUDA\n"
    "                       kernels, with --device cuda)\n"
    "  --device=cpu|cuda    where the compiled kernels run (default cpu); cuda needs a GPU to run,\n"
    "                       not to --emit or --compile-only\n"
    "  --compile-only       compile the kernels (C++ compiler, or NVRTC for cuda) and stop\n"
    "  --cuda-arch=N        NVRTC's target sm_N (default: the GPU's, else 90)\n"
    "  --deterministic      results never vary between runs: the device kernels that combine\n"
    "                       with atomics (index_put and the scatters on cuda) take a sorted form\n"
    "  --allow-tf32=WHAT    f32 convolutions (conv), matmuls (matmul) or both (conv,matmul) on\n"
    "                       cuda may round their operands to TF32 on tensor cores, as PyTorch's\n"
    "                       allow_tf32 flags (--check then compares f32 results at bf16's\n"
    "                       tolerance); default: neither, exact f32 products\n"
    "  --emulate-precision-casts\n"
    "                       bf16/f16 values round after each op inside a kernel, as eager\n"
    "                       rounds them; default: they keep float precision between a\n"
    "                       kernel's ops and round when stored (as Inductor)\n"
    "  --verify-each        verify the graph after every compiler pass, and the loop IR\n"
    "                       after lowering and after split reductions\n"
    "  --input NAME=VALUE   the value of graph input NAME (its value name, with or without '%',\n"
    "                       or a parameter's qualified name): a .npy file, or for scalar inputs\n"
    "                       a number or true/false; may be repeated\n"
    "  --random-inputs      seeded random values for the inputs not given with --input\n"
    "  --seed N             seed of the random inputs and of the random ops (default 0)\n"
    "  --normal             random float inputs ~ N(0, 1) instead of uniform in [-1, 1)\n"
    "  --output-dir DIR     write output i to DIR/out<i>.npy (created if needed)\n"
    "  -o FILE              write what goes to standard output (the summary, the --emit stage,\n"
    "                       the JSON) to FILE instead, whole, once the command ran (not on an\n"
    "                       error)\n"
    "  --json               print the summary as one JSON object on the last line\n"
    "  --no-check           do not check results against the graph's metas\n"
    "  --version            print toroidc's version\n"
    "  -h, --help           show this help\n"
    "\n"
    "'aot' writes an AOT package (docs/aot.md): the graph, its parameters' values (from --input,\n"
    "or --random-inputs) and its compiled kernels for --device, in one file that\n"
    "toroid_package_load runs with no compiler; it takes --device, --cuda-arch, --allow-tf32,\n"
    "--deterministic, --input, --random-inputs, --seed, --normal, and --static (compile for the\n"
    "graph's size hints only).\n"
    "\n"
    "'cache info' prints the kernel cache's directory, entries, bytes and limit\n"
    "(TOROID_CACHE_MAX_MB); 'cache clear' removes its entries; 'cache flags' prints the compiler\n"
    "and flags CPU kernels compile with on this host (the shared object's, as in\n"
    "`$(toroidc cache flags) -o k.so k.cpp`).\n";

[[noreturn]] void usage_error(const std::string& message) { toroid::usage_error("toroidc", message, kUsage); }

struct Options {
  std::string cache;  // "info", "clear" or "flags": the cache command instead of run
  bool aot = false;   // toroidc aot: write a package to `output`
  bool static_shapes = false;
  std::string file;
  bool reference = false;
  std::vector<std::pair<std::string, std::string>> inputs;  // NAME, VALUE
  bool random = false;
  bool normal = false;
  uint64_t seed = 0;
  std::string output_dir;
  std::string output;  // -o: what would go to standard output, written to this file instead
  bool json = false;
  bool check = true;         // check interpreter results against the metas
  bool compare = false;      // --check
  bool verify_each = false;
  bool deterministic = false;
  bool tf32_convolutions = false, tf32_matmuls = false;
  bool emulate_precision_casts = false;
  std::string emit;
  std::string device = "cpu";  // cpu or cuda
  bool compile_only = false;
  int cuda_arch = 0;
};

// A non-negative integer option value; the message names the option.
uint64_t parse_count(const std::string& s, const std::string& option) {
  try {
    size_t pos = 0;
    unsigned long long v = std::stoull(s, &pos, 0);
    if (pos != s.size() || s.empty() || s[0] == '-') throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    usage_error(option + " needs a non-negative integer, got '" + s + "'");
  }
}

Options parse_command_line(int argc, char** argv) {
  Options o;
  if (argc < 2) usage_error("no command (try 'toroidc run FILE --reference')");
  std::string cmd = argv[1];
  if (cmd[0] != '-' && cmd != "run" && cmd != "cache" && cmd != "aot") usage_error("unknown command '" + cmd + "'");
  bool no_check = false;
  std::vector<std::string> inputs;
  std::string seed, cuda_arch, tf32, cache_what;
  toroid::CommandLine app{"toroidc", kUsage};
  // What 'run' and 'aot' both take (one of them parses, into the same variables).
  auto common = [&](toroid::CommandLine& c) {
    c.option("FILE", o.file);
    c.option("-o", o.output);
    c.repeated_option("--input", inputs);
    c.flag("--random-inputs", o.random);
    c.flag("--normal", o.normal);
    c.option("--seed", seed);
    c.flag("--deterministic", o.deterministic);
    c.option("--allow-tf32", tf32);
    c.flag("--emulate-precision-casts", o.emulate_precision_casts);
    c.option("--device", o.device);
    c.option("--cuda-arch", cuda_arch);
  };
  toroid::CommandLine& run = app.subcommand("run");
  common(run);
  run.flag("--reference", o.reference);
  run.option("--output-dir", o.output_dir);
  run.flag("--json", o.json);
  run.flag("--no-check", no_check);
  run.flag("--check", o.compare);
  run.flag("--verify-each", o.verify_each);
  run.option("--emit", o.emit);
  run.flag("--compile-only", o.compile_only);
  toroid::CommandLine& aot = app.subcommand("aot");
  common(aot);
  aot.flag("--static", o.static_shapes);
  toroid::CommandLine& cache = app.subcommand("cache");
  cache.option("WHAT", cache_what);
  app.parse_or_exit(argc, argv);
  if (cache.given()) {
    if (cache_what != "info" && cache_what != "clear" && cache_what != "flags")
      usage_error("'cache' takes one of info, clear, flags");
    o.cache = cache_what;
    return o;
  }
  if (aot.given()) {
    if (o.output.empty()) usage_error("'aot' needs -o PACKAGE");
    o.aot = true;
  }
  if (!run.given() && !aot.given()) usage_error("no command (try 'toroidc run FILE --reference')");
  o.check = !no_check;
  for (const std::string& v : inputs) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) usage_error("--input needs NAME=VALUE, got '" + v + "'");
    o.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
  }
  if (!seed.empty()) o.seed = parse_count(seed, "--seed");
  for (size_t start = 0; !tf32.empty() && start <= tf32.size();) {
    size_t comma = std::min(tf32.find(',', start), tf32.size());
    std::string item = tf32.substr(start, comma - start);
    if (item == "conv") o.tf32_convolutions = true;
    else if (item == "matmul") o.tf32_matmuls = true;
    else usage_error("--allow-tf32 takes conv, matmul or conv,matmul, got '" + tf32 + "'");
    start = comma + 1;
  }
  if (!o.emit.empty() && o.emit != "graph" && o.emit != "loop" && o.emit != "wrapper" && o.emit != "provenance" &&
      o.emit != "cpp" && o.emit != "cuda")
    usage_error("--emit takes graph, loop, wrapper, provenance, cpp or cuda, got '" + o.emit + "'");
  if (o.device != "cpu" && o.device != "cuda") usage_error("--device takes cpu or cuda, got '" + o.device + "'");
  if (!cuda_arch.empty()) {
    uint64_t arch = parse_count(cuda_arch, "--cuda-arch");
    o.cuda_arch = arch > 1000 ? 0 : static_cast<int>(arch);
    if (o.cuda_arch < 50 || o.cuda_arch > 200)
      usage_error("--cuda-arch takes a compute capability such as 90, got '" + cuda_arch + "'");
  }
  bool have_file = !o.file.empty();
  if (!have_file) usage_error("no input file (use '-' for standard input)");
  if (o.reference && o.compare) usage_error("--check runs both backends; leave out --reference");
  if (o.reference && !o.emit.empty()) usage_error("--emit shows the compiler's stages; leave out --reference");
  if (o.reference && o.device != "cpu") usage_error("the reference interpreter runs on the CPU; leave out --device");
  if (o.emit == "cuda" && o.device != "cuda") usage_error("--emit=cuda needs --device cuda");
  if (o.emit == "cpp" && o.device != "cpu") usage_error("--emit=cpp shows CPU kernels; use --emit=cuda with --device cuda");
  if (o.compile_only && (o.reference || !o.emit.empty() || o.compare))
    usage_error("--compile-only compiles the kernels and stops; leave out --reference, --emit and --check");
  return o;
}

// The index of the graph input called `name` ("x", "%x" or a parameter's qualified name).
std::optional<size_t> find_input(const std::vector<const toroid::Value*>& values, const std::string& name) {
  std::string bare = name[0] == '%' ? name.substr(1) : name;
  for (size_t i = 0; i < values.size(); ++i) {
    const toroid::Value* v = values[i];
    if (v->name() == bare) return i;
    if (v->node()->kind() == toroid::NodeKind::Param && v->node()->target() == name) return i;
  }
  return std::nullopt;
}

RtValue scalar_from_text(const toroid::Value* v, const std::string& text) {
  const std::string what = "input " + toroid::describe_input(v);
  if (v->type() == toroid::ValueType::Bool) {
    if (text == "true" || text == "True" || text == "1") return RtValue::boolean(true);
    if (text == "false" || text == "False" || text == "0") return RtValue::boolean(false);
    toroid::user_error(what + ": expected true or false, got '" + text + "'", v->node()->loc());
  }
  try {
    size_t pos = 0;
    if (v->type() == toroid::ValueType::Int) {
      long long x = std::stoll(text, &pos);
      if (pos == text.size()) return RtValue::integer(x);
    } else {
      double x = std::stod(text, &pos);
      if (pos == text.size()) return RtValue::floating(x);
    }
  } catch (const std::exception&) {
  }
  toroid::user_error(what + ": expected " + (v->type() == toroid::ValueType::Int ? "an integer" : "a number") +
                         ", got '" + text + "'",
                     v->node()->loc());
}

// A scalar input given as a 0-dim (or one-element) .npy file.
RtValue scalar_from_tensor(const toroid::Value* v, const HostTensor& t, const std::string& path) {
  if (t.numel() != 1)
    toroid::user_error(path + ": input " + toroid::describe_input(v) + " is a scalar but the file holds " +
                       t.describe());
  if (v->type() == toroid::ValueType::Float) return RtValue::floating(t.get_double(0));
  if (v->type() == toroid::ValueType::Bool) return RtValue::boolean(t.get_int(0) != 0);
  return RtValue::integer(t.get_int(0));
}

// Output names: the output node's arguments, lists flattened (as interpret() returns them).
void output_names(const toroid::Argument& a, std::vector<std::string>& out) {
  if (a.is_list()) {
    for (const toroid::Argument& e : a.list()) output_names(e, out);
  } else {
    out.push_back(toroid::describe_argument(a));
  }
}

HostTensor scalar_tensor(const RtValue& v) {
  if (v.kind() == RtValue::Kind::Float) {
    HostTensor t = HostTensor::zeros(toroid::DType::Float64, {});
    t.set_double(0, v.to_double());
    return t;
  }
  HostTensor t = HostTensor::zeros(v.kind() == RtValue::Kind::Bool ? toroid::DType::Bool : toroid::DType::Int64, {});
  t.set_int(0, v.to_int());
  return t;
}

// Bytes of every storage the reference interpreter creates (it keeps all values to the end);
// none when a size depends on data the binding lacks (no reference run).
std::optional<int64_t> reference_peak_bytes(const toroid::Graph& g, const toroid::sym::Binding& binding) {
  std::set<const toroid::Storage*> inputs, seen;
  for (const toroid::Value* v : toroid::graph_inputs(g))
    if (v->is_tensor()) inputs.insert(v->meta().storage);
  int64_t total = 0;
  for (const toroid::Node* n : g.nodes()) {
    if (!n->is_call()) continue;
    for (const toroid::Value* v : n->results()) {
      if (!v->is_tensor() || inputs.count(v->meta().storage) || !seen.insert(v->meta().storage).second) continue;
      const toroid::TensorMeta& m = v->meta();
      int64_t numel = 1;
      for (toroid::SymExpr s : m.sizes) {
        std::optional<toroid::sym::Scalar> size = g.shape_env().evaluate(s, binding);
        if (!size) return std::nullopt;
        numel *= size->i;
      }
      total += numel * toroid::dtype_size(m.dtype);
    }
  }
  return total;
}

std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// `toroidc cache info|clear|flags`.
int run_cache(const std::string& what) {
  if (what == "flags") {
    toroid::runtime::CompileCommand c = toroid::runtime::compile_command();
    std::cout << c.compiler << " " << c.flags << "\n";
    return 0;
  }
  toroid::runtime::CacheUsage u = what == "clear" ? toroid::runtime::clear_cache() : toroid::runtime::cache_usage();
  auto mib = [](uint64_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; };
  std::cout << (what == "clear" ? "removed from " : "kernel cache: ") << u.dir << "\n"
            << "entries: " << u.entries() << " (" << u.shared_objects << " CPU shared objects, " << u.cubins
            << " cubins, " << u.headers << " precompiled headers, " << u.failed << " failed compiles' sources)\n"
            << "bytes: " << mib(u.bytes) << (what == "clear" ? "" : ", limit " + mib(u.limit) + " (TOROID_CACHE_MAX_MB)")
            << "\n";
  return 0;
}

toroid::driver::CompileOptions compile_options(const Options& o) {
  toroid::driver::CompileOptions co;
  co.verify_each = o.verify_each;
  co.deterministic = o.deterministic;
  co.tf32_convolutions = o.tf32_convolutions;
  co.tf32_matmuls = o.tf32_matmuls;
  co.emulate_precision_casts = o.emulate_precision_casts;
  co.dynamic = !o.static_shapes;
  co.target = o.device == "cuda" ? toroid::Target::cuda(o.cuda_arch) : toroid::Target::cpu();
  co.compile = o.emit.empty();  // --emit prints text: nothing to compile (and no GPU needed)
  co.load = !o.compile_only;
  return co;
}

// `toroidc aot`: the graph's parameters (given, or random), compiled and packaged.
int write_aot(const Options& o, const std::string& text, const std::string& name, const toroid::Graph& graph,
              const std::vector<RtValue>& inputs) {
  std::vector<HostTensor> params;
  std::vector<const toroid::Value*> values = toroid::graph_inputs(graph);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i]->node()->kind() == toroid::NodeKind::Param) params.push_back(inputs[i].tensor());
  toroid::driver::write_package(o.output, text, name, compile_options(o), params);
  std::cout << "wrote " << o.output << ": " << params.size() << " parameter" << (params.size() == 1 ? "" : "s") << ", "
            << std::filesystem::file_size(o.output) << " bytes, for " << o.device << "\n";
  return 0;
}

int run(const Options& o) {
  if (!o.cache.empty()) return run_cache(o.cache);
  toroid::ops::install_schema_op_info();
  std::unique_ptr<toroid::driver::Package> package;
  if (!o.aot && o.file != "-" && toroid::driver::Package::is_package(o.file)) {
    if (o.reference || !o.emit.empty() || o.compile_only)
      usage_error("a package runs its packaged kernels: --reference, --emit and --compile-only take a .tir file");
    package = toroid::driver::Package::load(o.file);
  }
  std::string text = package ? package->text() : toroid::read_file(o.file);
  std::string name = o.file == "-" ? "<stdin>" : o.file;
  std::unique_ptr<toroid::Graph> graph = toroid::parse_graph(text, name);
  toroid::verify_or_throw(*graph);

  std::unique_ptr<toroid::driver::CompiledModule> module;
  if (!o.reference && !o.aot && !package) {
    toroid::driver::CompileOptions co = compile_options(o);
    module = toroid::driver::CompiledModule::compile(text, name, co);
    if (o.compile_only) {
      const toroid::driver::CompileStats& cs = module->current().stats;
      std::cout << "compiled " << cs.kernels << " kernel" << (cs.kernels == 1 ? "" : "s") << " for " << o.device
                << (cs.cache_hit ? " (cache hit)" : "") << "\n";
      if (o.json)
        std::cout << "{\"kernels\": " << cs.kernels << ", \"cache_hit\": " << (cs.cache_hit ? "true" : "false")
                  << ", \"compile_ms\": " << json_number(module->compile_ms())
                  << ", \"kernel_compile_ms\": " << json_number(cs.kernel_compile_ms) << ", \"planned_peak_bytes\": \""
                  << module->current().wrapper.planned_peak_bytes.str() << "\"}\n";
      return 0;
    }
    if (!o.emit.empty()) {
      std::cout << toroid::driver::emit(module->current(), o.emit);
      return 0;
    }
  }

  std::vector<const toroid::Value*> values = toroid::graph_inputs(*graph);
  std::vector<RtValue> given(values.size());
  if (package)  // the parameters are the package's
    for (size_t i = 0; i < package->host_params().size(); ++i)
      given[package->num_inputs() + i] = package->host_params()[i];
  for (const auto& [input_name, value] : o.inputs) {
    std::optional<size_t> i = find_input(values, input_name);
    if (!i) usage_error("the graph has no input named '" + input_name + "'");
    const toroid::Value* v = values[*i];
    bool npy = value.size() > 4 && value.substr(value.size() - 4) == ".npy";
    if (v->is_tensor()) {
      if (!npy) usage_error("--input " + input_name + ": a tensor input needs a .npy file, got '" + value + "'");
      given[*i] = toroid::ops::read_npy(value);
    } else {
      given[*i] = npy ? scalar_from_tensor(v, toroid::ops::read_npy(value), value) : scalar_from_text(v, value);
    }
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (given[i].is_none() && !o.random && (!o.aot || values[i]->node()->kind() == toroid::NodeKind::Param))
      toroid::user_error("no value for input " + toroid::describe_input(values[i]) + " (give --input " +
                             values[i]->name() + "=FILE.npy or --random-inputs)",
                         values[i]->node()->loc());
  std::vector<RtValue> inputs = toroid::bind::random_inputs(
      *graph, o.seed, o.normal ? toroid::bind::RandomDist::Normal : toroid::bind::RandomDist::Uniform, given);
  inputs = toroid::bind::materialize_inputs(*graph, inputs);
  if (o.aot) return write_aot(o, text, name, *graph, inputs);

  toroid::interp::InterpreterOptions io;
  io.seed = o.seed;
  io.check_results = o.check;
  std::vector<RtValue> outputs, reference;
  toroid::runtime::RunStats stats;
  double run_ms = 0;
  // The compiled run goes first: the reference interpreter may mutate inputs (copy_ epilogues).
  std::vector<RtValue> run_inputs = inputs;  // the compiled run's: its writes into inputs land here
  if (module) {
    if (o.compare) {
      for (RtValue& v : run_inputs)
        if (v.is_tensor()) v = RtValue(v.tensor().clone());
      run_inputs = toroid::bind::materialize_inputs(*graph, run_inputs);
    }
    auto start = std::chrono::steady_clock::now();
    outputs = module->run(run_inputs, &stats);
    run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  } else if (package) {
    auto start = std::chrono::steady_clock::now();
    outputs = package->run({run_inputs.begin(), run_inputs.begin() + static_cast<std::ptrdiff_t>(package->num_inputs())});
    run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  // The reference run's binding has the unbacked symbols its results bound (nonzero's count).
  std::optional<toroid::sym::Binding> reference_binding;
  if ((!module && !package) || o.compare) {
    toroid::interp::Interpreter interpreter(*graph, io);
    reference = interpreter.run(inputs);
    reference_binding = interpreter.binding();
  }
  if (!module && !package) outputs = reference;

  std::vector<std::string> names;
  if (const toroid::Node* out = graph->output_node())
    for (const toroid::Argument& a : out->args()) output_names(a, names);
  if (!o.output_dir.empty()) std::filesystem::create_directories(o.output_dir);
  std::string outputs_json;
  for (size_t i = 0; i < outputs.size(); ++i) {
    toroidc::OutputInfo info;
    info.name = "out" + std::to_string(i);
    info.value = i < names.size() ? names[i] : "";
    if (!o.output_dir.empty() && !outputs[i].is_none()) {
      info.file = (std::filesystem::path(o.output_dir) / (info.name + ".npy")).string();
      toroid::ops::write_npy(info.file, outputs[i].is_tensor() ? outputs[i].tensor() : scalar_tensor(outputs[i]));
    }
    if (o.json) outputs_json += (i ? ", " : "") + toroidc::summary_json(info, outputs[i]);
    else std::cout << toroidc::summary_line(info, outputs[i]) << "\n";
  }
  toroidc::Comparison cmp;
  if (o.compare) {
    toroid::DType computed_in = toroidc::least_precise_float(*graph);
    // TF32 rounds each operand to 10 bits of mantissa, and a sum of K products adds those
    // errors up (about 1e-2 of the result for K in the hundreds): f32 results are compared at
    // bf16's tolerance.
    bool tf32 = o.device == "cuda" && (o.tf32_convolutions || o.tf32_matmuls);
    if (tf32 && (computed_in == toroid::DType::Float32 || computed_in == toroid::DType::Float64 ||
                 computed_in == toroid::DType::Float16))
      computed_in = toroid::DType::BFloat16;
    cmp = toroidc::compare_outputs(outputs, reference, computed_in, toroidc::input_magnitude(inputs));
    // A graph that writes its inputs (a trailing copy_): the inputs after each run must agree too,
    // but for donated ones (the run may have reused their memory).
    for (size_t i = 0; i < values.size() && i < run_inputs.size(); ++i)
      if (values[i]->node()->donated()) run_inputs[i] = inputs[i];
    toroidc::Comparison written =
        toroidc::compare_outputs(run_inputs, inputs, computed_in, toroidc::input_magnitude(inputs));
    if (!written.match && cmp.match) {
      cmp.match = false;
      cmp.first_mismatch = "input " + written.first_mismatch.substr(3) + " (written by the graph)";  // "out2[5]: ..."
    }
  }
  if (o.json && !module && !package) {
    std::cout << "{\"graph\": \"" << graph->name() << "\", \"outputs\": [" << outputs_json << "]}\n";
  } else if (o.json) {
    const toroid::driver::CompileStats& cs = (module ? *module : package->module()).current().stats;
    std::optional<int64_t> reference_peak = reference_peak_bytes(
        *graph, reference_binding ? *reference_binding : toroid::bind::bind_inputs(*graph, inputs));
    std::cout << "{\"graph\": \"" << graph->name() << "\", \"ops\": " << cs.ops << ", \"kernels\": " << cs.kernels
              << ", \"extern_calls\": " << cs.extern_calls << ", \"fallback_calls\": " << cs.fallback_calls
              << ", \"compile_ms\": " << json_number(cs.compile_ms) << ", \"cache_hit\": " << (cs.cache_hit ? "true" : "false")
              << ", \"run_ms\": " << json_number(run_ms) << ", \"peak_bytes\": " << stats.peak_bytes
              << ", \"planned_peak_bytes\": " << stats.planned_peak_bytes
              << ", \"reference_peak_bytes\": " << (reference_peak ? std::to_string(*reference_peak) : "null")
              << ", \"max_abs_err\": " << (o.compare ? json_number(cmp.max_abs_err) : "null")
              << ", \"max_rel_err\": " << (o.compare ? json_number(cmp.max_rel_err) : "null")
              << ", \"match\": " << (o.compare ? (cmp.match ? "true" : "false") : "null") << ", \"outputs\": [" << outputs_json
              << "]}\n";
  }
  std::cout.flush();
  if (o.compare && !cmp.match) {
    std::cerr << name << ": error: compiled result differs from the reference interpreter: " << cmp.first_mismatch
              << "\n";
    return 1;
  }
  if (o.compare && !o.json) std::cout << "check: match (max abs err " << json_number(cmp.max_abs_err) << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_command_line(argc, argv);
  if (options.output.empty() || options.aot) return toroid::run_tool("toroidc", [&] { return run(options); });
  // -o: standard output goes to the file, written whole (atomically) only when the run succeeds.
  std::ostringstream out;
  std::streambuf* terminal = std::cout.rdbuf(out.rdbuf());
  int status = toroid::run_tool("toroidc", [&] {
    int rc = run(options);
    toroid::write_file_atomic(options.output, out.str());
    return rc;
  });
  std::cout.rdbuf(terminal);
  return status;
}
