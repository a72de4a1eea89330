#include "toroid/passes/pass_manager.h"

#include <iostream>

#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/passes/cse.h"
#include "toroid/passes/dce.h"
#include "toroid/passes/constant_fold.h"
#include "toroid/passes/decompose.h"
#include "toroid/passes/functionalize_user_kernels.h"
#include "toroid/passes/fuse_addmm_activation.h"
#include "toroid/passes/reinplace_user_kernels.h"
#include "toroid/passes/remove_noops.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid {
namespace {

constexpr PassInfo kPasses[] = {
    {"dce", "erase unused calls and constants without side effects", &dce},
    {"cse", "merge identical pure calls and constants", &cse},
    {"decompose", "rewrite composite ops (softmax, norms, linear, ...) into the lowerable set", &decompose},
    {"remove_noops", "remove clones, same-shape views and identity arithmetic (never creating new aliasing)", &remove_noops},
    {"constant_fold", "evaluate small calls of constants with the reference kernels", &constant_fold},
    {"fuse_addmm_activation", "relu / tanh-gelu of an addmm -> _addmm_activation (cuBLASLt epilogues; CUDA pipeline)",
     &fuse_addmm_activation},
    {"functionalize_user_kernels", "user kernels' mutation form -> the functional form (clones, later uses, copy_ back)",
     &functionalize_user_kernels},
    {"reinplace_user_kernels", "user kernels write in place the tensors nothing else reads (no clone)",
     &reinplace_user_kernels},
};

}  // namespace

std::span<const PassInfo> registered_passes() { return kPasses; }

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : kPasses)
    if (name == p.name) return &p;
  return nullptr;
}

std::vector<const PassInfo*> parse_pass_list(std::string_view spec) {
  std::vector<const PassInfo*> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view name = spec.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    const PassInfo* pass = find_pass(name);
    if (!pass) {
      std::string known;
      for (const PassInfo& p : kPasses) known += (known.empty() ? "" : ", ") + std::string(p.name);
      user_error("unknown pass '" + std::string(name) + "' (known passes: " + known + ")");
    }
    out.push_back(pass);
  }
  return out;
}

void run_passes(Graph& g, std::span<const PassInfo* const> passes, const PassManagerOptions& options) {
  std::ostream& out = options.print_stream ? *options.print_stream : std::cerr;
  if (options.verify_each) verify_or_throw(g, "before the first pass");
  for (const PassInfo* pass : passes) {
    AliasSnapshot before;
    if (options.verify_each) before = alias_snapshot(g);
    TOROID_LOG("passes", std::string("running ") + pass->name);
    pass->run(g);
    if (options.verify_each) {
      verify_or_throw(g, std::string("after pass '") + pass->name + "'");
      Diagnostics aliasing = check_no_new_aliasing(before, g, pass->name);
      if (!aliasing.empty()) user_error_preformatted(aliasing.str());
    }
    if (options.print_after_all) {
      out << "// ----- IR after " << pass->name << " ----- //\n" << print_graph(g);
    }
    if (options.after_each) options.after_each(pass->name, g);
  }
}

}  // namespace toroid
