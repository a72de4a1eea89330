// Opening a CUDA toolkit library (NVRTC, cuBLASLt, cuDNN) with dlopen and binding its entry points.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace toroid::runtime::cuda::toolkit {

// Tries `<stem>.so.<major>` and `<stem>.so` on the loader path (a library the process already
// loaded, such as PyTorch's cuDNN, is found by its soname), then in $CUDA_HOME/lib64,
// /usr/local/cuda/lib64 and /usr/local/cuda/lib (where the toolkit puts cuDNN). The handle of the first that loads (kept open for the life of the
// process), or nullptr with every candidate and dlerror's reason in *why.
inline void* open_library(const std::string& stem, const std::string& major, std::string* why) {
  std::vector<std::string> dirs = {""};
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back("/usr/local/cuda/lib/");
  std::string tried;
  for (const std::string& dir : dirs) {
    for (const std::string& name : {stem + ".so." + major, stem + ".so"}) {
      if (void* h = ::dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
      const char* err = ::dlerror();
      tried += "\n  " + dir + name + ": " + (err ? err : "not loadable");
    }
  }
  *why = stem + " not found; tried:" + tried;
  return nullptr;
}

// Binds `fn` to the library's symbol `name`; a missing one is added to *missing.
template <class Fn>
void bind_symbol(void* lib, const char* name, Fn& fn, std::string* missing) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (!fn) *missing += std::string(missing->empty() ? "" : ", ") + name;
}

}  // namespace toroid::runtime::cuda::toolkit
