// libFuzzer target for the .tir parser (docs/fuzzing.md).
//
// Any byte string must either parse or fail with a UserError. A crash, a sanitizer report, a
// hang, an escaping exception, or a UserError that wraps an internal error is a bug. A graph that
// parses must print, and the printed text must parse back and print identically.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"

namespace {

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "parser_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<toroid::Graph> g;
  try {
    g = toroid::parse_graph(text, "fuzz.tir");
  } catch (const toroid::UserError& e) {
    // The parser re-throws errors of the graph and sym layers located; an internal error among
    // them is still a bug (a check the parser should have made first, or a bug in that layer).
    // Parser messages start with fixed text, so only a wrapped InternalError starts like this.
    if (e.message().rfind("internal error: ", 0) == 0) bug("internal error while parsing", e.what());
    return 0;
  }
  std::string first = toroid::print_graph(*g);
  std::unique_ptr<toroid::Graph> again;
  try {
    again = toroid::parse_graph(first, "printed.tir");
  } catch (const toroid::UserError& e) {
    bug("the printed graph does not parse", std::string(e.what()) + "\n--- printed:\n" + first);
  }
  std::string second = toroid::print_graph(*again);
  if (first != second) bug("printing is not a fixed point", "--- first:\n" + first + "--- second:\n" + second);
  return 0;
}
