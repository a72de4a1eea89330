// The host cost of a kernel launch with nothing of toroid's around it: the floor under issue 17's
// "µs per kernel" without CUDA graphs. Launches an empty kernel N times through the driver API
// (cuLaunchKernel, as toroid's executor does) and through the runtime API, on a non-default
// stream, and prints the mean host µs per launch of each (the queue drained outside the timing).
//   nvcc -O2 -o /tmp/launch_floor tools/gpu/launch_floor.cu -lcuda && /tmp/launch_floor [N]
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel(float* p, int n) {
  if (p && threadIdx.x < static_cast<unsigned>(n)) p[threadIdx.x] += 0.0f;
}

static double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define CHECK(x)                                                           \
  do {                                                                     \
    auto err_ = (x);                                                       \
    if (err_ != 0) {                                                       \
      std::fprintf(stderr, "%s failed: %d\n", #x, static_cast<int>(err_)); \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* p = nullptr;
  int count = 0;
  CHECK(cudaMalloc(&p, 1024));
  CUfunction fn;
  CHECK(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(empty_kernel)));
  void* params[] = {&p, &count};
  for (int i = 0; i < 1000; ++i) CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
  CHECK(cudaStreamSynchronize(stream));
  // Batches of 1000 launches: the queue (1024 entries or so) never fills, so the host is timed.
  double driver = 0, runtime = 0;
  for (int done = 0; done < n; done += 1000) {
    double t0 = seconds();
    for (int i = 0; i < 1000; ++i) CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
    driver += seconds() - t0;
    CHECK(cudaStreamSynchronize(stream));
    t0 = seconds();
    for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, stream>>>(p, count);
    runtime += seconds() - t0;
    CHECK(cudaStreamSynchronize(stream));
  }
  const int launches = (n + 999) / 1000 * 1000;
  std::printf("cuLaunchKernel: %.2f us per launch; <<<>>>: %.2f us per launch (%d launches each)\n",
              driver / launches * 1e6, runtime / launches * 1e6, launches);
  return 0;
}
