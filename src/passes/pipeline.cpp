// The compile pipeline, as a script: one line per pass, in order.
#include "toroid/passes/pipeline.h"

#include <vector>

#include "toroid/support/error.h"

namespace toroid {
namespace {

std::vector<const PassInfo*> build(bool cuda) {
  std::vector<const PassInfo*> passes;
  auto add = [&](const char* name) {
    const PassInfo* p = find_pass(name);
    if (p == nullptr) TOROID_INTERNAL_ERROR(std::string("compile pipeline: no pass named ") + name);
    passes.push_back(p);
  };
  add("functionalize_user_kernels");  // user kernels' in-place form -> clones + results
  add("decompose");      // composite ops -> the lowerable set
  add("remove_noops");   // clones, same-shape views, x * 1 ... (no new aliasing)
  add("constant_fold");  // small all-constant calls -> constants
  add("cse");            // merge what the rewrites made identical
  if (cuda) add("fuse_addmm_activation");  // on sole users only, so after cse
  add("dce");            // drop what nothing uses
  add("reinplace_user_kernels");  // once readers are final: clone only what is read later
  return passes;
}

}  // namespace

std::span<const PassInfo* const> compile_pipeline(const Target& target) {
  static const std::vector<const PassInfo*> cpu = build(false), gpu = build(true);
  return target.is_cuda() ? gpu : cpu;
}

void run_compile_pipeline(Graph& g, const PassManagerOptions& options, const Target& target) {
  run_passes(g, compile_pipeline(target), options);
}

}  // namespace toroid
