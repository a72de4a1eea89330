#include "toroid/driver/user_kernels.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>

#include "toroid/codegen/cuda/kernel_ir_analysis.h"
#include "toroid/codegen/wrapper/ir.h"
#include "toroid/graph/graph.h"
#include "toroid/ops/user_kernel.h"
#include "toroid/support/error.h"
#include "toroid/support/json.h"
#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/nvrtc.h"
#endif

namespace toroid::driver {

namespace {

// CUDA C++ as PTX for compute_`arch`, compiled once per process for each source.
std::string user_ptx(const std::string& source, int arch) {
#ifdef TOROID_WITH_CUDA
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, std::string> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(source, arch ? arch : 90);
  auto it = compiled.find(key);
  if (it == compiled.end()) it = compiled.emplace(key, runtime::cuda::compile_user_ptx(source, "user_kernel", key.second)).first;
  return it->second;
#else
  (void)source;
  (void)arch;
  user_error("this toroid was built without CUDA, so it cannot compile CUDA C++ (pass its PTX)");
#endif
}

// The kernels of `text` as the analysis of `kind` sees them.
std::vector<codegen::cuda::KernelMutations> analyze(const std::string& text, const std::string& kind, int arch) {
  namespace cuda = codegen::cuda;
  if (kind == "ttir") return cuda::analyze_ttir_mutations(text, "<ttir>");
  if (kind == "ptx") return cuda::analyze_ptx_mutations(text, "<ptx>");
  if (kind == "cuda") return cuda::analyze_ptx_mutations(user_ptx(text, arch), "<ptx of the CUDA source>");
  user_error("unknown kernel kind '" + kind + "' (cuda, ptx or ttir)");
}

}  // namespace

std::vector<UserKernelCall> check_user_kernels(const Graph& g, int arch) {
  std::vector<UserKernelCall> out;
  for (const Node* n : g.nodes()) {
    for (const NamedSubgraph& sub : n->subgraphs()) {  // a cond's branch, a loop's body
      std::vector<UserKernelCall> inner = check_user_kernels(*sub.graph, arch);
      out.insert(out.end(), std::make_move_iterator(inner.begin()), std::make_move_iterator(inner.end()));
    }
    if (!n->is_call() || (n->target() != ops::kUserKernelMutation && n->target() != ops::kUserKernelFunctional)) continue;
    UserKernelCall call;
    call.node = n;
    const std::string& name = n->args().at(0).str();
    size_t tensors = n->args().at(1).list().size(), scalars = n->args().at(2).list().size();
    std::optional<ops::UserKernelSource> source = ops::user_kernel_source(*n);
    if (!source) user_error("user kernel '" + name + "' has no source and no entry in the graph's kernel table", n->loc());
    const std::string &kind = source->kind, &entry = source->entry;
    if (kind == "cubin" || kind == "cpp") {
      for (size_t i = 0; i < tensors; ++i) call.written.push_back(i);
      call.notes.push_back("a " + kind + " kernel is not analysed: every tensor treated as written");
    } else {
      // A Triton kernel: its TTIR says what it writes (its PTX loads and stores in inline
      // assembly); its parameters are the PTX's first ones (Triton appends scratch pointers).
      bool ttir = !source->ttir.empty();
      std::vector<codegen::cuda::KernelMutations> kernels;
      try {
        kernels = ttir ? analyze(source->ttir, "ttir", arch) : analyze(source->source, kind, arch);
      } catch (const UserError& e) {
        user_error("kernel '" + name + "': " + e.message(), n->loc());
      }
      auto k = std::find_if(kernels.begin(), kernels.end(), [&](const auto& m) { return m.entry == entry; });
      if (k == kernels.end() && ttir && kernels.size() == 1) k = kernels.begin();
      if (k == kernels.end()) user_error("the source of kernel '" + name + "' has no kernel named '" + entry + "'", n->loc());
      if (ttir ? k->params.size() > tensors + scalars : k->params.size() != tensors + scalars)
        user_error("kernel '" + entry + "' takes " + std::to_string(k->params.size()) + " parameters but the call passes " +
                       std::to_string(tensors) + " tensors and " + std::to_string(scalars) + " scalars (tensors first)",
                   n->loc());
      std::vector<size_t> order = ops::user_kernel_positions(*n, "order");  // parameter -> tensors-then-scalars
      for (size_t p = 0; p < k->params.size(); ++p) {
        size_t i = order.empty() ? p : order.at(p);
        if (i >= tensors) {
          if (k->params[p].written)
            user_error("kernel '" + entry + "' writes through parameter " + std::to_string(p) +
                           ", which the call passes a scalar", n->loc());
          continue;
        }
        if (k->params[p].written) call.written.push_back(i);
        if (k->params[p].read) call.read.push_back(i);
      }
      std::sort(call.written.begin(), call.written.end());
      std::sort(call.read.begin(), call.read.end());
      call.notes = k->conservative;
    }
    std::vector<size_t> named = ops::user_kernel_positions(*n, "writes");
    for (size_t w : call.written)
      if (std::find(named.begin(), named.end(), w) == named.end())
        user_error("kernel '" + entry + "' writes tensor " + std::to_string(w) + " (" +
                       describe_argument(n->args()[1].list()[w]) + "), which writes does not name",
                   n->loc());
    out.push_back(std::move(call));
  }
  return out;
}

void prepare_user_kernels(codegen::wrapper::WrapperProgram& w, int arch) {
  namespace wr = codegen::wrapper;
  for (wr::Line& l : w.lines)
    for (auto& p : l.programs) prepare_user_kernels(*p, arch);  // a cond's branches, a loop's body
  for (wr::UserKernel& k : w.user_kernels) {
    k.ptx = k.kind == "cuda" ? user_ptx(k.source, arch) : k.source;
    std::vector<codegen::cuda::KernelMutations> kernels = codegen::cuda::analyze_ptx_mutations(k.ptx, "<" + k.name + ">");
    auto found = std::find_if(kernels.begin(), kernels.end(), [&](const auto& m) { return m.entry == k.entry; });
    if (found == kernels.end()) user_error("the source of user kernel '" + k.name + "' has no kernel named '" + k.entry + "'");
    k.param_types.clear();
    for (const auto& param : found->params) k.param_types.push_back(param.type);
  }
  for (const wr::Line& l : w.lines) {
    if (l.kind != wr::Line::Kind::UserKernel) continue;
    const wr::UserKernel& k = w.user_kernels.at(static_cast<size_t>(l.launch.kernel));
    size_t given = l.launch.tensors.size() + l.launch.scalars.size();
    if (k.param_types.size() != given)
      user_error("user kernel '" + k.entry + "' takes " + std::to_string(k.param_types.size()) +
                     " parameters but the call passes " + std::to_string(l.launch.tensors.size()) + " tensors and " +
                     std::to_string(l.launch.scalars.size()) + " scalars (tensors first)",
                 l.call.loc);
    for (size_t p = 0; p < k.param_types.size(); ++p) {
      const std::string& t = k.param_types[p];
      size_t i = l.launch.order.empty() ? p : static_cast<size_t>(l.launch.order[p]);
      bool wide = t == ".u64" || t == ".s64" || t == ".b64";
      bool scalar_type = wide || t == ".u32" || t == ".s32" || t == ".b32" || t == ".f32" || t == ".f64" || t == ".u16" ||
                         t == ".s16" || t == ".b16" || t == ".u8" || t == ".s8" || t == ".b8";
      if (i < l.launch.tensors.size() ? !wide : !scalar_type)
        user_error("parameter " + std::to_string(p) + " of user kernel '" + k.entry + "' has PTX type " + t + ", but the call passes " +
                       (i < l.launch.tensors.size() ? "a tensor (a 64-bit pointer)" : "a scalar (a number of at most 64 bits)"),
                   l.call.loc);
    }
  }
}

std::string analyze_kernel_json(const std::string& text, const std::string& kind, int arch) {
  namespace cuda = codegen::cuda;
  std::vector<cuda::KernelMutations> kernels = analyze(text, kind, arch);
  std::string out = "[";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const cuda::KernelMutations& m = kernels[i];
    out += std::string(i ? ", " : "") + "{\"kernel\": " + json_quote(m.entry) + ", \"params\": [";
    for (size_t p = 0; p < m.params.size(); ++p)
      out += std::string(p ? ", " : "") + "{\"name\": " + json_quote(m.params[p].name) + ", \"type\": " +
             json_quote(m.params[p].type) + ", \"written\": " + (m.params[p].written ? "true" : "false") +
             ", \"read\": " + (m.params[p].read ? "true" : "false") + "}";
    out += "], \"notes\": [";
    for (size_t n = 0; n < m.conservative.size(); ++n) out += std::string(n ? ", " : "") + json_quote(m.conservative[n]);
    out += "]}";
  }
  return out + "]";
}

}  // namespace toroid::driver
