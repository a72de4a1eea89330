#include "toroid/driver/user_kernels.h"

#include "toroid/codegen/cuda/kernel_ir_analysis.h"
#include "toroid/support/error.h"
#include "toroid/support/json.h"
#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/nvrtc.h"
#endif

namespace toroid::driver {

std::string analyze_kernel_json(const std::string& text, const std::string& kind, int arch) {
  namespace cuda = codegen::cuda;
  std::vector<cuda::KernelMutations> kernels;
  if (kind == "ttir") {
    kernels = cuda::analyze_ttir_mutations(text, "<ttir>");
  } else if (kind == "ptx") {
    kernels = cuda::analyze_ptx_mutations(text, "<ptx>");
  } else if (kind == "cuda") {
#ifdef TOROID_WITH_CUDA
    kernels = cuda::analyze_ptx_mutations(runtime::cuda::compile_user_ptx(text, "user_kernel", arch ? arch : 90),
                                          "<ptx of the CUDA source>");
#else
    (void)arch;
    user_error("this toroid was built without CUDA, so it cannot compile CUDA C++ (pass its PTX)");
#endif
  } else {
    user_error("unknown kernel kind '" + kind + "' (cuda, ptx or ttir)");
  }
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
