#include "toroid/runtime/so_cache.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

// The entry directory's shared object, loaded when the entry is intact (a published entry never
// changes, so what was checked is what dlopen reads).
bool try_load(const std::string& entry, const std::string& key, SharedObject& out) {
  if (!detail::entry_dir_intact(entry, "kernels.so", key)) return false;
  std::string so = entry + "/kernels.so";
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    TOROID_LOG("cache", "cannot load " + so + " (" + std::string(::dlerror()) + "): rebuilding");
    return false;
  }
  out.handle = h;
  out.path = so;
  return true;
}

// Runs `cmd` with /bin/sh in a process group of its own, under a keeper process that kills the
// group when this process dies: a toroid killed mid-compile leaves no compiler running (its
// temporary directory is swept later). Returns the command's exit status (-1 if it could not run).
int run_compiler(const std::string& cmd) {
  const pid_t parent = ::getpid();
  const char* text = cmd.c_str();
  pid_t keeper = ::fork();
  if (keeper < 0) return -1;
  if (keeper == 0) {
    // Only async-signal-safe calls from here: the parent may have other threads.
    sigset_t set;
    ::sigemptyset(&set);
    ::sigaddset(&set, SIGUSR1);
    ::sigaddset(&set, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGUSR1);
    if (::getppid() != parent) ::_exit(127);  // died before the request took hold
    pid_t child = ::fork();
    if (child < 0) ::_exit(127);
    if (child == 0) {
      ::setpgid(0, 0);
      ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
      ::execl("/bin/sh", "sh", "-c", text, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(child, child);
    for (;;) {
      int sig = 0;
      ::sigwait(&set, &sig);
      if (sig == SIGUSR1) {
        ::kill(-child, SIGKILL);
        ::_exit(128 + SIGKILL);
      }
      int status = 0;
      if (::waitpid(child, &status, WNOHANG) == child)
        ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  }
  int status = 0;
  while (::waitpid(keeper, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

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

// What -march=native compiles for: the host CPU's instruction set extensions (/proc/cpuinfo's
// flags, or Features on ARM), so that a cache shared between machines never hands one of them a
// kernel built for extensions it lacks.
const std::string& host_isa() {
  static const std::string isa = [] {
    std::string info;
    try {
      info = read_file("/proc/cpuinfo");
    } catch (const UserError&) {
      return std::string("unknown");
    }
    std::stringstream lines(info);
    std::string line;
    while (std::getline(lines, line))
      if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) return line;
    return std::string("unknown");
  }();
  return isa;
}

std::string content_key(std::string_view source) { return detail::hex64(fnv1a64(source)); }

SharedObject load_shared_object(const std::string& bytes, const std::string& name) {
  std::string dir = cache_dir();
  std::string path = dir + "/package-XXXXXX.so";
  int fd = ::mkstemps(path.data(), 3);
  if (fd < 0) user_error("cannot create a file for " + name + "'s kernels in " + dir + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(path.c_str());
      user_error("cannot write " + name + "'s kernels to " + path);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = h ? "" : ::dlerror();
  ::unlink(path.c_str());  // the mapping stays
  if (!h) user_error("cannot load " + name + "'s kernels: " + why);
  SharedObject out;
  out.handle = h;
  out.path = name;
  out.cache_hit = true;
  return out;
}

SharedObject compile_and_load(const std::string& source, const CompileFlags& f) {
  return compile_and_load(std::vector<std::string>{source}, f);
}

SharedObject compile_and_load(const std::vector<std::string>& sources, const CompileFlags& f) {
  TOROID_CHECK(!sources.empty(), "compile_and_load without sources");
  std::string compiler = f.compiler;
  if (compiler.empty()) {
    const char* cxx = std::getenv("CXX");
    compiler = cxx && *cxx ? cxx : "c++";
  }
  bool native = f.flags.find("-march=native") != std::string::npos;
  // g++ and clang keep to 256-bit vectors on AVX-512 CPUs unless told otherwise; the kernels'
  // loops (16-bit float conversions, vectorized exp) run up to 1.7x faster with 512-bit ones
  // (bench/RESULTS.md 14a).
  std::string flags = f.flags;
  if (native && host_isa().find(" avx512f ") != std::string::npos) flags += " -mprefer-vector-width=512";
  uint64_t h = fnv1a64(compiler_identity(compiler) + "\n" + flags + (native ? "\n" + host_isa() : std::string()));
  for (size_t i = 0; i < sources.size(); ++i) h = fnv1a64(sources[i], i == 0 ? h : fnv1a64("\n--part--\n", h));
  std::string key = detail::hex64(h);
  std::string dir = cache_dir();
  // One directory per entry (kernels.so and its sum), published by one rename.
  std::string entry = dir + "/so-" + key;
  SharedObject out;
  if (try_load(entry, key, out)) {
    touch_cache_entry(entry);
    out.cache_hit = true;
    return out;
  }
  detail::sweep_stale(dir);
  std::string tmp = dir + "/tmp-" + detail::unique_suffix();
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) user_error("cannot create " + tmp + " in the kernel cache: " + ec.message());
  auto q = [](const std::string& p) { return "'" + p + "'"; };
  std::string cmd;
  if (sources.size() == 1) {
    write_file_atomic(tmp + "/kernels.cpp", sources[0]);
    cmd = compiler + " " + flags + " -o " + q(tmp + "/kernels.so") + " " + q(tmp + "/kernels.cpp") + " > " +
          q(tmp + "/log") + " 2>&1";
  } else {
    // Each part compiles to an object in the background; the link waits for every one.
    std::string objects, waits;
    for (size_t i = 0; i < sources.size(); ++i) {
      std::string base = tmp + "/kernels" + std::to_string(i);
      write_file_atomic(base + ".cpp", sources[i]);
      cmd += compiler + " " + flags + " -c -o " + q(base + ".o") + " " + q(base + ".cpp") + " > " + q(base + ".log") +
             " 2>&1 & p" + std::to_string(i) + "=$!; ";
      waits += "wait $p" + std::to_string(i) + " || ok=1; ";
      objects += " " + q(base + ".o");
    }
    cmd = "ok=0; " + cmd + waits + "cat " + q(tmp) + "/kernels*.log > " + q(tmp + "/log") + "; [ $ok = 0 ] && " +
          compiler + " " + flags + " -o " + q(tmp + "/kernels.so") + objects + " >> " + q(tmp + "/log") + " 2>&1";
  }
  TOROID_LOG("cache", "compiling " + key + ": " + cmd);
  int rc = run_compiler(cmd);
  if (rc != 0) {
    std::string log;
    try {
      log = read_file(tmp + "/log");
    } catch (const UserError&) {
    }
    std::string kept = dir + "/failed-" + key + (sources.size() == 1 ? ".cpp" : "");
    fs::rename(sources.size() == 1 ? tmp + "/kernels.cpp" : tmp, kept, ec);
    fs::remove_all(tmp, ec);
    TOROID_INTERNAL_ERROR("the C++ compiler failed on generated code (sources kept in " + kept + "):\n" +
                          log.substr(0, 4000));
  }
  for (const fs::directory_entry& e : fs::directory_iterator(tmp, ec))
    if (e.path().filename() != "kernels.so") fs::remove(e.path(), ec);
  detail::write_entry_dir_sum(tmp, "kernels.so", key);
  detail::publish_entry_dir(tmp, entry, "kernels.so", key);
  if (!try_load(entry, key, out)) TOROID_INTERNAL_ERROR("cannot load the freshly compiled " + entry + "/kernels.so");
  std::error_code sec;
  note_cache_growth(fs::file_size(entry + "/kernels.so", sec));
  return out;
}

void* find_symbol(const SharedObject& so, const std::string& name) {
  void* p = ::dlsym(so.handle, name.c_str());
  if (!p) TOROID_INTERNAL_ERROR("symbol " + name + " missing from " + so.path);
  return p;
}

CompileFlags compile_flags_for(const Target& target) {
  const std::string& arch = target.cpu_arch;
  bool plain = !arch.empty() && arch.size() < 64;
  for (char c : arch) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  if (!plain) user_error("CPU target: -march '" + arch + "' is not a processor name (letters, digits, '-', '_', '.')");
  CompileFlags f;
  std::string native = "-march=native";
  f.flags.replace(f.flags.find(native), native.size(), "-march=" + arch);
  return f;
}

}  // namespace toroid::runtime
