// scaled_dot_product_attention's device kernel: one pass over the keys per block of queries with
// an online softmax (a running maximum and sum per query row, the output accumulated and rescaled
// as the maximum grows), so the score matrix is never written to memory.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "toroid/runtime/cuda/device_kernels.h"
#include "toroid/runtime/cuda/nvrtc.h"
#include "toroid/support/error.h"

namespace toroid::runtime::cuda {

namespace {

// A block takes 32 query rows, four threads a row (a quad); each thread holds a quarter of the
// row's query and output vectors, in float4 groups interleaved across the quad (group t*4 + c
// for thread c), so a quad reading one key row from shared memory touches 64 consecutive bytes
// and all eight quads of a warp read the same ones. Keys and values come through shared memory
// 32 rows at a time as float. Scores are kept in the log2 domain (exp2f). D, the longer of the
// query's and the value's last dims rounded up to 16, is compiled in.
constexpr const char* kSource = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct AttentionArgs {
  const void* q; const void* k; const void* v; const void* mask; void* out;
  long long qs[4], ks[4], vs[4], ms[4], os[4];  // element strides of dims (batch, head, row, col)
  int heads, L, S, E, Ev, group;                // group: query heads per key head
  float scale_log2;                             // scale * log2(e)
  int causal, mask_kind;                        // mask_kind: 0 none, 1 bool, 2 additive
  int k_vec, v_vec;                             // rows of k / v load as 16-byte groups
};

__device__ __forceinline__ float toroid_att_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float toroid_att_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float toroid_att_load(const __half* p, long long i) { return __half2float(p[i]); }
__device__ __forceinline__ void toroid_att_store(float* p, long long i, float x) { p[i] = x; }
__device__ __forceinline__ void toroid_att_store(__nv_bfloat16* p, long long i, float x) { p[i] = __float2bfloat16(x); }
__device__ __forceinline__ void toroid_att_store(__half* p, long long i, float x) { p[i] = __float2half(x); }

#define TOROID_ATT_ROWS 32
#define TOROID_ATT_NEG_INF __int_as_float(0xff800000)
#define TOROID_ATT_KEYS 32

template <typename T, int D>
__device__ void toroid_attention(const AttentionArgs& a) {
  constexpr int G = D / 16;  // float4 groups a thread holds
  __shared__ float4 ks[TOROID_ATT_KEYS][D / 4];
  __shared__ float4 vs[TOROID_ATT_KEYS][D / 4];
  const int quad = threadIdx.x >> 2, c = threadIdx.x & 3;
  const long long b = blockIdx.z / a.heads, h = blockIdx.z % a.heads, kh = h / a.group;
  const int i = blockIdx.x * TOROID_ATT_ROWS + quad;
  const bool row_ok = i < a.L;
  const T* q = static_cast<const T*>(a.q) + b * a.qs[0] + h * a.qs[1];
  const T* k = static_cast<const T*>(a.k) + b * a.ks[0] + kh * a.ks[1];
  const T* v = static_cast<const T*>(a.v) + b * a.vs[0] + kh * a.vs[1];
  float4 qv[G], acc[G];
#pragma unroll
  for (int t = 0; t < G; ++t) {
    float x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      int e = (t * 4 + c) * 4 + u;
      x[u] = row_ok && e < a.E ? toroid_att_load(q, i * a.qs[2] + e * a.qs[3]) * a.scale_log2 : 0.0f;
    }
    qv[t] = make_float4(x[0], x[1], x[2], x[3]);
    acc[t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  float m = TOROID_ATT_NEG_INF, l = 0.0f;
  // With is_causal no query of this block looks past its last row.
  int keys = a.S;
  if (a.causal) keys = min(keys, min(a.L, (int)(blockIdx.x + 1) * TOROID_ATT_ROWS));
  const float log2e = 1.4426950408889634f;
  for (int j0 = 0; j0 < keys; j0 += TOROID_ATT_KEYS) {
    __syncthreads();
    for (int x = threadIdx.x; x < TOROID_ATT_KEYS * D; x += blockDim.x) {
      int jj = x / D, e = x % D, j = j0 + jj;
      bool in = j < a.S;
      float kv = in && e < a.E ? toroid_att_load(k, j * a.ks[2] + e * a.ks[3]) : 0.0f;
      float vv = in && e < a.Ev ? toroid_att_load(v, j * a.vs[2] + e * a.vs[3]) : 0.0f;
      reinterpret_cast<float*>(ks[jj])[e] = kv;
      reinterpret_cast<float*>(vs[jj])[e] = vv;
    }
    __syncthreads();
    float s[TOROID_ATT_KEYS];
    float top = TOROID_ATT_NEG_INF;
#pragma unroll
    for (int jj = 0; jj < TOROID_ATT_KEYS; ++jj) {
      float part = 0.0f;
#pragma unroll
      for (int t = 0; t < G; ++t) {
        float4 kk = ks[jj][t * 4 + c];
        part = fmaf(qv[t].x, kk.x, part);
        part = fmaf(qv[t].y, kk.y, part);
        part = fmaf(qv[t].z, kk.z, part);
        part = fmaf(qv[t].w, kk.w, part);
      }
      part += __shfl_xor_sync(0xffffffffu, part, 1);
      part += __shfl_xor_sync(0xffffffffu, part, 2);
      int j = j0 + jj;
      bool keep = row_ok && j < a.S && !(a.causal && j > i);
      if (keep && a.mask_kind) {
        long long at = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + j * a.ms[3];
        if (a.mask_kind == 1) keep = static_cast<const unsigned char*>(a.mask)[at] != 0;
        else part += toroid_att_load(static_cast<const T*>(a.mask), at) * log2e;
      }
      s[jj] = keep ? part : TOROID_ATT_NEG_INF;
      top = s[jj] > top || s[jj] != s[jj] ? s[jj] : top;  // a NaN score stays: the row is NaN
    }
    float next = m != m || top != top ? m + top : fmaxf(m, top);
    if (next == TOROID_ATT_NEG_INF) continue;  // every key so far masked: nothing to add
    float keep_old = exp2f(m - next);  // 0 while m is -inf
    m = next;
    l *= keep_old;
#pragma unroll
    for (int t = 0; t < G; ++t) {
      acc[t].x *= keep_old; acc[t].y *= keep_old; acc[t].z *= keep_old; acc[t].w *= keep_old;
    }
#pragma unroll
    for (int jj = 0; jj < TOROID_ATT_KEYS; ++jj) {
      float p = exp2f(s[jj] - m);
      l += p;
#pragma unroll
      for (int t = 0; t < G; ++t) {
        float4 vv = vs[jj][t * 4 + c];
        acc[t].x = fmaf(p, vv.x, acc[t].x);
        acc[t].y = fmaf(p, vv.y, acc[t].y);
        acc[t].z = fmaf(p, vv.z, acc[t].z);
        acc[t].w = fmaf(p, vv.w, acc[t].w);
      }
    }
  }
  if (!row_ok) return;
  // A row with every key masked (or no keys) gives zeros, as PyTorch's safe softmax.
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  T* out = static_cast<T*>(a.out) + b * a.os[0] + h * a.os[1] + i * a.os[2];
#pragma unroll
  for (int t = 0; t < G; ++t) {
    const float x[4] = {acc[t].x, acc[t].y, acc[t].z, acc[t].w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      int e = (t * 4 + c) * 4 + u;
      if (e < a.Ev) toroid_att_store(out, e * a.os[3], x[u] * inv);
    }
  }
}

#if defined(TOROID_ATT_MMA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
// The tensor-core kernel for bf16 and f16 (sm_80 and later): a block of four warps takes 64 query
// rows, 16 a warp, and walks the keys 64 at a time. S = Q K^T and O += P V are mma.sync
// m16n8k16 products with float accumulators; a warp's S accumulators, rounded to 16 bits, are
// the A operand of P V as they are (the accumulator and A layouts agree on which thread holds
// which row and column), so P never leaves registers. Keys and values are staged in shared
// memory as [key][d], rows padded by 16 bytes so that each 8-row phase of an ldmatrix hits 32
// different banks; the values' fragments load transposed. Operands stay as raw 16-bit patterns
// until the mma.
#define TOROID_ATT_TC_ROWS 64
#define TOROID_ATT_THREADS 128  // a block: four warps
#define TOROID_ATT_TC_KEYS 64

__device__ __forceinline__ unsigned toroid_att_pack(const __nv_bfloat16*, float lo, float hi) {
  return (unsigned)__bfloat16_as_ushort(__float2bfloat16(lo)) | ((unsigned)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16);
}
__device__ __forceinline__ unsigned toroid_att_pack(const __half*, float lo, float hi) {
  return (unsigned)__half_as_ushort(__float2half(lo)) | ((unsigned)__half_as_ushort(__float2half(hi)) << 16);
}
#ifndef TOROID_ATT_HOST_MMA
// ldmatrix .x4: four 8x8 16-bit matrices, lane L giving the address of row L % 8 of matrix L / 8;
// register i gets matrix i's row lane / 4, columns 2 (lane % 4) and + 1 (.trans: its column
// lane / 4, rows 2 (lane % 4) and + 1).
__device__ __forceinline__ void toroid_att_ldsm(unsigned (&r)[4], const unsigned short* p) {
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
}
__device__ __forceinline__ void toroid_att_ldsm_trans(unsigned (&r)[4], const unsigned short* p) {
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
}
__device__ __forceinline__ void toroid_att_mma(const __nv_bfloat16*, float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void toroid_att_mma(const __half*, float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

// The larger of two scores, a NaN winning (it makes its row NaN).
__device__ __forceinline__ float toroid_att_top(float top, float x) { return x > top || x != x ? x : top; }

#ifndef TOROID_ATT_HOST_MMA
// 16 bytes from global to shared memory without a register (zeros where `bytes` is 0).
__device__ __forceinline__ void toroid_att_cp16(void* dst, const void* src, int bytes) {
  unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(at), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void toroid_att_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void toroid_att_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
#endif

// Stages rows j0 .. j0 + BC of a (S x cols) operand into shared rows of `stride` elements, D
// columns each, zeros past the ends: 16-byte asynchronous copies where `vec` says rows are
// 16-byte aligned runs (cols a multiple of the chunk), else element by element. Consecutive
// threads take consecutive chunks of a row.
template <typename E, int BC, int D>
__device__ __forceinline__ void toroid_att_stage(E* dst, int stride, const E* src, long long rs, long long cs, int j0,
                                                 int S, int cols, int vec) {
  constexpr int G = 16 / sizeof(E);
  for (int x = threadIdx.x; x < BC * (D / G); x += TOROID_ATT_THREADS) {
    int jj = x / (D / G), e = x % (D / G) * G, j = j0 + jj;
    E* d = dst + jj * stride + e;
    if (vec) {
      bool in = j < S && e < cols;
      toroid_att_cp16(d, in ? src + j * rs + e : src, in ? 16 : 0);
    } else {
#pragma unroll
      for (int u = 0; u < G; ++u) d[u] = j < S && e + u < cols ? src[j * rs + (e + u) * cs] : E(0);
    }
  }
}

// Before computing tile j0 (buffer cur): issues the next tile's copies into the other buffer
// (whose last reader finished at the previous tile's closing barrier), or with one stage this
// tile's, and waits until this tile is in shared memory for the whole block. stage(j0, buf)
// issues and commits a tile's copies.
template <int STAGES, typename F>
__device__ __forceinline__ void toroid_att_advance(const F& stage, int j0, int bc, int keys, int cur) {
  if (STAGES == 1) {
    stage(j0, 0);
    toroid_att_cp_wait<0>();
  } else if (j0 + bc < keys) {
    stage(j0 + bc, cur ^ 1);
    toroid_att_cp_wait<1>();
  } else {
    toroid_att_cp_wait<0>();
  }
  __syncthreads();
}

// One tile of a warp's online softmax: scales and masks the scores s (16 rows: rows[0] in
// [n][0..1], rows[1] in [n][2..3]; keys j0 + n * 8 + 2 * t4 (+1)), moves each row's running maximum
// m past them, rescaling the sum l and the output o, and sets base, what p = exp2(s - base) takes.
// A NaN score needs no care here: its p is NaN, and so are the row's sum and output. Rows past L
// (zero queries) are computed and never written.
template <typename T, int NS, int NO>
__device__ __forceinline__ void toroid_att_online(const AttentionArgs& a, long long b, long long h, const int (&rows)[2],
                                                  int j0, int t4, float (&s)[NS][4], float (&o)[NO][4], float (&m)[2],
                                                  float (&l)[2], float (&base)[2]) {
  const float log2e = 1.4426950408889634f;
  float top[2] = {TOROID_ATT_NEG_INF, TOROID_ATT_NEG_INF};
  // Most tiles need neither masking nor bounds: every key exists, below the warp's first row.
  const int last = j0 + NS * 8 - 1, first_row = rows[0] - (int)((threadIdx.x & 31) >> 2);
  if (!a.mask_kind && last < a.S && !(a.causal && last > first_row)) {
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        s[n][u] *= a.scale_log2;
        top[u >> 1] = fmaxf(top[u >> 1], s[n][u]);
      }
  } else {
#pragma unroll
    for (int n = 0; n < NS; ++n)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        int i = rows[u >> 1], j = j0 + n * 8 + t4 * 2 + (u & 1);
        float x = s[n][u] * a.scale_log2;
        bool keep = j < a.S && !(a.causal && j > i);
        if (keep && a.mask_kind) {
          long long at = b * a.ms[0] + h * a.ms[1] + min(i, a.L - 1) * a.ms[2] + j * a.ms[3];
          if (a.mask_kind == 1) keep = static_cast<const unsigned char*>(a.mask)[at] != 0;
          else x += toroid_att_load(static_cast<const T*>(a.mask), at) * log2e;
        }
        s[n][u] = keep ? x : TOROID_ATT_NEG_INF;
        top[u >> 1] = fmaxf(top[u >> 1], s[n][u]);
      }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    top[r] = fmaxf(top[r], __shfl_xor_sync(0xffffffffu, top[r], 1));
    top[r] = fmaxf(top[r], __shfl_xor_sync(0xffffffffu, top[r], 2));
    float next = fmaxf(m[r], top[r]);
    base[r] = next == TOROID_ATT_NEG_INF ? 0.0f : next;  // all masked so far: every p is 0
    float keep_old = exp2f(m[r] - base[r]);              // 0 while m is -inf
    m[r] = next;
    l[r] *= keep_old;
#pragma unroll
    for (int n = 0; n < NO; ++n) {
      o[n][2 * r] *= keep_old;
      o[n][2 * r + 1] *= keep_old;
    }
  }
}

// Sums each row's partial sums over its quad and writes o / l (zeros for a row of no keys).
template <typename T, int NO>
__device__ __forceinline__ void toroid_att_finish(const AttentionArgs& a, T* out, const int (&rows)[2], int t4,
                                                  const float (&o)[NO][4], float (&l)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    if (rows[r] >= a.L) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
    for (int n = 0; n < NO; ++n)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        int e = n * 8 + t4 * 2 + u;
        if (e < a.Ev) toroid_att_store(out, rows[r] * a.os[2] + e * a.os[3], o[n][2 * r + u] * inv);
      }
  }
}

template <typename T, int D>
__device__ void toroid_attention_tc(const AttentionArgs& a) {
  constexpr int BC = TOROID_ATT_TC_KEYS, KS = D + 8;
  constexpr int STAGES = D <= 64 ? 2 : 1;  // two tiles in flight where they fit in 48 KB
  __shared__ __align__(16) unsigned short ks[STAGES][BC * KS];  // keys, [key][d]
  __shared__ __align__(16) unsigned short vs[STAGES][BC * KS];  // values, [key][d]
  const T* tag = nullptr;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const long long b = blockIdx.z / a.heads, h = blockIdx.z % a.heads, kh = h / a.group;
  const int rows[2] = {(int)blockIdx.x * TOROID_ATT_TC_ROWS + warp * 16 + g,
                       (int)blockIdx.x * TOROID_ATT_TC_ROWS + warp * 16 + g + 8};
  const unsigned short* q = static_cast<const unsigned short*>(a.q) + b * a.qs[0] + h * a.qs[1];
  const unsigned short* k = static_cast<const unsigned short*>(a.k) + b * a.ks[0] + kh * a.ks[1];
  const unsigned short* v = static_cast<const unsigned short*>(a.v) + b * a.vs[0] + kh * a.vs[1];
  // A fragments of the warp's 16 query rows: register r holds row g (+8 for odd r), columns
  // 2 * t4 and 2 * t4 + 1 (+8 for r >= 2) of each 16-column step.
  unsigned qa[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int i = rows[r & 1], e = kk * 16 + t4 * 2 + (r & 2) * 4;
      bool in = i < a.L;
      unsigned lo = in && e < a.E ? q[i * a.qs[2] + e * a.qs[3]] : 0u;
      unsigned hi = in && e + 1 < a.E ? q[i * a.qs[2] + (e + 1) * a.qs[3]] : 0u;
      qa[kk][r] = lo | hi << 16;
    }
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {TOROID_ATT_NEG_INF, TOROID_ATT_NEG_INF}, l[2] = {0.0f, 0.0f};
  int keys = a.S;
  if (a.causal) keys = min(keys, min(a.L, (int)(blockIdx.x + 1) * TOROID_ATT_TC_ROWS));
  auto stage = [&](int j0, int buf) {
    toroid_att_stage<unsigned short, BC, D>(ks[buf], KS, k, a.ks[2], a.ks[3], j0, a.S, a.E, a.k_vec);
    toroid_att_stage<unsigned short, BC, D>(vs[buf], KS, v, a.vs[2], a.vs[3], j0, a.S, a.Ev, a.v_vec);
    toroid_att_cp_commit();
  };
  if (STAGES == 2 && keys > 0) stage(0, 0);
  for (int j0 = 0, t = 0; j0 < keys; j0 += BC, ++t) {
    const int cur = STAGES == 2 ? t & 1 : 0;
    toroid_att_advance<STAGES>(stage, j0, BC, keys, cur);
    // S for keys j0 + n * 8 + 2 * t4 (+1): [n][0..1] row g, [n][2..3] row g + 8.
    float s[BC / 8][4];
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    // B fragments of two key tiles at a time: lane L gives the address of row L % 8 of matrix
    // L / 8 (keys of tile n + L / 16, columns + 8 for odd matrices).
#pragma unroll
    for (int n = 0; n < BC / 8; n += 2) {
      const unsigned short* kr = &ks[cur][((n + (lane >> 4)) * 8 + (lane & 7)) * KS + ((lane >> 3) & 1) * 8];
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        unsigned f[4];
        toroid_att_ldsm(f, kr + kk * 16);
        toroid_att_mma(tag, s[n], qa[kk], f[0], f[1]);
        toroid_att_mma(tag, s[n + 1], qa[kk], f[2], f[3]);
      }
    }
    float base[2];
    toroid_att_online<T>(a, b, h, rows, j0, t4, s, o, m, l, base);
    // P as A fragments of 16-key steps: accumulator tiles 2 kk and 2 kk + 1 side by side.
    unsigned pa[BC / 16][4];
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float* t = s[2 * kk + half];
        float p0 = exp2f(t[0] - base[0]), p1 = exp2f(t[1] - base[0]);
        float p2 = exp2f(t[2] - base[1]), p3 = exp2f(t[3] - base[1]);
        l[0] += p0 + p1;
        l[1] += p2 + p3;
        pa[kk][2 * half] = toroid_att_pack(tag, p0, p1);
        pa[kk][2 * half + 1] = toroid_att_pack(tag, p2, p3);
      }
    // Values transposed as they load: lane L gives row L % 8 (+8 for odd matrices) of the
    // key step, columns of tile n + L / 16.
#pragma unroll
    for (int n = 0; n < D / 8; n += 2) {
      const unsigned short* vr = &vs[cur][(((lane >> 3) & 1) * 8 + (lane & 7)) * KS + (n + (lane >> 4)) * 8];
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk) {
        unsigned f[4];
        toroid_att_ldsm_trans(f, vr + kk * 16 * KS);
        toroid_att_mma(tag, o[n], pa[kk], f[0], f[1]);
        toroid_att_mma(tag, o[n + 1], pa[kk], f[2], f[3]);
      }
    }
    __syncthreads();  // the tile's buffer is free for the next stage
  }
  toroid_att_finish(a, static_cast<T*>(a.out) + b * a.os[0] + h * a.os[1], rows, t4, o, l);
}

#ifdef TOROID_ATT_F32
// fp32 on tensor cores keeping fp32's accuracy: each operand x is split into two tf32 values,
// big = tf32(x) and small = tf32(x - big), and a product is big*big + big*small + small*big
// (three mma.sync m16n8k8). Same blocks and softmax as the 16-bit kernel. The k dim of each
// 8-wide step is taken in the order 0, 2, 4, 6, 1, 3, 5, 7 on both operands (a dot product does
// not depend on it): then a thread's two k values are adjacent in memory, and its S
// accumulators are its A operand of P V, reordered in registers.
#ifndef TOROID_ATT_HOST_MMA
__device__ __forceinline__ unsigned toroid_att_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void toroid_att_mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

__device__ __forceinline__ void toroid_att_split(float x, unsigned& big, unsigned& small) {
  big = toroid_att_tf32(x);
  small = toroid_att_tf32(x - __uint_as_float(big));
}

// d += a b in 3xTF32, a already split (b: the two k values of a lane).
__device__ __forceinline__ void toroid_att_mma3(float (&d)[4], const unsigned (&ab)[4], const unsigned (&as)[4],
                                                float2 b) {
  unsigned bb0, bs0, bb1, bs1;
  toroid_att_split(b.x, bb0, bs0);
  toroid_att_split(b.y, bb1, bs1);
  toroid_att_mma_tf32(d, as, bb0, bb1);
  toroid_att_mma_tf32(d, ab, bs0, bs1);
  toroid_att_mma_tf32(d, ab, bb0, bb1);
}

template <int D>
__device__ void toroid_attention_tf32(const AttentionArgs& a) {
  // Two tiles in flight, kept as loaded and split as they are read. Key rows padded to D + 8
  // (the float2 loads of a half warp hit 32 banks), value rows to D + 4 (rows 2 t4 and column
  // g: 32 banks).
  constexpr int BC = D >= 64 ? 32 : 64, KS = D + 8, VS = D + 4;
  __shared__ __align__(16) float ks[2][BC * KS];  // keys, [key][d]
  __shared__ __align__(16) float vs[2][BC * VS];  // values, [key][d]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const long long b = blockIdx.z / a.heads, h = blockIdx.z % a.heads, kh = h / a.group;
  const int rows[2] = {(int)blockIdx.x * TOROID_ATT_TC_ROWS + warp * 16 + g,
                       (int)blockIdx.x * TOROID_ATT_TC_ROWS + warp * 16 + g + 8};
  const float* q = static_cast<const float*>(a.q) + b * a.qs[0] + h * a.qs[1];
  const float* k = static_cast<const float*>(a.k) + b * a.ks[0] + kh * a.ks[1];
  const float* v = static_cast<const float*>(a.v) + b * a.vs[0] + kh * a.vs[1];
  // The query as A fragments of 8-wide steps: [kk][0] row g, column kk * 8 + 2 * t4; [1] row
  // g + 8; [2], [3] the next column.
  float qf[D / 8][4];
#pragma unroll
  for (int kk = 0; kk < D / 8; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int i = rows[r & 1], e = kk * 8 + t4 * 2 + (r >> 1);
      qf[kk][r] = i < a.L && e < a.E ? q[i * a.qs[2] + e * a.qs[3]] : 0.0f;
    }
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {TOROID_ATT_NEG_INF, TOROID_ATT_NEG_INF}, l[2] = {0.0f, 0.0f};
  int keys = a.S;
  if (a.causal) keys = min(keys, min(a.L, (int)(blockIdx.x + 1) * TOROID_ATT_TC_ROWS));
  auto stage = [&](int j0, int buf) {
    toroid_att_stage<float, BC, D>(ks[buf], KS, k, a.ks[2], a.ks[3], j0, a.S, a.E, a.k_vec);
    toroid_att_stage<float, BC, D>(vs[buf], VS, v, a.vs[2], a.vs[3], j0, a.S, a.Ev, a.v_vec);
    toroid_att_cp_commit();
  };
  if (keys > 0) stage(0, 0);
  for (int j0 = 0, t = 0; j0 < keys; j0 += BC, ++t) {
    const int cur = t & 1;
    toroid_att_advance<2>(stage, j0, BC, keys, cur);
    float s[BC / 8][4];
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 8; ++kk) {
      unsigned qb[4], qsm[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) toroid_att_split(qf[kk][r], qb[r], qsm[r]);
#pragma unroll
      for (int n = 0; n < BC / 8; ++n)
        toroid_att_mma3(s[n], qb, qsm, *reinterpret_cast<const float2*>(&ks[cur][(n * 8 + g) * KS + kk * 8 + t4 * 2]));
    }
    float base[2];
    toroid_att_online<float>(a, b, h, rows, j0, t4, s, o, m, l, base);
#pragma unroll
    for (int n = 0; n < BC / 8; ++n) {
      // Key step n: [0] row g key 2 t4, [1] row g + 8, [2], [3] key 2 t4 + 1.
      const float p[4] = {exp2f(s[n][0] - base[0]), exp2f(s[n][2] - base[1]), exp2f(s[n][1] - base[0]),
                          exp2f(s[n][3] - base[1])};
      l[0] += p[0] + p[2];
      l[1] += p[1] + p[3];
      unsigned pb[4], ps[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) toroid_att_split(p[r], pb[r], ps[r]);
      const float* vr = &vs[cur][(n * 8 + t4 * 2) * VS + g];
#pragma unroll
      for (int d = 0; d < D / 8; ++d) toroid_att_mma3(o[d], pb, ps, make_float2(vr[d * 8], vr[VS + d * 8]));
    }
    __syncthreads();  // the tile's buffer is free for the next stage
  }
  toroid_att_finish(a, static_cast<float*>(a.out) + b * a.os[0] + h * a.os[1], rows, t4, o, l);
}

#endif  // TOROID_ATT_F32
#endif  // TOROID_ATT_MMA

)";

constexpr int kDims[] = {16, 32, 64, 128};

// Host copy of the kernel's parameter struct (same layout).
struct KernelArgs {
  const void* q;
  const void* k;
  const void* v;
  const void* mask;
  void* out;
  long long qs[4], ks[4], vs[4], ms[4], os[4];
  int heads, L, S, E, Ev, group;
  float scale_log2;
  int causal, mask_kind;
  int k_vec, v_vec;
};

constexpr DType kDtypes[] = {DType::Float32, DType::BFloat16, DType::Float16};

int dtype_index(DType t) {
  for (int i = 0; i < 3; ++i)
    if (kDtypes[i] == t) return i;
  return -1;
}

const char* const kSuffix[] = {"f32", "bf16", "f16"};
const char* const kElement[] = {"float", "__nv_bfloat16", "__half"};

// The tensor-core kernels need sm_80 (bf16 mma, tf32); fp32's go up to 64 columns (at 128 they
// would spill: 255 registers).
bool tensor_core_kernel(DType t, int arch, int dims) { return arch >= 80 && (t != DType::Float32 || dims <= 64); }

std::string kernel_name(int t, int dims, bool tc) {
  return std::string(tc ? "toroid_attention_tc_" : "toroid_attention_") + kSuffix[t] + "_" + std::to_string(dims);
}

// The extern "C" entry of one kernel: the source's templates hold the code, an entry instantiates
// one (dtype, head size, kind), so a module holds only what it launches.
std::string kernel_entry(int t, int dims, bool tc) {
  std::string d = std::to_string(dims), element = kElement[t];
  std::string head = "extern \"C\" __global__ void ";
  if (!tc) return head + "__launch_bounds__(128) " + kernel_name(t, dims, false) + "(AttentionArgs a) { toroid_attention<" +
                  element + ", " + d + ">(a); }\n";
  std::string body = kDtypes[t] == DType::Float32
                         ? "__launch_bounds__(128, 3) " + kernel_name(t, dims, true) + "(AttentionArgs a) { toroid_attention_tf32<" + d + ">(a); }"
                         : "__launch_bounds__(128) " + kernel_name(t, dims, true) + "(AttentionArgs a) { toroid_attention_tc<" + element + ", " + d + ">(a); }";
  return "#if defined(TOROID_ATT_MMA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)\n" + head + body + "\n#endif\n";
}

std::string source_with(int t, const std::string& entries) {
  std::string upper = kSuffix[t];
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return "#define TOROID_ATT_" + upper + " 1\n#define TOROID_ATT_MMA 1\n" + kSource + entries;
}

int checked_dtype_index(DType dtype) {
  int t = dtype_index(dtype);
  TOROID_CHECK(t >= 0, std::string("no attention kernel for ") + dtype_short_name(dtype));
  return t;
}

int dim_index(int64_t e, int64_t ev) {
  int64_t need = std::max(e, ev);
  for (int d = 0; d < 4; ++d)
    if (need <= kDims[d]) return d;
  return -1;
}

// One kernel a module, compiled on its first launch (NVRTC takes about a second for one, against
// five to seven for a dtype's eight) and kept in the cubin cache.
Function attention_kernel(int t, int d, bool tc) {
  struct Compiled {
    std::once_flag once;
    std::unique_ptr<Module> module;
    Function function = {};
  };
  static Compiled kernels[3][4][2];
  Compiled& k = kernels[t][d][tc ? 1 : 0];
  std::call_once(k.once, [&] {
    NvrtcOptions o;
    o.arch = device().arch();
    std::string name = kernel_name(t, kDims[d], tc);
    Cubin c = compile_cubin({attention_kernel_source(kDtypes[t], kDims[d], tc), name}, o);
    k.module = std::make_unique<Module>(c.image, name);
    k.function = k.module->function(name);
  });
  return k.function;
}

}  // namespace

std::string attention_kernel_source(DType dtype) {
  int t = checked_dtype_index(dtype);
  std::string entries;
  for (int dims : kDims) {
    entries += kernel_entry(t, dims, false);
    if (tensor_core_kernel(dtype, 80, dims)) entries += kernel_entry(t, dims, true);
  }
  return source_with(t, entries);
}

std::string attention_kernel_source(DType dtype, int dims, bool tensor_cores) {
  int t = checked_dtype_index(dtype);
  TOROID_CHECK(std::find(std::begin(kDims), std::end(kDims), dims) != std::end(kDims),
               "no attention kernel for head size " + std::to_string(dims));
  TOROID_CHECK(!tensor_cores || tensor_core_kernel(dtype, 80, dims),
               "no tensor-core attention kernel for " + std::string(kSuffix[t]) + " heads of " + std::to_string(dims));
  return source_with(t, kernel_entry(t, dims, tensor_cores));
}

std::optional<CubinRequest> attention_kernel_for(DType dtype, int64_t E, int64_t Ev, int arch) {
  int t = dtype_index(dtype), d = dim_index(E, Ev);
  if (t < 0 || d < 0) return std::nullopt;
  bool tc = tensor_core_kernel(dtype, arch, kDims[d]);
  return CubinRequest{attention_kernel_source(dtype, kDims[d], tc), kernel_name(t, kDims[d], tc)};
}

bool attention_supported(const AttentionCall& a) {
  return dtype_index(a.dtype) >= 0 && dim_index(a.E, a.Ev) >= 0 && a.L <= INT32_MAX && a.S <= INT32_MAX &&
         a.heads > 0 && a.group > 0 && a.batch * a.heads <= 65535 && (a.L + 31) / 32 <= INT32_MAX &&
         (a.mask == nullptr || a.mask_bool || a.mask_dtype == a.dtype);
}

namespace {

// Whether every row of a (rows x cols) operand of `group` elements a 16 bytes is a 16-byte
// aligned run the kernel can read 16 bytes at a time.
bool rows_vectorize(const void* base, const int64_t* strides, int64_t cols, int64_t group) {
  return cols % group == 0 && strides[3] == 1 && strides[2] % group == 0 && strides[1] % group == 0 &&
         strides[0] % group == 0 && reinterpret_cast<uintptr_t>(base) % 16 == 0;
}

}  // namespace

AttentionLaunch attention_launch(const AttentionCall& a, int arch) {
  TOROID_CHECK(attention_supported(a), "attention on the device with operands its kernel does not take");
  KernelArgs p{};
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.mask = a.mask;
  p.out = a.out;
  for (int d = 0; d < 4; ++d) {
    p.qs[d] = a.q_strides[d];
    p.ks[d] = a.k_strides[d];
    p.vs[d] = a.v_strides[d];
    p.ms[d] = a.mask_strides[d];
    p.os[d] = a.out_strides[d];
  }
  p.heads = static_cast<int>(a.heads);
  p.L = static_cast<int>(a.L);
  p.S = static_cast<int>(a.S);
  p.E = static_cast<int>(a.E);
  p.Ev = static_cast<int>(a.Ev);
  p.group = static_cast<int>(a.group);
  p.scale_log2 = static_cast<float>(a.scale * 1.4426950408889634);
  p.causal = a.causal ? 1 : 0;
  p.mask_kind = a.mask == nullptr ? 0 : a.mask_bool ? 1 : 2;
  const int dims = kDims[dim_index(a.E, a.Ev)];
  const bool tc = tensor_core_kernel(a.dtype, arch, dims);
  const int64_t group = a.dtype == DType::Float32 ? 4 : 8;
  p.k_vec = tc && rows_vectorize(a.k, a.k_strides, a.E, group);
  p.v_vec = tc && rows_vectorize(a.v, a.v_strides, a.Ev, group);
  AttentionLaunch l;
  l.kernel = kernel_name(dtype_index(a.dtype), dims, tc);
  l.params.resize(sizeof p);
  std::memcpy(l.params.data(), &p, sizeof p);
  const int64_t rows = tc ? 64 : 32;  // query rows a block
  l.grid_x = static_cast<unsigned>((a.L + rows - 1) / rows);
  l.grid_z = static_cast<unsigned>(a.batch * a.heads);
  return l;
}

void attention(const AttentionCall& a, Stream s) {
  const int arch = device().arch();
  AttentionLaunch l = attention_launch(a, arch);
  if (a.batch * a.heads * a.L * a.Ev == 0) return;
  const int d = dim_index(a.E, a.Ev);  // the kernel attention_launch named, without a lookup by name
  const Function f = attention_kernel(dtype_index(a.dtype), d, tensor_core_kernel(a.dtype, arch, kDims[d]));
  void* args[] = {l.params.data()};
  LaunchDims dims;
  dims.block_x = l.block_x;
  dims.grid_x = l.grid_x;
  dims.grid_z = l.grid_z;
  launch(f, dims, args, s, "toroid_attention");
}

}  // namespace toroid::runtime::cuda
