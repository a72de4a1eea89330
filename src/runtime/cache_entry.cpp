#include "cache_entry.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>

#include "toroid/support/error.h"
#include "toroid/support/file.h"
#include "toroid/support/hash.h"
#include "toroid/support/log.h"

namespace toroid::runtime::detail {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kMagic = "toroid-cache-entry ";

std::optional<std::string> read_if_exists(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  try {
    return read_file(path);
  } catch (const UserError&) {
    return std::nullopt;
  }
}
}  // namespace

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string unique_suffix() {
  static std::mutex m;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(m);
  return std::to_string(::getpid()) + "-" + hex64(rng());
}

std::string keyed_checksum(std::string_view key, std::string_view bytes) {
  return hex64(fnv1a64(bytes, fnv1a64(std::string(key) + "\n")));
}

std::optional<std::string> read_entry_file(const std::string& path, std::string_view key) {
  std::optional<std::string> text = read_if_exists(path);
  if (!text) return std::nullopt;
  // "toroid-cache-entry <key> <checksum>\n<bytes>"
  size_t eol = text->find('\n');
  std::string want = std::string(kMagic) + std::string(key) + " ";
  if (eol == std::string::npos || text->compare(0, want.size(), want) != 0 || eol != want.size() + 16) {
    TOROID_LOG("cache", "entry " + path + " is not an entry for key " + std::string(key) + ": rebuilding");
    return std::nullopt;
  }
  std::string_view bytes = std::string_view(*text).substr(eol + 1);
  if (text->substr(want.size(), 16) != keyed_checksum(key, bytes)) {
    TOROID_LOG("cache", "corrupt entry " + path + " (checksum mismatch): rebuilding");
    return std::nullopt;
  }
  return std::string(bytes);
}

void write_entry_file(const std::string& path, std::string_view key, std::string_view bytes) {
  std::string text = std::string(kMagic) + std::string(key) + " " + keyed_checksum(key, bytes) + "\n";
  text.append(bytes);
  write_file_atomic(path, text);
}

bool entry_dir_intact(const std::string& dir, const std::string& name, std::string_view key) {
  std::optional<std::string> sum = read_if_exists(dir + "/sum");
  std::optional<std::string> bytes = sum ? read_if_exists(dir + "/" + name) : std::nullopt;
  if (!bytes) return false;
  if (*sum != keyed_checksum(key, *bytes)) {
    TOROID_LOG("cache", "corrupt entry " + dir + " (checksum mismatch, or another key's entry): rebuilding");
    return false;
  }
  return true;
}

void write_entry_dir_sum(const std::string& dir, const std::string& name, std::string_view key) {
  write_file_atomic(dir + "/sum", keyed_checksum(key, read_file(dir + "/" + name)));
}

void publish_entry_dir(const std::string& tmp, const std::string& entry, const std::string& name, std::string_view key) {
  std::error_code ec;
  fs::rename(tmp, entry, ec);  // fails when `entry` exists: a directory is never replaced
  for (int attempt = 0; ec && attempt < 2; ++attempt) {
    if (entry_dir_intact(entry, name, key)) break;  // another process published it first
    // Corrupt, another key's, or not a directory: move it aside (one rename, so a reader sees
    // it or nothing) and publish ours in its place.
    std::string trash = fs::path(entry).parent_path().string() + "/trash-" + unique_suffix();
    std::error_code moved;
    fs::rename(entry, trash, moved);
    fs::remove_all(trash, moved);
    fs::rename(tmp, entry, ec);
  }
  fs::remove_all(tmp, ec);
}

namespace {

// The pid a temporary name carries ("tmp-123-ab..", "trash-123-..", "x.tmp.123.4"), or -1.
long owner_pid(const std::string& name) {
  size_t at = name.rfind(".tmp.");
  if (name.rfind("tmp-", 0) == 0) at = 4;
  else if (name.rfind("trash-", 0) == 0) at = 6;
  else if (at != std::string::npos) at += 5;
  else return -1;
  size_t end = at;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  if (end == at || end - at > 9) return -1;
  return std::stol(name.substr(at, end - at));
}

bool process_alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

}  // namespace

int sweep_stale(const std::string& dir) {
  static std::mutex m;
  static std::set<std::string> swept;
  {
    std::lock_guard<std::mutex> lock(m);
    if (!swept.insert(dir).second) return 0;
  }
  int removed = 0;
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    long pid = owner_pid(name);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    std::error_code tec;
    auto age = now - fs::last_write_time(e.path(), tec);
    if (tec) continue;
    bool orphan = !process_alive(pid) && age > std::chrono::minutes(1);
    if (!orphan && age < std::chrono::hours(24)) continue;
    std::error_code rec;
    fs::remove_all(e.path(), rec);
    if (!rec) ++removed;
  }
  if (removed) TOROID_LOG("cache", "removed " + std::to_string(removed) + " leftovers of killed compiles in " + dir);
  return removed;
}

}  // namespace toroid::runtime::detail

