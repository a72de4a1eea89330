// Debug directories: with CompileOptions::dump_dir set (or TOROID_DEBUG=1), each compile writes
// a directory of its own with the graph after each pass, the loop IR, the Wrapper IR, the
// kernels, the memory plan, the provenance map, fallbacks and recompiles with their reasons,
// the time of each phase, and report.html over all of it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace toroid::driver {

struct Specialization;

// What a compile records beyond its Specialization, only when it has a debug directory.
struct CompileTrace {
  struct Pass {
    std::string name;   // "input" (as parsed), then each pass of the pipeline
    std::string graph;  // the graph's text after it
  };
  std::vector<Pass> passes;
  std::vector<std::pair<std::string, double>> phases;  // milliseconds per phase, in order
};

// One compile of a module: the first, or a recompile and why it happened.
struct CompileEvent {
  size_t index = 0;    // the specialization's, in compile order
  std::string sizes;   // the symbols' values it was compiled for ("s0=4, s1=16")
  std::string reason;  // why no earlier specialization ran them (empty for the first)
  double compile_ms = 0;
  std::string dir;     // its debug directory
};

// Where debug directories go: `dump_dir` when set; else $TOROID_DEBUG_DIR (default
// "toroid_debug") when $TOROID_DEBUG is 1; else "" (none).
std::string debug_root(const std::string& dump_dir);

// Writes compile `history.back()`'s directory, <root>/<graph>.<n> with n the first number not
// taken (so compiles never overwrite each other, in this process or another), fills its `dir`
// and returns it. UserError when the directory or a file cannot be written.
std::string write_debug_dir(const Specialization& s, const CompileTrace& trace, std::vector<CompileEvent>& history,
                            const std::string& root);

}  // namespace toroid::driver
