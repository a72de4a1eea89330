// Helpers shared by the C ABI tests: f32 tensor descriptors over the caller's memory and a
// private kernel cache per test suite.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "temp_dir.h"
#include "toroid/c_api.h"

namespace toroid_test {

// A contiguous f32 tensor over `data`.
inline toroid_tensor tensor(float* data, std::vector<int64_t> sizes) {
  toroid_tensor t{};
  t.data = data;
  t.dtype = TOROID_FLOAT32;
  t.ndim = static_cast<int32_t>(sizes.size());
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.sizes[d] = sizes[static_cast<size_t>(d)];
    t.strides[d] = stride;
    stride *= sizes[static_cast<size_t>(d)];
  }
  return t;
}

// $TOROID_CACHE_DIR set to a fresh directory for the suite's lifetime.
class PrivateKernelCache {
 public:
  explicit PrivateKernelCache(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
  }
  ~PrivateKernelCache() { remove_dir_retrying(dir_); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace toroid_test
