// Compiling generated C++ into a shared object, with an on-disk cache.
//
// The cache lives in $TOROID_CACHE_DIR, else $XDG_CACHE_HOME/toroid, else ~/.cache/toroid. An
// entry is keyed by the source's hash, the compiler's identity (resolved path, size and
// modification time) and the flags. Entries are written through a temporary file and renamed,
// with a checksum beside them, so concurrent or killed compiles never leave a corrupt entry
// that is used: a corrupt one is detected and rebuilt.
#pragma once

#include <string>
#include <vector>

#include "toroid/graph/target.h"

namespace toroid::runtime {

struct SharedObject {
  void* handle = nullptr;  // from dlopen; kept open for the life of the process
  std::string path;
  bool cache_hit = false;
};

struct CompileFlags {
  std::string compiler;  // default: $CXX, else "c++"
  std::string flags = "-O3 -march=native -fopenmp -shared -fPIC -fno-math-errno -Wl,--push-state,--no-as-needed -lmvec -Wl,--pop-state";
};
// The flags for a CPU target (its -march); a UserError for an -march that is not a plain name.
CompileFlags compile_flags_for(const Target& target);

SharedObject compile_and_load(const std::string& source, const CompileFlags& flags = {});
// Several translation units (codegen::wrapper::kernels_sources), compiled in parallel and
// linked into one shared object; one cache entry keyed by all of them.
SharedObject compile_and_load(const std::vector<std::string>& sources, const CompileFlags& flags = {});

// The cache directory in use (created on demand).
std::string cache_dir();

// Looks a symbol up; InternalError naming it when missing.
void* find_symbol(const SharedObject& so, const std::string& name);

}  // namespace toroid::runtime
