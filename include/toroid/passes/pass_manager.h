// The pass registry and the pass manager behind toroid-opt and the compiler pipeline.
#pragma once

#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace toroid {

class Graph;

struct PassInfo {
  const char* name;     // as written in --passes=
  const char* summary;  // one line for --list-passes
  void (*run)(Graph&);
};

// Every pass toroid-opt can run, by name.
std::span<const PassInfo> registered_passes();
const PassInfo* find_pass(std::string_view name);
// Parses "dce,cse" into passes; an unknown name is a UserError listing the known ones.
std::vector<const PassInfo*> parse_pass_list(std::string_view comma_separated);

struct PassManagerOptions {
  // Verify the graph before the first pass and after each one, including the check that the
  // pass created no new aliasing between outputs and inputs.
  bool verify_each = false;
  // Print the graph after each pass to `print_stream`.
  bool print_after_all = false;
  std::ostream* print_stream = nullptr;  // defaults to std::cerr
  // Called with each pass's name and the graph after it (debug directories keep the text).
  std::function<void(const char* pass, const Graph& g)> after_each;
};

// Runs the passes in order. A verification failure is a UserError naming the pass.
void run_passes(Graph& g, std::span<const PassInfo* const> passes, const PassManagerOptions& options);

}  // namespace toroid
