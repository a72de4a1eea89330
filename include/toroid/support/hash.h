// Hashing helpers: combine for hash-consing tables, FNV-1a for content keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace toroid {

inline size_t hash_combine(size_t seed, size_t value) {
  // 64-bit variant of boost's mix; good enough for hash-consing tables.
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ULL);

}  // namespace toroid
