#include "toroid/runtime/so_cache.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <sstream>

#include "toroid/support/error.h"
#include "toroid/support/file.h"
#include "toroid/support/hash.h"
#include "toroid/support/log.h"
#include "cache_entry.h"

namespace toroid::runtime {

namespace fs = std::filesystem;

namespace {

// The compiler's identity without running it: its resolved path, size and mtime.
std::string compiler_identity(const std::string& compiler) {
  std::string path = compiler;
  if (compiler.find('/') == std::string::npos) {
    const char* env = std::getenv("PATH");
    std::stringstream dirs(env ? env : "/usr/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      fs::path p = fs::path(dir) / compiler;
      if (::access(p.c_str(), X_OK) == 0) {
        path = p.string();
        break;
      }
    }
  }
  std::error_code ec;
  fs::path resolved = fs::canonical(path, ec);
  if (ec) user_error("C++ compiler '" + compiler + "' not found (set CXX to a working compiler)");
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) user_error("cannot stat the C++ compiler " + resolved.string());
  return resolved.string() + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
}

bool try_load(const std::string& so, SharedObject& out) {
  if (!detail::read_intact_entry(so)) return false;
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    TOROID_LOG("cache", "cannot load " + so + " (" + std::string(::dlerror()) + "): rebuilding");
    return false;
  }
  out.handle = h;
  out.path = so;
  return true;
}

}  // namespace

namespace detail {

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string checksum(std::string_view bytes) { return hex64(fnv1a64(bytes)); }

std::string unique_suffix() {
  static std::mutex m;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(m);
  return std::to_string(::getpid()) + "-" + hex64(rng());
}

std::optional<std::string> read_intact_entry(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec) || !fs::exists(path + ".sum", ec)) return std::nullopt;
  std::string want, contents;
  try {
    want = read_file(path + ".sum");
    contents = read_file(path);
  } catch (const UserError&) {
    return std::nullopt;
  }
  if (want != checksum(contents)) {
    TOROID_LOG("cache", "corrupt entry " + path + " (checksum mismatch): rebuilding");
    return std::nullopt;
  }
  return contents;
}

void write_entry_checksum(const std::string& path, std::string_view contents) {
  write_file_atomic(path + ".sum", checksum(contents));
}

}  // namespace detail

std::string cache_dir() {
  std::string dir;
  if (const char* d = std::getenv("TOROID_CACHE_DIR"); d && *d) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::string(x) + "/toroid";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/toroid";
  else dir = "/tmp/toroid-cache";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) user_error("cannot create the kernel cache directory " + dir + ": " + ec.message());
  return dir;
}

SharedObject compile_and_load(const std::string& source, const CompileFlags& f) {
  std::string compiler = f.compiler;
  if (compiler.empty()) {
    const char* cxx = std::getenv("CXX");
    compiler = cxx && *cxx ? cxx : "c++";
  }
  std::string key = detail::hex64(fnv1a64(source, fnv1a64(compiler_identity(compiler) + "\n" + f.flags)));
  std::string dir = cache_dir();
  std::string so = dir + "/" + key + ".so";
  SharedObject out;
  if (try_load(so, out)) {
    out.cache_hit = true;
    return out;
  }
  std::string tmp = dir + "/tmp-" + detail::unique_suffix();
  write_file_atomic(tmp + ".cpp", source);
  std::string cmd = compiler + " " + f.flags + " -o '" + tmp + ".so' '" + tmp + ".cpp' > '" + tmp + ".log' 2>&1";
  TOROID_LOG("cache", "compiling " + key + ": " + cmd);
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::string log;
    try {
      log = read_file(tmp + ".log");
    } catch (const UserError&) {
    }
    std::string kept = dir + "/failed-" + key + ".cpp";
    std::error_code ec;
    fs::rename(tmp + ".cpp", kept, ec);
    fs::remove(tmp + ".log", ec);
    TOROID_INTERNAL_ERROR("the C++ compiler failed on generated code (source kept at " + kept + "):\n" +
                          log.substr(0, 4000));
  }
  std::error_code ec;
  detail::write_entry_checksum(so, read_file(tmp + ".so"));
  fs::rename(tmp + ".so", so, ec);
  if (ec) TOROID_INTERNAL_ERROR("cannot move the compiled kernels into the cache: " + ec.message());
  fs::remove(tmp + ".cpp", ec);
  fs::remove(tmp + ".log", ec);
  if (!try_load(so, out)) TOROID_INTERNAL_ERROR("cannot load the freshly compiled " + so);
  return out;
}

void* find_symbol(const SharedObject& so, const std::string& name) {
  void* p = ::dlsym(so.handle, name.c_str());
  if (!p) TOROID_INTERNAL_ERROR("symbol " + name + " missing from " + so.path);
  return p;
}

}  // namespace toroid::runtime
