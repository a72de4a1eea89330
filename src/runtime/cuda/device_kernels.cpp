#include "toroid/runtime/cuda/device_kernels.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/runtime/cuda/nvrtc.h"
#include "toroid/support/error.h"

namespace toroid::runtime::cuda {

namespace {

// The count is a grid-stride sum; the coordinates come from one block that scans the elements
// 1024 at a time (warp scans, then a scan of the warp totals), carrying the running count.
constexpr const char* kSource = R"(
struct Dims { long long size[8]; int rank; };

__device__ __forceinline__ bool toroid_nz(const unsigned char* x, long long i, int esize, unsigned long long mask) {
  unsigned long long v;
  switch (esize) {
    case 1: v = x[i]; break;
    case 2: v = reinterpret_cast<const unsigned short*>(x)[i]; break;
    case 4: v = reinterpret_cast<const unsigned int*>(x)[i]; break;
    default: v = reinterpret_cast<const unsigned long long*>(x)[i]; break;
  }
  return (v & ~mask) != 0;
}

extern "C" __global__ void toroid_count_nonzero(const unsigned char* x, long long n, int esize,
                                                unsigned long long mask, unsigned long long* count) {
  unsigned long long c = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    c += toroid_nz(x, i, esize, mask);
  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

extern "C" __global__ void toroid_nonzero_coordinates(const unsigned char* x, long long n, int esize,
                                                      unsigned long long mask, Dims dims, long long count,
                                                      long long* out) {
  __shared__ long long warp_sums[32];
  __shared__ long long running;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (threadIdx.x == 0) running = 0;
  __syncthreads();
  for (long long base = 0; base < n; base += blockDim.x) {
    long long i = base + threadIdx.x;
    int flag = i < n ? toroid_nz(x, i, esize, mask) : 0;
    int v = flag;  // inclusive scan within the warp
    for (int o = 1; o < 32; o <<= 1) {
      int t = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += t;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
      long long w = lane < warps ? warp_sums[lane] : 0;
      for (int o = 1; o < 32; o <<= 1) {
        long long t = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += t;
      }
      warp_sums[lane] = w;
    }
    __syncthreads();
    if (flag) {
      long long at = running + (warp > 0 ? warp_sums[warp - 1] : 0) + v - 1;
      long long rest = i;
      for (int d = dims.rank - 1; d >= 0; --d) {
        out[d * count + at] = rest % dims.size[d];
        rest /= dims.size[d];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) running += warp_sums[warps - 1];
    __syncthreads();
  }
}
)";

struct Dims {
  long long size[kMaxNonzeroDims];
  int rank;
};

struct Kernels {
  std::unique_ptr<Module> module;
  Function count = nullptr, coordinates = nullptr;
};

const Kernels& kernels() {
  static Kernels k;
  static std::once_flag once;
  std::call_once(once, [] {
    NvrtcOptions o;
    o.arch = device().arch();
    Cubin c = compile_cubin({kSource, "toroid_device_kernels"}, o);
    k.module = std::make_unique<Module>(c.image, "toroid_device_kernels");
    k.count = k.module->function("toroid_count_nonzero");
    k.coordinates = k.module->function("toroid_nonzero_coordinates");
  });
  return k;
}

}  // namespace

std::string device_kernels_source() { return kSource; }

int64_t count_nonzero(const NonzeroInput& x, Stream s) {
  const Kernels& k = kernels();
  DeviceMemory counter = DeviceAllocator::global().allocate(sizeof(unsigned long long), s);
  memset_zero(counter->ptr, sizeof(unsigned long long), s);
  if (x.numel > 0) {
    const void* data = x.data;
    long long n = x.numel;
    int esize = x.esize;
    unsigned long long mask = x.sign_mask;
    void* count = counter->ptr;
    void* args[] = {&data, &n, &esize, &mask, &count};
    LaunchDims dims;
    dims.block_x = 256;
    dims.grid_x = static_cast<unsigned>(std::clamp<int64_t>((x.numel + 255) / 256, 1, int64_t(device().sm_count) * 4));
    launch(k.count, dims, args, s, "toroid_count_nonzero");
  }
  unsigned long long result = 0;
  copy_to_host(&result, counter->ptr, sizeof result, s);
  return static_cast<int64_t>(result);
}

void nonzero_coordinates(const NonzeroInput& x, int64_t count, int64_t* out, Stream s) {
  if (count == 0 || x.numel == 0) return;
  TOROID_CHECK(x.sizes.size() <= kMaxNonzeroDims, "nonzero on the device takes at most 8 dims");
  const Kernels& k = kernels();
  Dims d{};
  d.rank = static_cast<int>(x.sizes.size());
  for (size_t i = 0; i < x.sizes.size(); ++i) d.size[i] = x.sizes[i];
  const void* data = x.data;
  long long n = x.numel;
  int esize = x.esize;
  unsigned long long mask = x.sign_mask;
  long long c = count;
  void* o = out;
  void* args[] = {&data, &n, &esize, &mask, &d, &c, &o};
  LaunchDims dims;
  dims.block_x = 1024;
  launch(k.coordinates, dims, args, s, "toroid_nonzero_coordinates");
}

}  // namespace toroid::runtime::cuda
