// CPU benchmarks for toroid (issue 4): memory-bound graphs against this machine's copy bandwidth,
// and compile latency (cold and warm cache) of the examples.
//
//   cpu_bench [--graphs DIR] [--examples DIR] [--reps N] [--only NAME] [--no-compile-latency]
//             [--no-bandwidth]
//
// Prints markdown tables. Bytes are the minimal traffic: every input read once, every output
// written once. GB/s are 1e9 bytes per second.
#include <dirent.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "toroid/bind/inputs.h"
#include "toroid/driver/compile.h"
#include "toroid/interp/interpreter.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"

#ifndef TOROID_BENCH_GRAPHS
#define TOROID_BENCH_GRAPHS "bench/graphs"
#endif
#ifndef TOROID_BENCH_EXAMPLES
#define TOROID_BENCH_EXAMPLES "examples"
#endif

namespace fs = std::filesystem;
using toroid::ops::RtValue;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// OpenMP copy of n bytes, each thread a contiguous chunk (memcpy inside).
void par_copy(char* dst, const char* src, size_t n) {
#pragma omp parallel
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    size_t chunk = (n / nt + 4095) / 4096 * 4096;
    size_t b = std::min(n, chunk * t), e = std::min(n, b + chunk);
    if (e > b) std::memcpy(dst + b, src + b, e - b);
  }
}

struct CopyBw {
  double warm_gbs = 0;   // into a destination that is already mapped
  double fresh_gbs = 0;  // into a freshly allocated destination each time (page faults included)
};

CopyBw copy_bandwidth(size_t bytes, int reps) {
  CopyBw r;
  char* src = static_cast<char*>(std::aligned_alloc(4096, bytes));
  char* dst = static_cast<char*>(std::aligned_alloc(4096, bytes));
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < bytes; i += 4096) {
    src[i] = static_cast<char>(i >> 12);
    dst[i] = 0;
  }
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    par_copy(dst, src, bytes);
    best = std::min(best, ms_since(t0));
  }
  r.warm_gbs = 2.0 * static_cast<double>(bytes) / (best * 1e6);
  std::free(dst);
  best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    char* d = static_cast<char*>(::operator new(bytes, std::align_val_t(64)));
    par_copy(d, src, bytes);
    double t = ms_since(t0);
    volatile char sink = d[bytes / 2];
    (void)sink;
    ::operator delete(d, std::align_val_t(64));
    best = std::min(best, t);
  }
  r.fresh_gbs = 2.0 * static_cast<double>(bytes) / (best * 1e6);
  std::free(src);
  return r;
}

int64_t tensor_bytes(const RtValue& v) {
  if (v.is_tensor()) return v.tensor().numel() * v.tensor().element_size();
  if (v.kind() == RtValue::Kind::List) {
    int64_t s = 0;
    for (const RtValue& x : v.list()) s += tensor_bytes(x);
    return s;
  }
  return 0;
}

struct GraphSpec {
  std::string file, kind;
  bool target;  // >= 70% of copy bandwidth expected
};

struct GraphResult {
  std::string name, shape;
  double median_ms = 0, min_ms = 0, gbs = 0, compile_ms = 0;
  int64_t bytes = 0;
  int kernels = 0, fallbacks = 0;
};

std::string shape_of(const std::vector<RtValue>& inputs) {
  for (const RtValue& v : inputs)
    if (v.is_tensor() && v.tensor().sizes().size() >= 2) {
      std::string s;
      for (size_t i = 0; i < v.tensor().sizes().size(); ++i) s += (i ? "x" : "") + std::to_string(v.tensor().sizes()[i]);
      return s;
    }
  return "?";
}

GraphResult bench_graph(const std::string& path, int reps) {
  GraphResult r;
  r.name = fs::path(path).stem().string();
  std::string text = toroid::read_file(path);
  auto module = toroid::driver::CompiledModule::compile(text, path);
  r.compile_ms = module->current().stats.compile_ms;
  r.kernels = module->current().stats.kernels;
  r.fallbacks = module->current().stats.fallback_calls + module->current().stats.extern_calls;
  std::vector<RtValue> inputs = toroid::bind::random_inputs(module->graph(), 0);
  inputs = toroid::bind::materialize_inputs(module->graph(), inputs);
  r.shape = shape_of(inputs);
  int64_t in_bytes = 0, out_bytes = 0;
  for (const RtValue& v : inputs) in_bytes += tensor_bytes(v);
  for (int i = 0; i < 3; ++i) {  // warm-up: first touch, thread pool start
    std::vector<RtValue> out = module->run(inputs);
    out_bytes = 0;
    for (const RtValue& v : out) out_bytes += tensor_bytes(v);
  }
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    std::vector<RtValue> out = module->run(inputs);
    times.push_back(ms_since(t0));
  }
  r.bytes = in_bytes + out_bytes;
  r.median_ms = median(times);
  r.min_ms = *std::min_element(times.begin(), times.end());
  r.gbs = static_cast<double>(r.bytes) / (r.median_ms * 1e6);
  return r;
}

struct LatencyResult {
  std::string name;
  double cold_ms = 0, warm_ms = 0;
  bool cold_hit = false, warm_hit = false;
  int kernels = 0;
};

LatencyResult compile_latency(const std::string& path, const std::string& cache) {
  LatencyResult r;
  r.name = fs::path(path).filename().string();
  std::string text = toroid::read_file(path);
  ::setenv("TOROID_CACHE_DIR", cache.c_str(), 1);
  auto t0 = Clock::now();
  auto cold = toroid::driver::CompiledModule::compile(text, path);
  r.cold_ms = ms_since(t0);
  r.cold_hit = cold->current().stats.cache_hit;
  r.kernels = cold->current().stats.kernels;
  t0 = Clock::now();
  auto warm = toroid::driver::CompiledModule::compile(text, path);
  r.warm_ms = ms_since(t0);
  r.warm_hit = warm->current().stats.cache_hit;
  return r;
}

std::vector<std::string> tir_files(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tir") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string graphs = TOROID_BENCH_GRAPHS, examples = TOROID_BENCH_EXAMPLES, only;
  int reps = 10;
  bool latency = true, bandwidth = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "cpu_bench: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--graphs") graphs = next();
    else if (a == "--examples") examples = next();
    else if (a == "--reps") reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--only") only = next();
    else if (a == "--no-compile-latency") latency = false;
    else if (a == "--no-bandwidth") bandwidth = false;
    else {
      std::cerr << "usage: cpu_bench [--graphs DIR] [--examples DIR] [--reps N] [--only NAME] "
                   "[--no-compile-latency] [--no-bandwidth]\n";
      return 2;
    }
  }
  try {
    toroid::ops::install_schema_op_info();
    std::printf("threads: %d\n\n", omp_get_max_threads());
    if (bandwidth) {
      std::string cache = fs::temp_directory_path() / ("toroid-bench-" + std::to_string(::getpid()));
      ::setenv("TOROID_CACHE_DIR", cache.c_str(), 1);
      CopyBw bw = copy_bandwidth(size_t(256) << 20, 10);
      std::printf("copy bandwidth (256 MiB, best of 10, read+write): %.1f GB/s; into a fresh allocation: %.1f GB/s\n\n",
                  bw.warm_gbs, bw.fresh_gbs);
      // Graph name -> (kind, held to the 70% target).
      std::map<std::string, std::pair<std::string, bool>> kinds = {
          {"add", {"pointwise", true}},           {"softmax", {"reduction+pointwise", true}},
          {"layer_norm", {"reduction+pointwise", true}}, {"rmsnorm_residual", {"reduction+pointwise", true}},
          {"gelu_affine", {"pointwise (erf)", false}}, {"cross_entropy", {"reduction", false}}};
      std::printf("| graph | shape | kernels | fallback/extern | median ms | min ms | MB moved | GB/s | %% of copy | target |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
      std::fflush(stdout);
      for (const std::string& f : tir_files(graphs)) {
        std::string name = fs::path(f).stem().string();
        if (!only.empty() && name != only) continue;
        GraphResult r = bench_graph(f, reps);
        auto it = kinds.find(name);
        bool target = it != kinds.end() && it->second.second;
        double frac = r.gbs / bw.warm_gbs;
        std::printf("| %s | %s | %d | %d | %.2f | %.2f | %.0f | %.1f | %.0f%% | %s |\n", r.name.c_str(), r.shape.c_str(),
                    r.kernels, r.fallbacks, r.median_ms, r.min_ms, static_cast<double>(r.bytes) / 1e6, r.gbs,
                    100 * frac, target ? (frac >= 0.7 ? "≥70%: met" : "≥70%: MISSED") : "-");
        std::fflush(stdout);
      }
      std::error_code ec;
      fs::remove_all(cache, ec);
      std::printf("\n");
    }
    if (latency) {
      std::printf("| example | kernels | cold compile ms | warm compile ms (cache hit) | warm < 20 ms |\n");
      std::printf("|---|---|---|---|---|\n");
      for (const std::string& f : tir_files(examples)) {
        std::string cache = fs::temp_directory_path() / ("toroid-bench-lat-" + std::to_string(::getpid()));
        std::error_code ec;
        fs::remove_all(cache, ec);
        try {
          LatencyResult r = compile_latency(f, cache);
          std::printf("| %s | %d | %.1f%s | %.1f%s | %s |\n", r.name.c_str(), r.kernels, r.cold_ms,
                      r.cold_hit ? " (hit!)" : "", r.warm_ms, r.warm_hit ? "" : " (miss!)",
                      r.warm_ms < 20 ? "yes" : "NO");
        } catch (const std::exception& e) {
          std::string msg = e.what();
          std::replace(msg.begin(), msg.end(), '\n', ' ');
          std::printf("| %s | - | error: %s | - | - |\n", fs::path(f).filename().c_str(), msg.substr(0, 120).c_str());
        }
        std::fflush(stdout);
        fs::remove_all(cache, ec);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "cpu_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
