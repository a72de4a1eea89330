// The kernel cache's size: what it holds, its limit, least-recently-used eviction and clearing.
// An entry's modification time is its last use (touch_cache_entry on every hit), so eviction
// needs no index file that concurrent processes would have to agree on.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include "toroid/runtime/so_cache.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::runtime {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kDefaultLimitMiB = 4096;

enum class Kind { SharedObject, Cubin, Header, Failed };

struct Entry {
  fs::path path;
  Kind kind;
  uint64_t bytes = 0;
  fs::file_time_type used;
};

uint64_t bytes_of(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  uint64_t n = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(p, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

// Entries only: the temporary and trash directories of compiles in flight are not the cache's.
std::vector<Entry> entries(const std::string& dir) {
  std::vector<Entry> out;
  std::error_code ec;
  auto add = [&](const fs::path& p, Kind kind) {
    std::error_code tec;
    Entry e{p, kind, bytes_of(p), fs::last_write_time(p, tec)};
    if (!tec) out.push_back(std::move(e));
  };
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("so-", 0) == 0) add(e.path(), Kind::SharedObject);
    else if (name.rfind("pch-", 0) == 0) add(e.path(), Kind::Header);
    else if (name.rfind("failed-", 0) == 0) add(e.path(), Kind::Failed);
  }
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(dir) / "cuda", ec))
    if (e.path().extension() == ".cubin") add(e.path(), Kind::Cubin);
  return out;
}

CacheUsage usage_of(const std::string& dir, const std::vector<Entry>& all) {
  CacheUsage u;
  u.dir = dir;
  u.limit = cache_limit_bytes();
  for (const Entry& e : all) {
    switch (e.kind) {
      case Kind::SharedObject: ++u.shared_objects; break;
      case Kind::Cubin: ++u.cubins; break;
      case Kind::Header: ++u.headers; break;
      case Kind::Failed: ++u.failed; break;
    }
    u.bytes += e.bytes;
  }
  return u;
}

}  // namespace

uint64_t cache_limit_bytes() {
  const char* v = std::getenv("TOROID_CACHE_MAX_MB");
  if (!v || !*v) return kDefaultLimitMiB << 20;
  std::string s = v;
  bool digits = s.size() <= 12 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  uint64_t mib = digits ? std::stoull(s) : 0;
  if (mib == 0) user_error("TOROID_CACHE_MAX_MB='" + s + "': the kernel cache's limit in MiB, a positive integer");
  return mib << 20;
}

void touch_cache_entry(const std::string& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now; an entry another process evicted is no error
}

CacheUsage cache_usage() {
  std::string dir = cache_dir();
  return usage_of(dir, entries(dir));
}

CacheUsage clear_cache() {
  std::string dir = cache_dir();
  std::vector<Entry> all = entries(dir);
  CacheUsage u = usage_of(dir, all);
  for (const Entry& e : all) {
    std::error_code ec;
    fs::remove_all(e.path, ec);
  }
  return u;
}

namespace {
std::mutex estimate_mu;
std::optional<uint64_t> estimate;  // the cache's bytes as this process last saw them, plus its additions

// trim_cache, leaving the bytes it left in `left`.
int trim(uint64_t& left) {
  uint64_t limit = cache_limit_bytes();
  std::string dir = cache_dir();
  std::vector<Entry> all = entries(dir);
  uint64_t total = 0;
  for (const Entry& e : all) total += e.bytes;
  left = total;
  if (total <= limit) return 0;
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  int removed = 0;
  for (const Entry& e : all) {
    if (total <= limit / 10 * 9) break;
    std::error_code ec;
    fs::remove_all(e.path, ec);
    if (ec) continue;
    total -= std::min(total, e.bytes);
    ++removed;
  }
  left = total;
  TOROID_LOG("cache", "evicted " + std::to_string(removed) + " least recently used entries from " + dir + " (limit " +
                          std::to_string(limit >> 20) + " MiB)");
  return removed;
}
}  // namespace

int trim_cache() {
  uint64_t left = 0;
  int removed = trim(left);
  std::lock_guard<std::mutex> lock(estimate_mu);
  estimate = left;
  return removed;
}

int note_cache_growth(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(estimate_mu);
    if (estimate && *estimate + bytes <= cache_limit_bytes()) {
      *estimate += bytes;
      return 0;
    }
  }
  return trim_cache();
}

}  // namespace toroid::runtime
