// Hand-written variants of the short-row kernels the GPU micro suite's opt-in rows run (ViT's
// softmax over rows of 197 f32, BERT's layer norm over 768 bf16), timed beside a copy of the same
// bytes: which change to toroid's row code generation would pay, measured before writing it.
//   nvcc -O3 -arch=sm_90 -o /tmp/short_rows tools/gpu/short_rows.cu && /tmp/short_rows [REPS]
// Prints the median µs of REPS runs (default 50) and the % of the same-bytes copy's rate.
// Built with -DGENERATED_SOFTMAX_197=\"F.cu\", -DGENERATED_LAYER_NORM_768=\"F.cu\" or
// -DGENERATED_LAYER_NORM_4096=\"F.cu\" (the micro suite's layer_norm: 16384 rows of 4096 bf16; toroidc's
// --emit=cuda of that workload; tools/gpu/short_rows.sh), it also times toroid's own kernel0 on
// the same buffers, launched as toroid's executor launches it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#if defined(GENERATED_SOFTMAX_197)
#include GENERATED_SOFTMAX_197
#elif defined(GENERATED_LAYER_NORM_768)
#include GENERATED_LAYER_NORM_768
#elif defined(GENERATED_LAYER_NORM_4096)
#include GENERATED_LAYER_NORM_4096
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t err_ = (x);                                                         \
    if (err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(err_));        \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v, int lanes = 32) {
  for (int o = lanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float div_full(float a, float b) {
  float r;
  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

enum Div { kExact, kFull, kReciprocal };

// Softmax over rows of C f32: R rows per warp, their loads all issued before any arithmetic
// (R = 1 is toroid's current shape: a warp a row, 8 slots of 32 lanes).
template <int C, int R, Div D, bool Stats = false>
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, float* __restrict__ stats) {
  constexpr int S = (C + 31) / 32;
  const int lane = threadIdx.x & 31;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int first = warp * R;
  float v[R][S];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int k = 0; k < S; ++k) {
      const int c = k * 32 + lane;
      v[r][k] = (first + r < rows && c < C) ? __ldg(x + int64_t(first + r) * C + c) : -INFINITY;
    }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (first + r >= rows) break;
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < S; ++k) m = fmaxf(m, v[r][k]);
    m = warp_max(m);
    float s = 0;
#pragma unroll
    for (int k = 0; k < S; ++k)
      if (k * 32 + lane < C) s += __expf(v[r][k] - m);
    s = warp_sum(s);
    if (Stats && lane == 0) stats[first + r] = m, stats[rows + first + r] = s;
    const float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < S; ++k) {
      const int c = k * 32 + lane;
      if (c >= C) continue;
      const float e = __expf(v[r][k] - m);
      y[int64_t(first + r) * C + c] = D == kExact ? e / s : D == kFull ? div_full(e, s) : e * inv;
    }
  }
}

// Layer norm over rows of C bf16 (C a multiple of 8 * L), L lanes a row, groups of 8 in uint4s.
template <int C, int L>
__global__ void layer_norm_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ y, int rows) {
  constexpr int G = C / 8 / L;
  const int lane = threadIdx.x % L;
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / L;
  if (row >= rows) return;  // whole segments leave together
  uint4 v[G];
  const uint4* xr = reinterpret_cast<const uint4*>(x + int64_t(row) * C);
#pragma unroll
  for (int k = 0; k < G; ++k) v[k] = __ldg(xr + k * L + lane);
  float s = 0, ss = 0;
#pragma unroll
  for (int k = 0; k < G; ++k) {
    const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&v[k]);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float f = __bfloat162float(e[j]);
      s += f;
      ss += f * f;
    }
  }
  s = warp_sum(s, L);
  ss = warp_sum(ss, L);
  const float mean = s / C, rstd = rsqrtf(fmaxf(ss / C - mean * mean, 0.f) + 1e-5f);
  uint4* yr = reinterpret_cast<uint4*>(y + int64_t(row) * C);
#pragma unroll
  for (int k = 0; k < G; ++k) {
    const uint4 wv = __ldg(reinterpret_cast<const uint4*>(w) + k * L + lane);
    const uint4 bv = __ldg(reinterpret_cast<const uint4*>(b) + k * L + lane);
    const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&v[k]);
    const __nv_bfloat16* we = reinterpret_cast<const __nv_bfloat16*>(&wv);
    const __nv_bfloat16* be = reinterpret_cast<const __nv_bfloat16*>(&bv);
    uint4 out;
    __nv_bfloat16* o = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      o[j] = __float2bfloat16((__bfloat162float(e[j]) - mean) * rstd * __bfloat162float(we[j]) + __bfloat162float(be[j]));
    yr[k * L + lane] = out;
  }
}

__global__ void copy4(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __ldg(x + i);
}

// A layer norm's buffers: ROWS x C bf16 input and output, a weight of 1.5 and a bias of 0.
struct LayerNormBuffers {
  __nv_bfloat16 *x = nullptr, *y = nullptr, *w = nullptr, *b = nullptr;
  size_t bytes;  // of x (and of y)
  LayerNormBuffers(int rows, int cols) : bytes(size_t(rows) * cols * 2) {
    CHECK(cudaMalloc(&x, bytes));
    CHECK(cudaMalloc(&y, bytes));
    CHECK(cudaMalloc(&w, cols * 2));
    CHECK(cudaMalloc(&b, cols * 2));
    CHECK(cudaMemset(x, 0x3f, bytes));
    CHECK(cudaMemset(w, 0x3f, cols * 2));
    CHECK(cudaMemset(b, 0, cols * 2));
  }
  ~LayerNormBuffers() {
    for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(w), static_cast<void*>(b)})
      CHECK(cudaFree(p));
  }
};

static double median_us(const std::function<void()>& run, int reps) {
  for (int i = 0; i < 3; ++i) run();
  std::vector<cudaEvent_t> ev(reps + 1);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  CHECK(cudaEventRecord(ev[0]));
  for (int i = 0; i < reps; ++i) {
    run();
    CHECK(cudaEventRecord(ev[i + 1]));
  }
  CHECK(cudaEventSynchronize(ev[reps]));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) CHECK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
  for (auto& e : ev) CHECK(cudaEventDestroy(e));
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return 1e3 * ms[reps / 2];
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  auto copy_us = [&](const void* src, void* dst, size_t bytes) {  // half the bytes read, half written
    const int64_t n = bytes / 2 / 16;
    return median_us([&] { copy4<<<sms * 8, 256>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n); }, reps);
  };
  auto report = [&](const char* name, double us, double copy) {
    std::printf("| %s | %.1f | %.0f%% |\n", name, us, 100 * copy / us);
  };
  std::printf("| variant | us | %% of same-bytes copy |\n|---|---|---|\n");
  {  // ViT's attention softmax: 64 x 12 heads x 197 rows of 197
    constexpr int C = 197;
    const int rows = 64 * 12 * 197;
    const size_t bytes = size_t(rows) * C * 4;
    float *x, *y;
    CHECK(cudaMalloc(&x, bytes));
    CHECK(cudaMalloc(&y, bytes));
    std::vector<float> h(size_t(rows) * C);
    for (size_t i = 0; i < h.size(); ++i) h[i] = std::sin(0.37 * i) * 4;
    CHECK(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));
    float* stats;  // the row max and sum, where a variant stores them (toroid's kernel does today)
    CHECK(cudaMalloc(&stats, size_t(rows) * 8));
    const double copy = copy_us(x, y, 2 * bytes);
    report("copy of softmax_197's bytes", copy, copy);
    auto run = [&](const char* name, auto kernel, int rows_per_warp, int threads) {
      const int warps = (rows + rows_per_warp - 1) / rows_per_warp;
      const int blocks = (warps * 32 + threads - 1) / threads;
      report(name, median_us([&] { kernel<<<blocks, threads>>>(x, y, rows, stats); }, reps), copy);
      CHECK(cudaGetLastError());
    };
#ifdef GENERATED_SOFTMAX_197
    // kernel0(x, y, rows): 32 threads a row, 8 rows a block
    report("softmax_197 toroid's kernel0", median_us([&] { kernel0_i32<<<(rows + 7) / 8, dim3(32, 8)>>>(x, y, rows); }, reps),
           copy);
    CHECK(cudaGetLastError());
#endif
    run("softmax_197 R=1 exact div, 256 threads (toroid's shape)", softmax_rows<C, 1, kExact>, 1, 256);
    run("softmax_197 R=1 exact div, row max and sum stored (toroid's kernel)", softmax_rows<C, 1, kExact, true>, 1, 256);
    run("softmax_197 R=1 div.full", softmax_rows<C, 1, kFull>, 1, 256);
    run("softmax_197 R=1 reciprocal", softmax_rows<C, 1, kReciprocal>, 1, 256);
    run("softmax_197 R=2 exact, 256 threads", softmax_rows<C, 2, kExact>, 2, 256);
    run("softmax_197 R=2 div.full, 256 threads", softmax_rows<C, 2, kFull>, 2, 256);
    run("softmax_197 R=4 exact, 32 threads (Inductor's shape)", softmax_rows<C, 4, kExact>, 4, 32);
    run("softmax_197 R=4 div.full, 32 threads", softmax_rows<C, 4, kFull>, 4, 32);
    run("softmax_197 R=4 div.full, 128 threads", softmax_rows<C, 4, kFull>, 4, 128);
    run("softmax_197 R=2 div.full, 128 threads", softmax_rows<C, 2, kFull>, 2, 128);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(stats));
  }
  {  // BERT-base's layer norm: 131072 rows of 768 bf16
    constexpr int C = 768;
    const int rows = 131072;
    LayerNormBuffers buf(rows, C);
    __nv_bfloat16 *x = buf.x, *y = buf.y, *w = buf.w, *b = buf.b;
    const double copy = copy_us(x, y, 2 * buf.bytes);
    report("copy of layer_norm_768's bytes", copy, copy);
    auto run = [&](const char* name, auto kernel, int lanes, int threads) {
      const int blocks = int((int64_t(rows) * lanes + threads - 1) / threads);
      report(name, median_us([&] { kernel<<<blocks, threads>>>(x, w, b, y, rows); }, reps), copy);
      CHECK(cudaGetLastError());
    };
#ifdef GENERATED_LAYER_NORM_768
    // kernel0(x, y, w, b, rows): 16 threads a row, 8 rows a block
    report("layer_norm_768 toroid's kernel0", median_us([&] {
      kernel0_i32<<<(rows + 7) / 8, dim3(16, 8)>>>(reinterpret_cast<t_bf16*>(x), reinterpret_cast<t_bf16*>(y),
                                                    reinterpret_cast<t_bf16*>(w), reinterpret_cast<t_bf16*>(b), rows); }, reps), copy);
    CHECK(cudaGetLastError());
#endif
    run("layer_norm_768 16 lanes, 128 threads (toroid's shape)", layer_norm_rows<C, 16>, 16, 128);
    run("layer_norm_768 32 lanes, 32 threads (Inductor's shape)", layer_norm_rows<C, 32>, 32, 32);
    run("layer_norm_768 32 lanes, 128 threads", layer_norm_rows<C, 32>, 32, 128);
    run("layer_norm_768 32 lanes, 256 threads", layer_norm_rows<C, 32>, 32, 256);
    run("layer_norm_768 16 lanes, 256 threads", layer_norm_rows<C, 16>, 16, 256);
    run("layer_norm_768 8 lanes, 128 threads", layer_norm_rows<C, 8>, 8, 128);
    run("layer_norm_768 32 lanes, 64 threads", layer_norm_rows<C, 32>, 32, 64);
  }
#ifdef GENERATED_LAYER_NORM_4096
  {  // the GPU micro suite's layer_norm: 16384 rows of 4096 bf16, a block of 128 threads a row
    const int rows = 16384;
    LayerNormBuffers buf(rows, 4096);
    __nv_bfloat16 *x = buf.x, *y = buf.y, *w = buf.w, *b = buf.b;
    const double copy = copy_us(x, y, 2 * buf.bytes);
    report("copy of layer_norm's bytes", copy, copy);
    report("layer_norm toroid's kernel0", median_us([&] {
      kernel0_i32<<<rows, 128>>>(reinterpret_cast<t_bf16*>(x), reinterpret_cast<t_bf16*>(y), reinterpret_cast<t_bf16*>(w),
                                 reinterpret_cast<t_bf16*>(b), rows); }, reps), copy);
    CHECK(cudaGetLastError());
  }
#endif
  return 0;
}
