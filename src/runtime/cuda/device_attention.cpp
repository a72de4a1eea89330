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

#define TOROID_ATT_KERNEL(NAME, T, D) \
  extern "C" __global__ void __launch_bounds__(128) NAME(AttentionArgs a) { toroid_attention<T, D>(a); }
#define TOROID_ATT_DIMS(SUFFIX, T)                  \
  TOROID_ATT_KERNEL(toroid_attention_##SUFFIX##_16, T, 16)  \
  TOROID_ATT_KERNEL(toroid_attention_##SUFFIX##_32, T, 32)  \
  TOROID_ATT_KERNEL(toroid_attention_##SUFFIX##_64, T, 64)  \
  TOROID_ATT_KERNEL(toroid_attention_##SUFFIX##_128, T, 128)
#ifdef TOROID_ATT_F32
TOROID_ATT_DIMS(f32, float)
#endif
#ifdef TOROID_ATT_BF16
TOROID_ATT_DIMS(bf16, __nv_bfloat16)
#endif
#ifdef TOROID_ATT_F16
TOROID_ATT_DIMS(f16, __half)
#endif
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
};

constexpr DType kDtypes[] = {DType::Float32, DType::BFloat16, DType::Float16};

int dtype_index(DType t) {
  for (int i = 0; i < 3; ++i)
    if (kDtypes[i] == t) return i;
  return -1;
}

const char* const kSuffix[] = {"f32", "bf16", "f16"};

// One dtype's kernels (a module each, compiled on its first use: about 3 s for the four sizes).
struct AttentionKernels {
  std::unique_ptr<Module> module;
  Function f[4] = {};  // by kDims
};

const AttentionKernels& attention_kernels(int t) {
  static AttentionKernels k[3];
  static std::once_flag once[3];
  std::call_once(once[t], [t] {
    NvrtcOptions o;
    o.arch = device().arch();
    std::string name = std::string("toroid_attention_") + kSuffix[t];
    Cubin c = compile_cubin({attention_kernel_source(kDtypes[t]), name}, o);
    k[t].module = std::make_unique<Module>(c.image, name);
    for (int d = 0; d < 4; ++d) k[t].f[d] = k[t].module->function(name + "_" + std::to_string(kDims[d]));
  });
  return k[t];
}

int dim_index(int64_t e, int64_t ev) {
  int64_t need = std::max(e, ev);
  for (int d = 0; d < 4; ++d)
    if (need <= kDims[d]) return d;
  return -1;
}

}  // namespace

std::string attention_kernel_source(DType dtype) {
  int t = dtype_index(dtype);
  TOROID_CHECK(t >= 0, std::string("no attention kernel for ") + dtype_short_name(dtype));
  std::string upper = kSuffix[t];
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return "#define TOROID_ATT_" + upper + " 1\n" + kSource;
}

bool attention_supported(const AttentionCall& a) {
  return dtype_index(a.dtype) >= 0 && dim_index(a.E, a.Ev) >= 0 && a.L <= INT32_MAX && a.S <= INT32_MAX &&
         a.heads > 0 && a.group > 0 && a.batch * a.heads <= 65535 && (a.L + 31) / 32 <= INT32_MAX &&
         (a.mask == nullptr || a.mask_bool || a.mask_dtype == a.dtype);
}

AttentionLaunch attention_launch(const AttentionCall& a) {
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
  AttentionLaunch l;
  l.kernel = std::string("toroid_attention_") + kSuffix[dtype_index(a.dtype)] + "_" + std::to_string(kDims[dim_index(a.E, a.Ev)]);
  l.params.resize(sizeof p);
  std::memcpy(l.params.data(), &p, sizeof p);
  l.grid_x = static_cast<unsigned>((a.L + 31) / 32);
  l.grid_z = static_cast<unsigned>(a.batch * a.heads);
  return l;
}

void attention(const AttentionCall& a, Stream s) {
  AttentionLaunch l = attention_launch(a);
  if (a.batch * a.heads * a.L * a.Ev == 0) return;
  const AttentionKernels& k = attention_kernels(dtype_index(a.dtype));
  void* args[] = {l.params.data()};
  LaunchDims dims;
  dims.block_x = l.block_x;
  dims.grid_x = l.grid_x;
  dims.grid_z = l.grid_z;
  launch(k.f[dim_index(a.E, a.Ev)], dims, args, s, "toroid_attention");
}

}  // namespace toroid::runtime::cuda
