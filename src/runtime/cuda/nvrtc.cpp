#include "toroid/runtime/cuda/nvrtc.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "../cache_entry.h"
#include "toolkit_library.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"
#include "toroid/support/hash.h"
#include "toroid/support/log.h"

namespace toroid::runtime::cuda {

namespace fs = std::filesystem;

namespace {

struct Nvrtc {
  std::string why;  // empty when loaded
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  std::string version_string;  // "13.0"
  std::string include_dir;     // the toolkit's headers; empty when none was found
};

bool has_fp16_headers(const std::string& dir) {
  std::error_code ec;
  return fs::exists(dir + "/cuda_fp16.h", ec) && fs::exists(dir + "/cuda_bf16.h", ec);
}

// NVRTC 13.0 has no built-in cuda_fp16.h / cuda_bf16.h ("could not open source file
// cuda_bf16.h (no directories in search list)"): they come from the toolkit's include
// directory. Preferred is the one beside the loaded libnvrtc (lib64/../include), so the headers
// match the compiler, then $CUDA_HOME/include, then /usr/local/cuda/include.
std::string find_include_dir(void* any_symbol) {
  std::vector<std::string> dirs;
  Dl_info info{};
  if (::dladdr(any_symbol, &info) && info.dli_fname) {
    std::error_code ec;
    fs::path lib = fs::canonical(info.dli_fname, ec);
    if (!ec) dirs.push_back((lib.parent_path().parent_path() / "include").string());
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/include");
  dirs.push_back("/usr/local/cuda/include");
  for (const std::string& d : dirs)
    if (has_fp16_headers(d)) return d;
  return {};
}

const Nvrtc& nvrtc() {
  static std::once_flag once;
  static Nvrtc n;
  std::call_once(once, [] {
    void* lib = toolkit::open_library("libnvrtc", "13", &n.why);
    if (!lib) return;
    std::string missing;
    toolkit::bind_symbol(lib, "nvrtcVersion", n.version, &missing);
    toolkit::bind_symbol(lib, "nvrtcCreateProgram", n.create, &missing);
    toolkit::bind_symbol(lib, "nvrtcCompileProgram", n.compile, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetProgramLogSize", n.log_size, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetProgramLog", n.log, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetCUBINSize", n.cubin_size, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetCUBIN", n.cubin, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetPTXSize", n.ptx_size, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetPTX", n.ptx, &missing);
    toolkit::bind_symbol(lib, "nvrtcDestroyProgram", n.destroy, &missing);
    toolkit::bind_symbol(lib, "nvrtcGetErrorString", n.error_string, &missing);
    if (!missing.empty()) {
      n.why = "libnvrtc lacks " + missing;
      return;
    }
    int major = 0, minor = 0;
    if (n.version(&major, &minor) != NVRTC_SUCCESS) {
      n.why = "nvrtcVersion failed";
      return;
    }
    n.version_string = std::to_string(major) + "." + std::to_string(minor);
    n.include_dir = find_include_dir(reinterpret_cast<void*>(n.version));
  });
  return n;
}

const Nvrtc& loaded_nvrtc() {
  const Nvrtc& n = nvrtc();
  if (!n.why.empty()) user_error("NVRTC is unavailable: " + n.why);
  return n;
}

void check(const Nvrtc& api, nvrtcResult r, const char* call, const std::string& name) {
  if (r != NVRTC_SUCCESS) user_error(std::string(call) + "(" + name + "): " + api.error_string(r));
}

// Keeps file names tame whatever the request's name is.
std::string file_safe(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return out;
}

class Program {
 public:
  Program(const Nvrtc& api, const CubinRequest& r) : api_(api) {
    check(api, api.create(&prog_, r.source.c_str(), (file_safe(r.name) + ".cu").c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram", r.name);
  }
  ~Program() { api_.destroy(&prog_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return prog_; }

 private:
  const Nvrtc& api_;
  nvrtcProgram prog_ = nullptr;
};

// The compile log of `prog` ("" when NVRTC has none).
std::string program_log(const Nvrtc& api, nvrtcProgram prog) {
  size_t n = 0;
  std::string log;
  if (api.log_size(prog, &n) == NVRTC_SUCCESS && n > 1) {
    log.resize(n);
    if (api.log(prog, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && log.back() == '\0') log.pop_back();
  }
  return log;
}

std::string compile_one(const Nvrtc& api, const CubinRequest& r, const std::vector<std::string>& options,
                        const std::string& dir, const std::string& key) {
  auto start = std::chrono::steady_clock::now();
  Program prog(api, r);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  nvrtcResult result = api.compile(prog.get(), static_cast<int>(argv.size()), argv.data());
  if (result != NVRTC_SUCCESS) {
    std::string log = program_log(api, prog.get());
    std::string kept = dir + "/failed-" + file_safe(r.name) + "-" + key + ".cu";
    write_file_atomic(kept, r.source);
    TOROID_INTERNAL_ERROR("NVRTC failed on generated kernel " + r.name + " (" + api.error_string(result) +
                          "; source kept at " + kept + "):\n" + log.substr(0, 4000));
  }
  size_t n = 0;
  check(api, api.cubin_size(prog.get(), &n), "nvrtcGetCUBINSize", r.name);
  std::string image(n, '\0');
  check(api, api.cubin(prog.get(), image.data()), "nvrtcGetCUBIN", r.name);
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  TOROID_LOG("cuda", "nvrtc compiled " + r.name + " in " + std::to_string(static_cast<int64_t>(ms)) + " ms (" +
                         std::to_string(image.size()) + " bytes of cubin)");
  return image;
}

}  // namespace

bool nvrtc_available(std::string* why) {
  try {
    const Nvrtc& n = nvrtc();
    if (why) *why = n.why;
    return n.why.empty();
  } catch (const std::exception& e) {  // call_once's own failure (std::system_error)
    if (why) *why = e.what();
    return false;
  }
}

std::string nvrtc_version() { return loaded_nvrtc().version_string; }

std::string prebuilt_key(const std::string& source, int arch) {
  return "sm_" + std::to_string(arch) + "-" + runtime::content_key(source);
}

std::vector<Cubin> compile_cubins(const std::vector<CubinRequest>& requests, const NvrtcOptions& options) {
  std::vector<Cubin> out(requests.size());
  if (requests.empty()) return out;
  if (options.prebuilt) {
    for (size_t i = 0; i < requests.size(); ++i) {
      auto it = options.prebuilt->find(prebuilt_key(requests[i].source, options.arch));
      if (it == options.prebuilt->end())
        user_error("the package has no sm_" + std::to_string(options.arch) + " cubin for " + requests[i].name +
                   " (packaged for other sizes or another architecture?)");
      out[i] = Cubin{it->second, true};
    }
    return out;
  }
  const Nvrtc& api = loaded_nvrtc();
  std::vector<std::string> argv = {"-std=c++17", "--gpu-architecture=sm_" + std::to_string(options.arch),
                                   "-default-device"};
  if (!api.include_dir.empty()) argv.push_back("-I" + api.include_dir);
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  // The key names the NVRTC version and the options (the architecture among them), but not
  // where the toolkit's headers were found: a process whose libnvrtc came from another install of
  // the same version (PyTorch's wheel, say) shares the cache. The headers ship with that version.
  std::string identity = "nvrtc " + api.version_string;
  for (const std::string& o : argv) identity += "\n" + (o.rfind("-I", 0) == 0 ? std::string("-I<toolkit>") : o);
  uint64_t seed = fnv1a64(identity);

  std::string dir = cache_dir() + "/cuda";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) user_error("cannot create the cubin cache directory " + dir + ": " + ec.message());

  std::vector<std::string> keys(requests.size());
  std::vector<size_t> misses;
  // Requests with the same source (kernels alike, by their symbols) are compiled once: each
  // later one copies the first's image.
  std::unordered_map<std::string, size_t> first_with_key;
  std::vector<std::pair<size_t, size_t>> copies;  // (request, the earlier one with its source)
  for (size_t i = 0; i < requests.size(); ++i) {
    keys[i] = runtime::detail::hex64(fnv1a64(requests[i].source, seed));
    auto [it, fresh] = first_with_key.emplace(keys[i], i);
    if (!fresh) {
      copies.emplace_back(i, it->second);
      continue;
    }
    if (options.use_cache) {
      if (auto image = runtime::detail::read_entry_file(dir + "/" + keys[i] + ".cubin", keys[i])) {
        runtime::touch_cache_entry(dir + "/" + keys[i] + ".cubin");
        out[i] = Cubin{std::move(*image), true};
        continue;
      }
    }
    misses.push_back(i);
  }

  if (!misses.empty() && options.use_cache) runtime::detail::sweep_stale(dir);
  // Workers take misses in turn; the first exception stops the others from starting more and is
  // rethrown here.
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    while (!failed) {
      size_t j = next++;
      if (j >= misses.size()) return;
      size_t i = misses[j];
      try {
        out[i].image = compile_one(api, requests[i], argv, dir, keys[i]);
        if (options.use_cache) {
          runtime::detail::write_entry_file(dir + "/" + keys[i] + ".cubin", keys[i], out[i].image);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  size_t threads = std::min<size_t>(misses.size(), std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }
  if (first_error) std::rethrow_exception(first_error);
  for (auto [i, earlier] : copies) out[i] = out[earlier];
  if (!misses.empty() && options.use_cache) {
    uint64_t added = 0;
    for (size_t i : misses) added += out[i].image.size();
    runtime::note_cache_growth(added);
  }
  return out;
}

std::string compile_user_ptx(const std::string& source, const std::string& name, int arch) {
  const Nvrtc& api = loaded_nvrtc();
  Program prog(api, CubinRequest{source, name});
  std::vector<std::string> argv = {"-std=c++17", "--gpu-architecture=compute_" + std::to_string(arch)};
  if (!api.include_dir.empty()) argv.push_back("-I" + api.include_dir);
  std::vector<const char*> args;
  for (const std::string& o : argv) args.push_back(o.c_str());
  nvrtcResult result = api.compile(prog.get(), static_cast<int>(args.size()), args.data());
  if (result != NVRTC_SUCCESS) {
    std::string log = program_log(api, prog.get());
    user_error("NVRTC cannot compile " + name + " (" + api.error_string(result) + "):\n" + log.substr(0, 4000));
  }
  size_t n = 0;
  check(api, api.ptx_size(prog.get(), &n), "nvrtcGetPTXSize", name);
  std::string ptx(n, '\0');
  check(api, api.ptx(prog.get(), ptx.data()), "nvrtcGetPTX", name);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

Cubin compile_cubin(const CubinRequest& request, const NvrtcOptions& options) {
  return std::move(compile_cubins({request}, options)[0]);
}

}  // namespace toroid::runtime::cuda
