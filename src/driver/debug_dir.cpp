// A compile's debug directory (debug.h): its text forms, memory plan and compile record as
// files, and report.html over them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "toroid/driver/compile.h"
#include "toroid/driver/debug.h"
#include "debug_model.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"
#include "toroid/support/json.h"

namespace toroid::driver {

namespace cw = codegen::wrapper;

namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) user_error("cannot write the debug file " + path.string());
}

// <root>/<graph>.<n> with n the first number whose directory did not exist: create_directory
// is atomic, so two compiles (or processes) never share one.
std::filesystem::path fresh_directory(const std::string& root, const std::string& graph) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) user_error("debug directory '" + root + "': " + ec.message());
  for (int n = 0; n < 100000; ++n) {
    std::filesystem::path dir = std::filesystem::path(root) / (graph + "." + std::to_string(n));
    if (std::filesystem::create_directory(dir, ec)) return dir;
    if (ec) user_error("debug directory '" + dir.string() + "': " + ec.message());
  }
  user_error("debug directory '" + root + "' holds 100000 compiles of " + graph + ": clear it");
}

std::string optional_json(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "null"; }

std::string memory_json(const Specialization& s, const std::vector<MemoryPoint>& points) {
  std::ostringstream os;
  os << "{\n  \"planned_peak_bytes\": " << optional_json(planned_peak_at_hints(s)) << ",\n  \"lines\": [";
  for (size_t i = 0; i < points.size(); ++i)
    os << (i ? ",\n" : "\n") << "    {\"line\": " << points[i].line << ", \"what\": " << json_quote(points[i].what)
       << ", \"live_bytes\": " << optional_json(points[i].bytes) << "}";
  os << "\n  ]\n}\n";
  return os.str();
}

std::string compile_json(const Specialization& s, const CompileTrace& trace, const std::vector<CompileEvent>& history,
                         const std::vector<std::string>& pass_files) {
  std::ostringstream os;
  const CompileEvent& me = history.back();
  os << "{\n  \"graph\": " << json_quote(s.wrapper.graph_name) << ",\n  \"target\": " << json_quote(s.wrapper.target.str())
     << ",\n  \"specialization\": " << me.index << ",\n  \"compile_ms\": " << s.stats.compile_ms
     << ",\n  \"kernel_cache_hit\": " << (s.stats.cache_hit ? "true" : "false") << ",\n  \"ops\": " << s.stats.ops
     << ",\n  \"kernels\": " << s.stats.kernels << ",\n  \"library_calls\": " << s.stats.extern_calls
     << ",\n  \"fallback_calls\": " << s.stats.fallback_calls << ",\n  \"phases\": [";
  for (size_t i = 0; i < trace.phases.size(); ++i)
    os << (i ? ", " : "") << "{\"phase\": " << json_quote(trace.phases[i].first) << ", \"ms\": " << trace.phases[i].second
       << "}";
  os << "],\n  \"passes\": [";
  for (size_t i = 0; i < trace.passes.size(); ++i)
    os << (i ? ", " : "") << "{\"pass\": " << json_quote(trace.passes[i].name) << ", \"file\": " << json_quote(pass_files[i])
       << "}";
  os << "],\n  \"fallbacks\": [";
  std::vector<Fallback> fallbacks = fallbacks_of(s.wrapper);
  for (size_t i = 0; i < fallbacks.size(); ++i)
    os << (i ? ",\n    " : "\n    ") << "{\"node\": " << json_quote(fallbacks[i].node) << ", \"op\": "
       << json_quote(fallbacks[i].op) << ", \"line\": " << fallbacks[i].line << ", \"runs_on\": "
       << json_quote(fallbacks[i].runs_on) << ", \"why\": " << json_quote(fallbacks[i].why) << "}";
  os << "],\n  \"compiles\": [";
  for (size_t i = 0; i < history.size(); ++i) {
    const CompileEvent& e = history[i];
    os << (i ? ",\n    " : "\n    ") << "{\"specialization\": " << e.index << ", \"sizes\": " << json_quote(e.sizes)
       << ", \"reason\": " << json_quote(e.reason) << ", \"compile_ms\": " << e.compile_ms << ", \"dir\": "
       << json_quote(e.dir) << "}";
  }
  os << "]\n}\n";
  return os.str();
}

}  // namespace

std::vector<MemoryPoint> memory_timeline(const Specialization& s) {
  const ShapeEnv& env = s.graph->shape_env();
  std::vector<SymExpr> live = cw::live_bytes_by_line(s.wrapper);
  std::vector<MemoryPoint> out;
  for (size_t i = 0; i < live.size(); ++i) {
    std::string what = cw::print_line(s.wrapper, s.wrapper.lines[i]);
    if (what.size() > 160) what = what.substr(0, 157) + "...";
    out.push_back({i + 1, std::move(what), env.int_hint(live[i])});
  }
  return out;
}

std::optional<int64_t> planned_peak_at_hints(const Specialization& s) {
  return s.graph->shape_env().int_hint(s.wrapper.planned_peak_bytes);
}

std::vector<Fallback> fallbacks_of(const cw::WrapperProgram& w) {
  std::vector<Fallback> out;
  for (size_t i = 0; i < w.lines.size(); ++i) {
    const cw::Line& l = w.lines[i];
    if (l.kind != cw::Line::Kind::FallbackCall) continue;
    for (int k : l.sources) {
      const cw::SourceNode& n = w.sources.at(static_cast<size_t>(k));
      out.push_back({n.value, n.op, i + 1, l.device_kernel ? loop::library_call_name(l.library) : "reference kernel",
                     n.why});
    }
  }
  return out;
}

std::string pass_file(size_t index, const std::string& pass) {
  char number[8];
  std::snprintf(number, sizeof number, "%02zu", index);
  return "passes/" + std::string(number) + "-" + pass + ".tir";
}

std::string debug_root(const std::string& dump_dir) {
  if (!dump_dir.empty()) return dump_dir;
  if (!env_flag("TOROID_DEBUG").value_or(false)) return "";
  const char* dir = std::getenv("TOROID_DEBUG_DIR");
  return dir && *dir ? dir : "toroid_debug";
}

std::string write_debug_dir(const Specialization& s, const CompileTrace& trace, std::vector<CompileEvent>& history,
                            const std::string& root) {
  std::filesystem::path dir = fresh_directory(root, s.wrapper.graph_name);
  history.back().dir = dir.string();
  std::vector<std::string> pass_files;
  std::filesystem::create_directory(dir / "passes");
  for (size_t i = 0; i < trace.passes.size(); ++i) {
    pass_files.push_back(pass_file(i, trace.passes[i].name));
    write_file(dir / pass_files.back(), trace.passes[i].graph);
  }
  bool cuda = s.wrapper.target.is_cuda();
  write_file(dir / "graph.tir", emit(s, "graph"));
  write_file(dir / "loop.txt", emit(s, "loop"));
  write_file(dir / "wrapper.txt", emit(s, "wrapper"));
  write_file(dir / (cuda ? "kernels.cu" : "kernels.cpp"), s.source);
  write_file(dir / "provenance.json", emit(s, "provenance"));
  std::vector<MemoryPoint> memory = memory_timeline(s);
  write_file(dir / "memory.json", memory_json(s, memory));
  write_file(dir / "compile.json", compile_json(s, trace, history, pass_files));
  write_file(dir / "report.html", render_report(s, trace, history, memory));
  return dir.string();
}

}  // namespace toroid::driver
