// Driver calls for the device allocator, not part of the public runtime interface. Like
// driver.h, it exposes no CUDA types (CUdeviceptr and CUevent as void*).
#pragma once

#include <cstddef>

#include "toroid/runtime/cuda/driver.h"

namespace toroid::runtime::cuda::detail {

// The stream a call runs on: `s`, or default_stream() for nullptr.
Stream resolve(Stream s);

// cuMemAlloc; nullptr when the device is out of memory (the allocator then empties its cache
// and retries), UserError on any other failure.
void* try_alloc(size_t nbytes);
// cuMemFree, ignoring errors: called from deleters, which cannot throw.
void free_quietly(void* p) noexcept;

// Waits for all work of the context (cuCtxSynchronize).
void synchronize_device();

// Events that order work between streams (created without timing, which makes them cheaper).
void* create_event();
void record_event(void* event, Stream s);
bool event_done(void* event);  // cuEventQuery: complete or not yet; UserError on failure
void destroy_event_quietly(void* event) noexcept;

}  // namespace toroid::runtime::cuda::detail
