// Helpers shared by the on-disk caches (compiled shared objects, cubins): an entry is a file
// `path` with its checksum in `path.sum`, both written atomically; an entry whose checksum does
// not match is treated as missing (and logged), so it is rebuilt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace toroid::runtime::detail {

std::string hex64(uint64_t v);              // 16 lowercase hex digits
std::string checksum(std::string_view bytes);
std::string unique_suffix();                // "<pid>-<random>", for temporary names

// The entry's contents when it and its checksum exist and agree; nullopt otherwise.
std::optional<std::string> read_intact_entry(const std::string& path);
// Writes the entry's checksum file (the entry itself is written or renamed by the caller).
void write_entry_checksum(const std::string& path, std::string_view contents);

}  // namespace toroid::runtime::detail
