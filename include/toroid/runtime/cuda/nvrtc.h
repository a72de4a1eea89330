// NVRTC, loaded at run time (libnvrtc.so.13 or libnvrtc.so, from the loader path, $CUDA_HOME/lib64
// or /usr/local/cuda/lib64), compiles generated CUDA C++ to a cubin for one exact architecture.
// It needs no GPU, so CI checks generated code on machines without one.
//
// Cubins are cached on disk in runtime::cache_dir()/cuda: keyed by the source's hash, the NVRTC
// version, the architecture and the options; written through a temporary file and renamed, with
// a checksum, so a killed or concurrent compile never leaves a corrupt entry that is used (a
// corrupt entry is detected and rebuilt).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace toroid::runtime::cuda {

bool nvrtc_available(std::string* why = nullptr);  // never throws
std::string nvrtc_version();                      // "13.0"; UserError when unavailable

struct CubinRequest {
  std::string source;  // a complete translation unit
  std::string name;    // for messages and the kept failed source ("kernel3")
};

struct Cubin {
  std::string image;  // the cubin's bytes
  bool cache_hit = false;
};

struct NvrtcOptions {
  int arch = 90;  // compiles for sm_<arch> (a real architecture: a cubin, no PTX JIT)
  // Extra options after the defaults (-std=c++17, --gpu-architecture=sm_<arch>, -default-device,
  // and the include path of the toolkit's headers when NVRTC needs it).
  std::vector<std::string> options;
  bool use_cache = true;
  // Cubins compiled ahead of time (an AOT package's), by prebuilt_key: when set, every request
  // must be among them and NVRTC is never loaded (a missing one is a UserError).
  std::shared_ptr<const std::unordered_map<std::string, std::string>> prebuilt;
};

// The key of a translation unit's cubin for sm_<arch> among NvrtcOptions::prebuilt.
std::string prebuilt_key(const std::string& source, int arch);

// Compiles each request (in parallel on up to hardware_concurrency threads when there are
// several). A compile error is an InternalError (generated code is toroid's responsibility)
// carrying NVRTC's log and the path where the failing source was kept.
std::vector<Cubin> compile_cubins(const std::vector<CubinRequest>& requests, const NvrtcOptions& options = {});
Cubin compile_cubin(const CubinRequest& request, const NvrtcOptions& options = {});

// A user's CUDA C++ translation unit as PTX for compute_<arch> (for analysing which parameters
// its kernels write). A compile error is a UserError carrying NVRTC's log; nothing is cached.
std::string compile_user_ptx(const std::string& source, const std::string& name, int arch = 90);

}  // namespace toroid::runtime::cuda
