// A caching allocator for device memory, in the manner of PyTorch's CUDA caching allocator.
// Freed blocks go to free lists (per size class) instead of back to the driver, and are reused
// by later requests. A block freed on one stream is reused at once on the same stream (stream
// order makes it safe); a request from another stream takes it only after an event recorded at
// the free has completed. (Events are recorded only once a second stream has asked for memory;
// a block returned before then stays with its stream.)
//
// Size classes: multiples of 512 bytes up to 1 MiB, multiples of 2 MiB above (large blocks are
// not split). Cached bytes are capped by $TOROID_CUDA_CACHE_MB (default: no cap); when the driver
// is out of memory, the cache is emptied and the allocation retried once. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "toroid/runtime/cuda/driver.h"

namespace toroid::runtime::cuda {

struct DeviceCacheStats {
  int64_t fresh_blocks = 0;    // from cuMemAlloc
  int64_t reused_blocks = 0;   // from a free list
  int64_t cached_blocks = 0;   // in the free lists now
  int64_t cached_bytes = 0;
  int64_t lent_bytes = 0;      // held by callers
  int64_t peak_lent_bytes = 0;
};

// A block of device memory that returns to its allocator when the last reference dies.
struct DeviceBlock {
  void* ptr = nullptr;
  size_t nbytes = 0;  // as requested
};
using DeviceMemory = std::shared_ptr<DeviceBlock>;

class DeviceAllocator {
 public:
  // The process-wide allocator (device 0).
  static DeviceAllocator& global();

  // At least 256-byte aligned, uninitialized. UserError when the device is out of memory even
  // after emptying the cache: "out of device memory allocating N bytes (M bytes cached, K lent)".
  DeviceMemory allocate(size_t nbytes, Stream s = nullptr);
  void empty_cache();
  DeviceCacheStats stats() const;
  // Restarts peak_lent_bytes from the bytes lent now.
  void reset_peak();
  static size_t class_size(size_t nbytes);

  ~DeviceAllocator();

 private:
  DeviceAllocator();
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace toroid::runtime::cuda
