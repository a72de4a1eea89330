// The kernel cache's limit: least recently used entries go first, use refreshes an entry,
// usage and clearing count entries only, and a bad TOROID_CACHE_MAX_MB is an error. Its
// precompiled headers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "temp_dir.h"
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

// Sources that begin with CompileFlags::precompiled_prefix include it precompiled once the
// cache holds its header (built in the background from the second compile on); a header that
// went away after it was found (evicted, or the cache cleared by another process) costs a
// compile without it, never a failure.
class PrecompiledPrefix : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("toroid-pch-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { toroid_test::remove_dir_retrying(dir_); }
  // A module whose function returns `value`, compiled with the prefix.
  int64_t compile_and_call(int value) {
    CompileFlags flags;
    flags.flags = "-O1 -shared -fPIC";
    flags.precompiled_prefix = "#include <cstdint>\n#include <vector>\n";
    std::string source = flags.precompiled_prefix + "extern \"C\" int64_t value() { return std::vector<int64_t>(" +
                         std::to_string(value) + ", 1).size(); }\n";
    SharedObject so = compile_and_load(source, flags);
    return reinterpret_cast<int64_t (*)()>(find_symbol(so, "value"))();
  }
  bool has_header() const {
    for (const fs::directory_entry& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().rfind("pch-", 0) == 0) return true;
    return false;
  }
  fs::path dir_;
};

TEST_F(PrecompiledPrefix, BuiltInTheBackgroundAndSurvivesItsRemoval) {
  EXPECT_EQ(compile_and_call(1), 1);
  EXPECT_FALSE(has_header());  // a first compile into an empty cache starts nothing
  EXPECT_EQ(compile_and_call(2), 2);  // starts the header's build
  for (int i = 0; i < 600 && !has_header(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(has_header());
  EXPECT_EQ(compile_and_call(3), 3);  // with it
  EXPECT_EQ(cache_usage().headers, 1u);
  for (const fs::directory_entry& e : fs::directory_iterator(dir_))
    if (e.path().filename().string().rfind("pch-", 0) == 0) fs::remove_all(e.path());
  EXPECT_EQ(compile_and_call(4), 4);  // the header this process found is gone
  EXPECT_EQ(compile_and_call(5), 5);
}
