// Compiling generated C++ into a shared object, with an on-disk cache.
//
// The cache lives in $TOROID_CACHE_DIR, else $XDG_CACHE_HOME/toroid, else ~/.cache/toroid. An
// entry is keyed by the source's hash, the compiler's identity (resolved path, size and
// modification time: its version), the flags and, for -march=native, the host CPU's
// instruction set extensions. It holds at most TOROID_CACHE_MAX_MB (least recently used
// entries go first); `toroidc cache info|clear` shows or empties it. Entries are written through a temporary file and renamed,
// with a checksum beside them, so concurrent or killed compiles never leave a corrupt entry
// that is used: a corrupt one is detected and rebuilt.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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
  // Not -fno-trapping-math: with it g++ folds a float -> int -> float pair into trunc(x), which
  // keeps -0.0 where the integer's 0 converts to +0.0 (1 / (double)(int64_t)-0.2 gave +inf), and
  // a "+ 0.0" after it is dropped first. It only put floor, ceil, trunc and round into vector loops.
  std::string flags =
      "-O3 -march=native -fopenmp -shared -fPIC -fno-math-errno -Wl,--push-state,--no-as-needed -lmvec "
      "-Wl,--pop-state";
  // Text the sources begin with (the kernel prelude's standard headers): compiled once per
  // compiler, flags and text into a precompiled header kept in the cache (pch-<key>), which the
  // sources that begin with it include instead of parsing it again. Parsing those headers was
  // ~0.2 s of a small module's ~0.45 s compile. Empty: none. The entry's key does not depend
  // on it.
  std::string precompiled_prefix;
};
// The flags for a CPU target (its -march); a UserError for an -march that is not a plain name.
CompileFlags compile_flags_for(const Target& target);

// The compiler and flags compile_and_load runs with `f` on this host (`toroidc cache flags`
// prints them, for tools that build generated kernels as the runtime does).
struct CompileCommand {
  std::string compiler, flags;
};
CompileCommand compile_command(const CompileFlags& f = {});

SharedObject compile_and_load(const std::string& source, const CompileFlags& flags = {});
// Several translation units (codegen::wrapper::kernels_sources), compiled in parallel and
// linked into one shared object; one cache entry keyed by all of them.
SharedObject compile_and_load(const std::vector<std::string>& sources, const CompileFlags& flags = {});

// A source's content key (16 hex digits of its FNV-1a hash): how AOT packages name the kernels
// compiled from it.
std::string content_key(std::string_view source);

// A shared object's bytes (an AOT package's kernels) loaded without a compiler: written to a
// private temporary file, opened, and the file removed. `name` is for messages.
SharedObject load_shared_object(const std::string& bytes, const std::string& name);

// What -march=native compiles for here: the CPU's instruction set extensions, as /proc/cpuinfo
// lists them ("unknown" where it cannot be read).
const std::string& host_isa();

// The cache directory in use (created on demand).
std::string cache_dir();

// The kernel cache's entries: compiled shared objects (so-*), cubins (cuda/*.cubin), the
// precompiled prelude headers (pch-*) and the sources of failed compiles kept for reading
// (failed-*), with their bytes.
struct CacheUsage {
  std::string dir;
  uint64_t shared_objects = 0, cubins = 0, headers = 0, failed = 0;
  uint64_t bytes = 0;
  uint64_t limit = 0;  // cache_limit_bytes()
  uint64_t entries() const { return shared_objects + cubins + headers + failed; }
};
CacheUsage cache_usage();
// Removes every entry (what other processes still have loaded stays valid for them); returns
// what was there.
CacheUsage clear_cache();
// The most the cache keeps: TOROID_CACHE_MAX_MB MiB (default 4096); a UserError for a value
// that is not a positive integer. A new entry past it evicts the least recently used ones.
uint64_t cache_limit_bytes();
// Marks an entry used now (its place in the eviction order); errors are ignored.
void touch_cache_entry(const std::string& path);
// Evicts the least recently used entries until the cache holds at most 90% of its limit;
// returns how many it removed. Scans the whole cache (6,000 entries: ~0.1 s).
int trim_cache();
// After a compile added `bytes` to the cache: trim_cache() on this process's first compile and
// whenever its running estimate of the cache's bytes (the last scan's total plus what it added
// since) passes the limit, so that a compile does not scan the cache every time. Returns what
// trim_cache() removed.
int note_cache_growth(uint64_t bytes);

// Looks a symbol up; InternalError naming it when missing.
void* find_symbol(const SharedObject& so, const std::string& name);

}  // namespace toroid::runtime
