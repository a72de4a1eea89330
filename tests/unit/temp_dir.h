// Removing a test's temporary directory while a detached precompile of the kernels' headers
// (runtime/so_cache.cpp) may still be adding and removing its lock and temporary directories
// there: removal never throws, and tries again for up to a second.
#pragma once

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

namespace toroid_test {

inline void remove_dir_retrying(const std::filesystem::path& dir) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!ec && !std::filesystem::exists(dir, ec)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace toroid_test
