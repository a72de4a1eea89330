// Hand-written device kernels for the library calls no generated kernel can do: nonzero, whose
// result size only the data knows. Compiled with NVRTC (through the cubin cache) on first use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "toroid/runtime/cuda/driver.h"

namespace toroid::runtime::cuda {

// A contiguous tensor's elements as nonzero tests them: `esize` bytes each; a float's
// `sign_mask` bits do not make it nonzero (-0.0 is zero; NaN is not).
struct NonzeroInput {
  const void* data = nullptr;
  int64_t numel = 0;
  int esize = 4;
  uint64_t sign_mask = 0;
  std::vector<int64_t> sizes;  // at most kMaxNonzeroDims
};
constexpr size_t kMaxNonzeroDims = 8;

// The kernels' CUDA source (NVRTC compiles it once per process).
std::string device_kernels_source();

// How many elements are nonzero: one kernel, then a wait for the stream (the one sync).
int64_t count_nonzero(const NonzeroInput& x, Stream s);
// The coordinates of the nonzero elements in order, element (i, d) at out[d * count + i] (the
// [count, rank] result with strides [1, count], as PyTorch lays it out).
void nonzero_coordinates(const NonzeroInput& x, int64_t count, int64_t* out, Stream s);

}  // namespace toroid::runtime::cuda
