// Helpers shared by the on-disk caches (compiled shared objects, cubins). An entry's checksum
// covers its key and its bytes, so a truncated or half-written entry, or one renamed to another
// key's name, is detected and treated as missing (logged, then rebuilt). Entries are published
// by one atomic rename, so a reader sees a whole entry or none, and a published entry never
// changes (a corrupt one is moved aside before its replacement is published).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace toroid::runtime::detail {

std::string hex64(uint64_t v);              // 16 lowercase hex digits
std::string unique_suffix();                // "<pid>-<random>", for temporary names
std::string keyed_checksum(std::string_view key, std::string_view bytes);

// A single-file entry: a header line naming the key and the checksum, then the bytes.
// read_entry_file gives the bytes when the file exists, is for `key`, and is intact.
std::optional<std::string> read_entry_file(const std::string& path, std::string_view key);
void write_entry_file(const std::string& path, std::string_view key, std::string_view bytes);

// A directory entry (a file that must keep its own name and form, such as a shared object for
// dlopen): `dir/<name>` beside `dir/sum`. entry_dir_intact reads both and checks the sum.
bool entry_dir_intact(const std::string& dir, const std::string& name, std::string_view key);
void write_entry_dir_sum(const std::string& dir, const std::string& name, std::string_view key);
// Renames the complete directory `tmp` to `entry`. When `entry` exists already (another
// process published it first, or it is corrupt or not a directory), an intact one is kept and
// anything else is moved aside and replaced. `tmp` is gone afterwards either way.
void publish_entry_dir(const std::string& tmp, const std::string& entry, const std::string& name, std::string_view key);

// Removes what killed compiles left in a cache directory: `tmp-<pid>-*` and `trash-<pid>-*`
// directories and `*.tmp.<pid>.*` files whose process is gone (and that are a minute old), or
// that are a day old whatever their pid says (another machine's, or a reused pid). Once per
// directory per process; returns how many it removed.
int sweep_stale(const std::string& dir);

}  // namespace toroid::runtime::detail
