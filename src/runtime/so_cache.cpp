#include "toroid/runtime/so_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <mutex>
#include <optional>
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

// `flags` without what only the link reads (-shared, -Wl,..., -l...): with them, g++ links the
// header instead of precompiling it.
std::string compile_only_flags(const std::string& flags) {
  std::stringstream words(flags);
  std::string word, out;
  while (words >> word)
    if (word != "-shared" && word.rfind("-Wl,", 0) != 0 && word.rfind("-l", 0) != 0) out += (out.empty() ? "" : " ") + word;
  return out;
}

// A precompiled header's entry pch-<key>: prefix.h, prefix.h.gch and `manifest` ("<key>
// <bytes of the .gch>"). The .gch (~25 MB) is not summed on every use (that cost ~50 ms a
// process): a truncated one fails the size check, another key's entry the key, and g++ checks
// that what it loads is a header it made.
bool header_entry_intact(const std::string& entry, const std::string& key) {
  std::error_code ec;
  uintmax_t size = fs::file_size(entry + "/prefix.h.gch", ec);
  if (ec) return false;
  std::ifstream in(entry + "/manifest");
  std::string manifest_key;
  uintmax_t manifest_size = 0;
  return static_cast<bool>(in >> manifest_key >> manifest_size) && manifest_key == key && manifest_size == size;
}

// The headers found intact in this process (by path: the cache directory may change).
std::mutex known_headers_mu;
std::set<std::string> known_headers;

void forget_precompiled_header(const std::string& header) {
  std::lock_guard<std::mutex> lock(known_headers_mu);
  known_headers.erase(header);
}

bool holds_a_shared_object(const std::string& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("so-", 0) == 0) return true;
  return false;
}

// Runs `script` with /bin/sh in a process of its own session that outlives this one, its
// standard streams on /dev/null (a caller reading this process's output does not wait for it).
void spawn_detached(const std::string& script) {
  const char* text = script.c_str();
  pid_t child = ::fork();
  if (child < 0) return;
  if (child == 0) {
    // Only async-signal-safe calls until exec: the parent may have other threads.
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execl("/bin/sh", "sh", "-c", text, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// The header to -include for sources that begin with `prefix`: `<dir>/pch-<key>/prefix.h`, with
// prefix.h.gch beside it (per compiler, flags and text), or none yet. A cache that holds a
// compiled module already (a cache in use) gets it built in the background, by a detached shell
// under the lock directory lock-pch-<key>, so that no compile waits the ~1 s it takes: this
// compile parses the headers, later ones include them. A compiler that cannot precompile leaves
// its log as failed-pch-<key>.log, and it is not tried again. A compiler that cannot read the
// .gch reads the header's text beside it, so a source compiles the same either way.
std::optional<std::string> precompiled_header(const std::string& dir, const std::string& compiler,
                                              const std::string& identity, const std::string& flags,
                                              const std::string& prefix) {
  std::string header_flags = compile_only_flags(flags);
  std::string key = detail::hex64(fnv1a64(identity + "\n" + header_flags + "\n--prefix--\n" + prefix));
  std::string entry = dir + "/pch-" + key, header = entry + "/prefix.h";
  std::lock_guard<std::mutex> lock(known_headers_mu);
  if (known_headers.count(header)) {
    touch_cache_entry(entry);
    return header;
  }
  std::error_code ec;
  if (header_entry_intact(entry, key)) {
    touch_cache_entry(entry);
    known_headers.insert(header);
    return header;
  }
  std::string failed = dir + "/failed-pch-" + key + ".log";
  if (fs::exists(failed, ec) || !holds_a_shared_object(dir)) return std::nullopt;
  if (fs::exists(entry, ec)) {  // corrupt: moved aside (one rename), then removed
    TOROID_LOG("cache", "corrupt precompiled header " + entry + ": rebuilding");
    std::string trash = dir + "/trash-" + detail::unique_suffix();
    fs::rename(entry, trash, ec);
    fs::remove_all(trash, ec);
  }
  std::string tmp = dir + "/tmp-" + detail::unique_suffix(), gch = tmp + "/prefix.h.gch";
  fs::create_directories(tmp, ec);
  if (ec) return std::nullopt;
  write_file_atomic(tmp + "/prefix.h", prefix);
  auto q = [](const std::string& p) { return "'" + p + "'"; };
  std::string locked = dir + "/lock-pch-" + key;
  std::string script =
      // A lock left by a build that was killed is stale after two minutes.
      "find " + q(dir) + " -maxdepth 1 -name " + q("lock-pch-" + key) + " -mmin +2 -exec rmdir {} + 2>/dev/null; " +
      "if mkdir " + q(locked) + " 2>/dev/null; then " + compiler + " " + header_flags + " -x c++-header " +
      q(tmp + "/prefix.h") + " -o " + q(gch) + " > " + q(tmp + "/log") + " 2>&1 && [ -s " + q(gch) + " ] && " +
      "echo " + key + " $(wc -c < " + q(gch) + ") > " + q(tmp + "/manifest") + " && mv -T " + q(tmp) + " " + q(entry) +
      " 2>/dev/null || { [ -d " + q(entry) + " ] || mv " + q(tmp + "/log") + " " + q(failed) + "; }; rmdir " +
      q(locked) + "; fi; rm -rf " + q(tmp);
  TOROID_LOG("cache", "precompiling the kernels' headers " + key + " in the background: " + script);
  spawn_detached(script);
  return std::nullopt;
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

CompileCommand compile_command(const CompileFlags& f) {
  CompileCommand c;
  c.compiler = f.compiler;
  if (c.compiler.empty()) {
    const char* cxx = std::getenv("CXX");
    c.compiler = cxx && *cxx ? cxx : "c++";
  }
  // g++ and clang keep to 256-bit vectors on AVX-512 CPUs unless told otherwise; the kernels'
  // loops (16-bit float conversions, vectorized exp) run up to 1.7x faster with 512-bit ones
  // (bench/RESULTS.md 14a).
  c.flags = f.flags;
  if (f.flags.find("-march=native") != std::string::npos && host_isa().find(" avx512f ") != std::string::npos)
    c.flags += " -mprefer-vector-width=512";
  return c;
}

SharedObject compile_and_load(const std::vector<std::string>& sources, const CompileFlags& f) {
  TOROID_CHECK(!sources.empty(), "compile_and_load without sources");
  // Named copies, not a structured binding: clang 14's lambdas cannot capture one.
  const CompileCommand command_line = compile_command(f);
  const std::string compiler = command_line.compiler, flags = command_line.flags;
  bool native = f.flags.find("-march=native") != std::string::npos;
  std::string compiler_id = compiler_identity(compiler);
  std::string identity = compiler_id + (native ? "\n" + host_isa() : std::string());
  uint64_t h = fnv1a64(compiler_id + "\n" + flags + (native ? "\n" + host_isa() : std::string()));
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
  const std::string& prefix = f.precompiled_prefix;
  std::optional<std::string> header;
  if (!prefix.empty() && sources[0].compare(0, prefix.size(), prefix) == 0)
    header = precompiled_header(dir, compiler, identity, flags, prefix);
  // A source that begins with the precompiled prefix is written without it, from a #line that
  // keeps the compiler's line numbers those of the whole source (kept whole if it fails).
  auto source_file = [&](const std::string& path, const std::string& source) {
    bool precompiled = header && source.compare(0, prefix.size(), prefix) == 0;
    if (!precompiled) {
      write_file_atomic(path, source);
      return std::string();
    }
    size_t lines = static_cast<size_t>(std::count(prefix.begin(), prefix.end(), '\n'));
    write_file_atomic(path, "#line " + std::to_string(lines + 1) + "\n" + source.substr(prefix.size()));
    return " -include " + q(*header);
  };
  auto command = [&] {
    if (sources.size() == 1) {
      std::string include = source_file(tmp + "/kernels.cpp", sources[0]);
      return compiler + " " + flags + include + " -o " + q(tmp + "/kernels.so") + " " + q(tmp + "/kernels.cpp") +
             " > " + q(tmp + "/log") + " 2>&1";
    }
    // Each part compiles to an object in the background; the link waits for every one.
    std::string cmd, objects, waits;
    for (size_t i = 0; i < sources.size(); ++i) {
      std::string base = tmp + "/kernels" + std::to_string(i);
      std::string include = source_file(base + ".cpp", sources[i]);
      cmd += compiler + " " + flags + include + " -c -o " + q(base + ".o") + " " + q(base + ".cpp") + " > " +
             q(base + ".log") + " 2>&1 & p" + std::to_string(i) + "=$!; ";
      waits += "wait $p" + std::to_string(i) + " || ok=1; ";
      objects += " " + q(base + ".o");
    }
    return "ok=0; " + cmd + waits + "cat " + q(tmp) + "/kernels*.log > " + q(tmp + "/log") + "; [ $ok = 0 ] && " +
           compiler + " " + flags + " -o " + q(tmp + "/kernels.so") + objects + " >> " + q(tmp + "/log") + " 2>&1";
  };
  std::string cmd = command();
  TOROID_LOG("cache", "compiling " + key + ": " + cmd);
  int rc = run_compiler(cmd);
  if (rc != 0 && header) {
    // The precompiled header may have gone since it was found (evicted, or the cache cleared by
    // another process): compiled again whole, and the header looked up afresh next time.
    TOROID_LOG("cache", "compiling " + key + " with the precompiled header failed: again without it");
    forget_precompiled_header(*header);
    header.reset();
    rc = run_compiler(command());
  }
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
