// The kernel cache's limit: least recently used entries go first, use refreshes an entry,
// usage and clearing count entries only, and a bad TOROID_CACHE_MAX_MB is an error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "toroid/runtime/so_cache.h"
#include "toroid/support/error.h"

namespace {

namespace fs = std::filesystem;
using namespace toroid::runtime;

class KernelCacheLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("toroid-cache-limit-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cuda");
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
    ::setenv("TOROID_CACHE_MAX_MB", "1", 1);
  }
  void TearDown() override {
    ::unsetenv("TOROID_CACHE_MAX_MB");
    fs::remove_all(dir_);
  }
  // An entry of `kib` KiB last used `age` seconds ago: a directory with a shared object, or a
  // cubin file (a name ending in .cubin, under cuda/).
  fs::path entry(const std::string& name, int kib, int age) {
    bool cubin = name.size() > 6 && name.substr(name.size() - 6) == ".cubin";
    fs::path p = cubin ? dir_ / "cuda" / name : dir_ / name;
    fs::path file = cubin ? p : p / "kernels.so";
    if (!cubin) fs::create_directories(p);
    std::ofstream(file) << std::string(static_cast<size_t>(kib) * 1024, 'x');
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(age));
    return p;
  }
  fs::path dir_;
};

TEST_F(KernelCacheLimit, EvictsTheLeastRecentlyUsedPastTheLimit) {
  fs::path a = entry("so-a", 600, 300), b = entry("so-b", 600, 200), c = entry("c.cubin", 600, 100);
  EXPECT_EQ(trim_cache(), 2);  // 1.8 MiB over a 1 MiB limit: down to 90% of it
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_TRUE(fs::exists(c));
}

TEST_F(KernelCacheLimit, AnEntryUsedNowIsKept) {
  fs::path a = entry("so-a", 600, 300), b = entry("so-b", 600, 200), c = entry("c.cubin", 600, 100);
  touch_cache_entry(a.string());
  EXPECT_EQ(trim_cache(), 2);
  EXPECT_TRUE(fs::exists(a));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_FALSE(fs::exists(c));
}

TEST_F(KernelCacheLimit, GrowthTrimsOnceItsEstimatePassesTheLimit) {
  fs::path a = entry("so-a", 300, 300), b = entry("so-b", 300, 200);
  EXPECT_EQ(trim_cache(), 0);  // a scan: 600 KiB, the estimate from now on
  fs::path c = entry("so-c", 600, 100);  // another process's entry: not in the estimate
  EXPECT_EQ(note_cache_growth(100 * 1024), 0);  // 700 KiB by the estimate: no scan, though 1.2 MiB are there
  EXPECT_TRUE(fs::exists(a));
  EXPECT_EQ(note_cache_growth(400 * 1024), 1);  // past the limit by the estimate: scanned, the oldest evicted
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::exists(b));
  EXPECT_TRUE(fs::exists(c));
}

TEST_F(KernelCacheLimit, UnderTheLimitNothingGoes) {
  entry("so-a", 300, 300);
  entry("b.cubin", 300, 100);
  EXPECT_EQ(trim_cache(), 0);
  EXPECT_EQ(cache_usage().entries(), 2u);
}

TEST_F(KernelCacheLimit, UsageAndClearCountEntriesOnly) {
  entry("so-a", 10, 30);
  entry("b.cubin", 20, 20);
  entry("failed-c.cpp", 1, 10);
  entry("pch-d", 4, 5);
  fs::create_directories(dir_ / "tmp-1-x");  // a compile in flight: not an entry
  CacheUsage u = cache_usage();
  EXPECT_EQ(u.shared_objects, 1u);
  EXPECT_EQ(u.cubins, 1u);
  EXPECT_EQ(u.failed, 1u);
  EXPECT_EQ(u.headers, 1u);
  EXPECT_EQ(u.bytes, 35u * 1024);
  EXPECT_EQ(u.limit, 1u << 20);
  EXPECT_EQ(clear_cache().entries(), 4u);
  EXPECT_EQ(cache_usage().entries(), 0u);
  EXPECT_TRUE(fs::exists(dir_ / "tmp-1-x"));
}

TEST_F(KernelCacheLimit, ALimitThatIsNoPositiveNumberIsAnError) {
  for (const char* bad : {"0", "12x", "-3", "lots"}) {
    ::setenv("TOROID_CACHE_MAX_MB", bad, 1);
    try {
      cache_limit_bytes();
      ADD_FAILURE() << "TOROID_CACHE_MAX_MB=" << bad << " was accepted";
    } catch (const toroid::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("TOROID_CACHE_MAX_MB"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("TOROID_CACHE_MAX_MB");
  EXPECT_EQ(cache_limit_bytes(), uint64_t{4096} << 20);
}

}  // namespace
