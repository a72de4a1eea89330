// A caching allocator for host tensor memory. The executor allocates every intermediate and
// output of a run from it; a storage that dies (freed by the program, or an output the caller
// dropped) hands its block back to a free list instead of to the system, so the next run reuses
// pages that are already mapped (no page faults, no kernel zeroing of fresh pages).
//
// Size classes: powers of two (at least 64 bytes) up to 64 KiB, multiples of 64 KiB above. A
// request gets a block of exactly its class, the most recently returned one first (warmest).
// Cached bytes are capped; returning a block beyond the cap frees the least recently returned
// blocks first. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "toroid/ops/host_tensor.h"

namespace toroid::runtime {

struct HostCacheStats {
  int64_t fresh_blocks = 0;   // blocks taken from the system (cache misses)
  int64_t reused_blocks = 0;  // blocks handed out again from a free list (cache hits)
  int64_t freed_blocks = 0;   // blocks given back to the system (trimmed, emptied or uncacheable)
  int64_t cached_blocks = 0;  // blocks in the free lists now
  int64_t cached_bytes = 0;   // their bytes (by size class)
  int64_t lent_bytes = 0;     // bytes (by size class) of blocks held by live storages
};

class HostAllocator {
 public:
  static constexpr size_t kGranule = size_t(64) << 10;  // above it, classes are multiples of it

  // At most `cap_bytes` in the free lists (0: nothing is cached).
  explicit HostAllocator(size_t cap_bytes);
  // Frees the cached blocks. Blocks still held by storages stay valid and are freed when those
  // storages die (the storages keep the allocator's state alive).
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // The process-wide allocator the executor uses; its cap is $TOROID_HOST_CACHE_MB megabytes
  // (default 1024). Destroyed at exit, which frees what it caches.
  static HostAllocator& global();

  // An uninitialized, 64-byte aligned storage of `nbytes` bytes (its nbytes() is `nbytes`; the
  // block behind it is its size class). UserError when the system is out of memory.
  std::shared_ptr<ops::HostStorage> allocate(size_t nbytes);

  // Gives every cached block back to the system.
  void empty_cache();
  // Changes the cap, trimming the free lists to it.
  void set_cap(size_t cap_bytes);
  size_t cap() const;
  HostCacheStats stats() const;

  // The block size a request of `nbytes` gets.
  static size_t class_size(size_t nbytes);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace toroid::runtime
