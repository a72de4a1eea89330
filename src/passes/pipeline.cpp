// The compile pipeline, as a script: one line per pass, in order.
#include "toroid/passes/pipeline.h"

#include <vector>

#include "toroid/support/error.h"

namespace toroid {
namespace {

std::vector<const PassInfo*> build() {
  std::vector<const PassInfo*> passes;
  auto add = [&](const char* name) {
    const PassInfo* p = find_pass(name);
    if (p == nullptr) TOROID_INTERNAL_ERROR(std::string("compile pipeline: no pass named ") + name);
    passes.push_back(p);
  };
  add("decompose");      // composite ops -> the lowerable set
  add("remove_noops");   // clones, same-shape views, x * 1 ... (seed 002 aliasing rules)
  add("constant_fold");  // small all-constant calls -> constants
  add("cse");            // merge what the rewrites made identical
  add("dce");            // drop what nothing uses
  return passes;
}

}  // namespace

std::span<const PassInfo* const> compile_pipeline() {
  static const std::vector<const PassInfo*> passes = build();
  return passes;
}

void run_compile_pipeline(Graph& g, const PassManagerOptions& options) { run_passes(g, compile_pipeline(), options); }

}  // namespace toroid
