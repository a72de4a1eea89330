#include "toroid/runtime/cuda/device_kernels.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>

#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/runtime/cuda/nvrtc.h"
#include "toroid/support/error.h"

namespace toroid::runtime::cuda {

namespace {

// The count is a grid-stride sum; the coordinates come from one block that scans the elements
// 1024 at a time (warp scans, then a scan of the warp totals), carrying the running count.
constexpr const char* kSource = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct Dims { long long size[8]; int rank; };
struct Layout { long long size[8]; long long stride[8]; int rank; };

// Elements by dtype code, toroid's DType order: bool u8 i8 i16 i32 i64 f16 bf16 f32 f64.
__device__ __forceinline__ long long toroid_load_int(const void* p, long long i, int t) {
  switch (t) {
    case 0: case 1: return static_cast<const unsigned char*>(p)[i];
    case 2: return static_cast<const signed char*>(p)[i];
    case 3: return static_cast<const short*>(p)[i];
    case 4: return static_cast<const int*>(p)[i];
    default: return static_cast<const long long*>(p)[i];
  }
}
__device__ __forceinline__ double toroid_load_real(const void* p, long long i, int t) {
  switch (t) {
    case 6: return __half2float(static_cast<const __half*>(p)[i]);
    case 7: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case 8: return static_cast<const float*>(p)[i];
    case 9: return static_cast<const double*>(p)[i];
    default: return static_cast<double>(toroid_load_int(p, i, t));
  }
}
__device__ __forceinline__ void toroid_store(void* p, long long i, int t, double f, long long n) {
  switch (t) {
    case 0: static_cast<unsigned char*>(p)[i] = n != 0; break;
    case 1: static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(n); break;
    case 2: static_cast<signed char*>(p)[i] = static_cast<signed char>(n); break;
    case 3: static_cast<short*>(p)[i] = static_cast<short>(n); break;
    case 4: static_cast<int*>(p)[i] = static_cast<int>(n); break;
    case 5: static_cast<long long*>(p)[i] = n; break;
    case 6: static_cast<__half*>(p)[i] = __float2half(static_cast<float>(f)); break;
    case 7: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(f)); break;
    case 8: static_cast<float*>(p)[i] = static_cast<float>(f); break;
    default: static_cast<double*>(p)[i] = f; break;
  }
}

// An element as the accumulator type: double for floats, int64 for integers (scans and sorts).
template <typename Acc>
__device__ Acc toroid_load_acc(const void* p, long long i, int t);
template <>
__device__ double toroid_load_acc<double>(const void* p, long long i, int t) { return toroid_load_real(p, i, t); }
template <>
__device__ long long toroid_load_acc<long long>(const void* p, long long i, int t) { return toroid_load_int(p, i, t); }

#ifdef TOROID_DK_SCAN
// An inclusive scan (sum or product) along the middle dim of contiguous [outer, len, inner]
// tensors: one block per line, blockDim * TOROID_SCAN_ITEMS elements at a time (each thread
// scans its consecutive items, then warp scans of the thread totals, then the warp totals),
// carrying the line's running value. Floats accumulate in double, integers in int64 (wrapping),
// as the reference kernel.
#define TOROID_SCAN_ITEMS 8

template <typename Acc, bool Prod>
__device__ void toroid_scan(const void* x, int xt, void* out, int ot, long long outer, long long len,
                            long long inner) {
  __shared__ Acc warp_totals[32];
  __shared__ Acc carry;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const Acc identity = Prod ? Acc(1) : Acc(0);
  for (long long line = blockIdx.x; line < outer * inner; line += gridDim.x) {
    long long o = line / inner, in = line % inner, start = o * len * inner + in;
    if (threadIdx.x == 0) carry = identity;
    __syncthreads();
    for (long long base = 0; base < len; base += (long long)blockDim.x * TOROID_SCAN_ITEMS) {
      long long first = base + (long long)threadIdx.x * TOROID_SCAN_ITEMS;
      Acc item[TOROID_SCAN_ITEMS];
      Acc v = identity;  // the thread's total, then its inclusive prefix among the threads
      for (int i = 0; i < TOROID_SCAN_ITEMS; ++i) {
        long long k = first + i;
        Acc e = k < len ? toroid_load_acc<Acc>(x, start + k * inner, xt) : identity;
        v = Prod ? v * e : v + e;
        item[i] = v;
      }
      for (int d = 1; d < 32; d <<= 1) {
        Acc t = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v = Prod ? v * t : v + t;
      }
      Acc excl = __shfl_up_sync(0xffffffffu, v, 1);  // what the warp's earlier threads hold
      if (lane == 0) excl = identity;
      if (lane == 31) warp_totals[warp] = v;
      __syncthreads();
      if (warp == 0) {
        Acc w = lane < warps ? warp_totals[lane] : identity;
        for (int d = 1; d < 32; d <<= 1) {
          Acc t = __shfl_up_sync(0xffffffffu, w, d);
          if (lane >= d) w = Prod ? w * t : w + t;
        }
        warp_totals[lane] = w;
      }
      __syncthreads();
      Acc before = warp > 0 ? warp_totals[warp - 1] : identity;
      Acc lead = Prod ? carry * before * excl : carry + before + excl;
      for (int i = 0; i < TOROID_SCAN_ITEMS; ++i) {
        long long k = first + i;
        Acc total = Prod ? lead * item[i] : lead + item[i];
        if (k < len) toroid_store(out, start + k * inner, ot, static_cast<double>(total), static_cast<long long>(total));
      }
      __syncthreads();
      if (threadIdx.x == 0) carry = Prod ? carry * warp_totals[warps - 1] : carry + warp_totals[warps - 1];
      __syncthreads();
    }
  }
}

#define TOROID_SCAN(name, Acc, prod)                                                                         \
  extern "C" __global__ void name(const void* x, int xt, void* out, int ot, long long outer, long long len, \
                                  long long inner) {                                                       \
    toroid_scan<Acc, prod>(x, xt, out, ot, outer, len, inner);                                             \
  }
TOROID_SCAN(toroid_cumsum_real, double, false)
TOROID_SCAN(toroid_cumsum_int, long long, false)
TOROID_SCAN(toroid_cumprod_real, double, true)
TOROID_SCAN(toroid_cumprod_int, long long, true)
#endif  // TOROID_DK_SCAN

#ifdef TOROID_DK_SCATTER
// out[idx[j], :] (+)= values[j, :] for j < n over rows of `row` elements (out holds `rows` of
// them): atomic adds with `accumulate`, plain stores (the last writer wins) without. The first
// index out of [-rows, rows) is recorded as {1, rows, index} and writes nothing.
template <typename T>
__device__ void toroid_put(T* out, long long rows, long long row, const long long* idx, long long n, const T* values,
                           int accumulate, unsigned long long* bad) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n * row; e += (long long)gridDim.x * blockDim.x) {
    long long j = e / row, c = e % row, r = idx[j];
    if (r < 0) r += rows;
    if (r < 0 || r >= rows) {
      if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
        bad[1] = static_cast<unsigned long long>(rows);
        bad[2] = static_cast<unsigned long long>(idx[j]);
      }
      continue;
    }
    if (accumulate) atomicAdd(out + r * row + c, values[e]);
    else out[r * row + c] = values[e];
  }
}
)"
R"(
// The combining ops of scatter and scatter_reduce, per element type (int64 is carried as
// unsigned long long, compared signed). max and min propagate NaN.
enum { TOROID_STORE = -1, TOROID_ADD = 0, TOROID_MUL = 1, TOROID_MAX = 2, TOROID_MIN = 3 };
__device__ __forceinline__ double toroid_pick(double a, double b, int op) {
  if (a != a || b != b) return a != a ? a : b;
  return op == TOROID_MAX ? (a > b ? a : b) : (a < b ? a : b);
}
__device__ __forceinline__ float toroid_combine(float a, float b, int op) {
  return op == TOROID_ADD ? a + b : op == TOROID_MUL ? a * b : static_cast<float>(toroid_pick(a, b, op));
}
__device__ __forceinline__ double toroid_combine(double a, double b, int op) {
  return op == TOROID_ADD ? a + b : op == TOROID_MUL ? a * b : toroid_pick(a, b, op);
}
__device__ __forceinline__ __half toroid_combine(__half a, __half b, int op) {
  return __float2half(toroid_combine(__half2float(a), __half2float(b), op));
}
__device__ __forceinline__ __nv_bfloat16 toroid_combine(__nv_bfloat16 a, __nv_bfloat16 b, int op) {
  return __float2bfloat16(toroid_combine(__bfloat162float(a), __bfloat162float(b), op));
}
__device__ __forceinline__ int toroid_combine(int a, int b, int op) {
  unsigned ua = static_cast<unsigned>(a), ub = static_cast<unsigned>(b);  // wrapping, as the reference
  return op == TOROID_ADD ? static_cast<int>(ua + ub) : op == TOROID_MUL ? static_cast<int>(ua * ub)
         : op == TOROID_MAX ? (a > b ? a : b) : (a < b ? a : b);
}
__device__ __forceinline__ unsigned long long toroid_combine(unsigned long long a, unsigned long long b, int op) {
  long long sa = static_cast<long long>(a), sb = static_cast<long long>(b);
  return op == TOROID_ADD ? a + b : op == TOROID_MUL ? a * b
         : static_cast<unsigned long long>(op == TOROID_MAX ? (sa > sb ? sa : sb) : (sa < sb ? sa : sb));
}
// v * alpha (index_add's alpha; integral for integer types).
__device__ __forceinline__ float toroid_scale(float v, double a) { return static_cast<float>(v * a); }
__device__ __forceinline__ double toroid_scale(double v, double a) { return v * a; }
__device__ __forceinline__ __half toroid_scale(__half v, double a) { return __float2half(static_cast<float>(__half2float(v) * a)); }
__device__ __forceinline__ __nv_bfloat16 toroid_scale(__nv_bfloat16 v, double a) {
  return __float2bfloat16(static_cast<float>(__bfloat162float(v) * a));
}
__device__ __forceinline__ int toroid_scale(int v, double a) {
  return static_cast<int>(static_cast<unsigned>(v) * static_cast<unsigned>(static_cast<long long>(a)));
}
__device__ __forceinline__ unsigned long long toroid_scale(unsigned long long v, double a) {
  return v * static_cast<unsigned long long>(static_cast<long long>(a));
}

// *p = combine(*p, v) atomically: atomicAdd where the hardware has it, else a CAS loop on the
// element's bits.
template <typename W, typename T>
__device__ void toroid_atomic_cas(T* p, T v, int op) {
  W* wp = reinterpret_cast<W*>(p);
  W old = *wp, assumed;
  do {
    assumed = old;
    T cur, next;
    memcpy(&cur, &assumed, sizeof(T));
    next = toroid_combine(cur, v, op);
    W want;
    memcpy(&want, &next, sizeof(T));
    old = atomicCAS(wp, assumed, want);
  } while (old != assumed);
}
template <typename T>
__device__ __forceinline__ void toroid_atomic(T* p, T v, int op) {
  if (op == TOROID_ADD) {
    atomicAdd(p, v);
  } else if (sizeof(T) == 2) {
    toroid_atomic_cas<unsigned short>(p, v, op);
  } else if (sizeof(T) == 4) {
    toroid_atomic_cas<unsigned int>(p, v, op);
  } else {
    toroid_atomic_cas<unsigned long long>(p, v, op);
  }
}

// scatter, scatter_add, scatter_reduce and index_add along `dim`: for each element e of index
// (sizes il.size, strides il.stride), out at e's coordinates with coordinate `dim` replaced by
// index[e] gets src at e's coordinates (strides sl.stride; all 0 for a scalar), scaled by
// `alpha` (when not 1), stored (TOROID_STORE) or combined atomically; `count` (if set) counts
// each element's contributions. out is contiguous with sizes ol.size (strides ol.stride). An
// index out of [0, size) is recorded as {1, size, index}.
template <typename T>
__device__ void toroid_scatter(T* out, Layout ol, const long long* idx, Layout il, const T* src, Layout sl, int dim,
                               int op, double alpha, int* count, unsigned long long* bad) {
  long long n = 1;
  for (int d = 0; d < il.rank; ++d) n *= il.size[d];
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    long long rest = e, io = 0, so = 0, oo = 0, k = 0;
    long long coord[8];
    for (int d = il.rank - 1; d >= 0; --d) {
      coord[d] = rest % il.size[d];
      rest /= il.size[d];
      io += coord[d] * il.stride[d];
      so += coord[d] * sl.stride[d];
    }
    k = idx[io];
    if (k < 0 || k >= ol.size[dim]) {
      if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
        bad[1] = static_cast<unsigned long long>(ol.size[dim]);
        bad[2] = static_cast<unsigned long long>(k);
      }
      continue;
    }
    for (int d = 0; d < ol.rank; ++d) oo += (d == dim ? k : coord[d]) * ol.stride[d];
    T v = alpha == 1.0 ? src[so] : toroid_scale(src[so], alpha);
    if (op == TOROID_STORE) out[oo] = v;
    else toroid_atomic(out + oo, v, op);
    if (count) atomicAdd(count + oo, 1);
  }
}

// scatter_reduce's mean: each element with contributions divided by their number (and one for
// self when it is included); integers by floor division, as PyTorch.
__device__ __forceinline__ float toroid_mean(float s, long long c) { return static_cast<float>(s / static_cast<double>(c)); }
__device__ __forceinline__ double toroid_mean(double s, long long c) { return s / static_cast<double>(c); }
__device__ __forceinline__ __half toroid_mean(__half s, long long c) { return __float2half(__half2float(s) / static_cast<float>(c)); }
__device__ __forceinline__ __nv_bfloat16 toroid_mean(__nv_bfloat16 s, long long c) {
  return __float2bfloat16(__bfloat162float(s) / static_cast<float>(c));
}
__device__ __forceinline__ long long toroid_floor_div(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ int toroid_mean(int s, long long c) { return static_cast<int>(toroid_floor_div(s, c)); }
__device__ __forceinline__ unsigned long long toroid_mean(unsigned long long s, long long c) {
  return static_cast<unsigned long long>(toroid_floor_div(static_cast<long long>(s), c));
}

#define TOROID_SCATTER(suffix, T)                                                                                  \
  extern "C" __global__ void toroid_scatter_##suffix(T* out, Layout ol, const long long* idx, Layout il, const T* src, \
                                                     Layout sl, int dim, int op, double alpha, int* count,          \
                                                     unsigned long long* bad) {                                    \
    toroid_scatter(out, ol, idx, il, src, sl, dim, op, alpha, count, bad);                                         \
  }                                                                                                                \
  extern "C" __global__ void toroid_mean_##suffix(T* out, long long n, const int* count, int include_self) {        \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) \
      if (count[i] > 0) out[i] = toroid_mean(out[i], count[i] + include_self);                                     \
  }
TOROID_SCATTER(f32, float)
TOROID_SCATTER(f64, double)
TOROID_SCATTER(f16, __half)
TOROID_SCATTER(bf16, __nv_bfloat16)
TOROID_SCATTER(i64, unsigned long long)
TOROID_SCATTER(i32, int)
#endif  // TOROID_DK_SCATTER

#ifdef TOROID_DK_SORT
// sort / topk: each line of a contiguous [outer, len, inner] tensor is sorted by a bitonic
// network over P (a power of two >= len) positions of keys and their positions; padding sorts
// after every element, NaN is the largest value, and equal keys keep the lower position first,
// so the order is the stable one in both directions. Keys: double for floats (exact), int64 for
// integers.
__device__ __forceinline__ bool toroid_isnan(double x) { return x != x; }
__device__ __forceinline__ bool toroid_isnan(long long) { return false; }
template <typename K>
__device__ __forceinline__ bool toroid_before(K a, long long ia, K b, long long ib, long long len, int desc) {
  bool pa = ia >= len, pb = ib >= len;
  if (pa || pb) return pa && pb ? ia < ib : pb;
  bool na = toroid_isnan(a), nb = toroid_isnan(b);
  if (na || nb) return na && nb ? ia < ib : (desc ? na : nb);
  if (a != b) return desc ? a > b : a < b;
  return ia < ib;
}
// Positions i and i ^ j of one line, in the order of the network's step (k, j).
template <typename K>
__device__ __forceinline__ void toroid_compare_swap(K* key, long long* pos, long long i, long long j, long long k,
                                                    long long line_pos, long long len, int desc) {
  long long l = i ^ j;
  if (l <= i) return;
  bool up = ((line_pos + i) & k) == 0;
  K a = key[i], b = key[l];
  long long ia = pos[i], ib = pos[l];
  if (up ? toroid_before(b, ib, a, ia, len, desc) : toroid_before(a, ia, b, ib, len, desc)) {
    key[i] = b;
    key[l] = a;
    pos[i] = ib;
    pos[l] = ia;
  }
}

template <typename K>
__device__ void toroid_sort_load(const void* x, int xt, long long len, long long inner, long long lines, long long P,
                                 K* key, long long* pos) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < lines * P; e += (long long)gridDim.x * blockDim.x) {
    long long line = e / P, j = e % P, o = line / inner, in = line % inner;
    pos[e] = j;
    key[e] = j < len ? toroid_load_acc<K>(x, (o * len + j) * inner + in, xt) : K(0);
  }
}

// One step (k, j) of the network over every line, in global memory (j >= the chunk).
template <typename K>
__device__ void toroid_sort_step(K* key, long long* pos, long long lines, long long P, long long k, long long j,
                                 long long len, int desc) {
  long long half = P / 2;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < lines * half; e += (long long)gridDim.x * blockDim.x) {
    long long line = e / half, t = e % half;  // one thread per pair (i, i + j)
    toroid_compare_swap(key + line * P, pos + line * P, t / j * 2 * j + t % j, j, k, 0, len, desc);
  }
}

// The steps with j < C inside chunks of C = min(P, 2048) positions, in shared memory, one block
// per chunk: with k == 0 the whole network up to k = C (each chunk sorted alternately up and
// down, or each up when `independent`), else the steps j = C/2 .. 1 of step k.
template <typename K>
__device__ void toroid_sort_chunk(K* key, long long* pos, long long P, long long C, long long k_only, long long len,
                                  int desc, int independent) {
  __shared__ K sk[2048];
  __shared__ long long sp[2048];
  long long chunk = blockIdx.x, per_line = P / C, line = chunk / per_line, base = (chunk % per_line) * C;
  K* gk = key + line * P + base;
  long long* gp = pos + line * P + base;
  for (long long i = threadIdx.x; i < C; i += blockDim.x) {
    sk[i] = gk[i];
    sp[i] = gp[i];
  }
  __syncthreads();
  for (long long k = k_only ? k_only : 2; k <= (k_only ? k_only : C); k <<= 1)
    for (long long j = (k_only ? C : k) >> 1; j > 0; j >>= 1) {
      for (long long t = threadIdx.x; t < C / 2; t += blockDim.x)  // one thread per pair (i, i + j)
        toroid_compare_swap(sk, sp, t / j * 2 * j + t % j, j, k, independent ? 0 : base, len, desc);
      __syncthreads();
    }
  for (long long i = threadIdx.x; i < C; i += blockDim.x) {
    gk[i] = sk[i];
    gp[i] = sp[i];
  }
}

// topk's selection: of each line's chunks of C (each sorted), the first k of every chunk, into
// lines of P2 positions (padding after them).
template <typename K>
__device__ void toroid_select_compact(const K* key, const long long* pos, long long lines, long long P, long long C,
                                      long long k, K* key2, long long* pos2, long long P2, long long len) {
  long long keep = P / C * k;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < lines * P2; e += (long long)gridDim.x * blockDim.x) {
    long long line = e / P2, j = e % P2;
    if (j < keep) {
      long long from = line * P + j / k * C + j % k;
      key2[e] = key[from];
      pos2[e] = pos[from];
    } else {
      key2[e] = K(0);
      pos2[e] = len + j;
    }
  }
}

#define TOROID_SORT(suffix, K)                                                                                     \
  extern "C" __global__ void toroid_sort_load_##suffix(const void* x, int xt, long long len, long long inner,      \
                                                       long long lines, long long P, K* key, long long* pos) {     \
    toroid_sort_load(x, xt, len, inner, lines, P, key, pos);                                                       \
  }                                                                                                                \
  extern "C" __global__ void toroid_sort_step_##suffix(K* key, long long* pos, long long lines, long long P,        \
                                                       long long k, long long j, long long len, int desc) {        \
    toroid_sort_step(key, pos, lines, P, k, j, len, desc);                                                         \
  }                                                                                                                \
  extern "C" __global__ void toroid_sort_chunk_##suffix(K* key, long long* pos, long long P, long long C,          \
                                                        long long k_only, long long len, int desc, int indep) {    \
    toroid_sort_chunk(key, pos, P, C, k_only, len, desc, indep);                                                   \
  }                                                                                                                \
  extern "C" __global__ void toroid_select_compact_##suffix(const K* key, const long long* pos, long long lines,   \
                                                            long long P, long long C, long long k, K* key2,       \
                                                            long long* pos2, long long P2, long long len) {       \
    toroid_select_compact(key, pos, lines, P, C, k, key2, pos2, P2, len);                                          \
  }
TOROID_SORT(real, double)
TOROID_SORT(int, long long)

// The first `k` of each sorted line: values copied exactly from x (`esize` bytes each) and the
// positions, into contiguous [outer, k, inner] results.
extern "C" __global__ void toroid_sort_store(const unsigned char* x, int esize, long long len, long long inner,
                                             long long lines, long long P, long long k, const long long* pos,
                                             unsigned char* values, long long* indices) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < lines * k; e += (long long)gridDim.x * blockDim.x) {
    long long line = e / k, j = e % k, o = line / inner, in = line % inner;
    long long p = pos[line * P + j], at = (o * len + p) * inner + in, to = (o * k + j) * inner + in;
    indices[to] = p;
    for (int b = 0; b < esize; ++b) values[to * esize + b] = x[at * esize + b];
  }
}

#endif  // TOROID_DK_SORT

#ifdef TOROID_DK_SCATTER
// The deterministic scatters: each contribution's flat position in out (LLONG_MAX for an index
// out of range, recorded as above), sorted stably; then one thread per run of equal positions
// combines its contributions in their original order (in double for floats, wrapping int64 for
// integers), so the result never depends on scheduling. `mean` divides by the run's length
// (plus one with `include_self`); TOROID_STORE keeps the last contribution.
extern "C" __global__ void toroid_scatter_keys(Layout ol, const long long* idx, Layout il, int dim, long long* keys,
                                               unsigned long long* bad) {
  long long n = 1;
  for (int d = 0; d < il.rank; ++d) n *= il.size[d];
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
    long long rest = e, io = 0, oo = 0;
    long long coord[8];
    for (int d = il.rank - 1; d >= 0; --d) {
      coord[d] = rest % il.size[d];
      rest /= il.size[d];
      io += coord[d] * il.stride[d];
    }
    long long k = idx[io];
    if (k < 0 || k >= ol.size[dim]) {
      if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
        bad[1] = static_cast<unsigned long long>(ol.size[dim]);
        bad[2] = static_cast<unsigned long long>(k);
      }
      keys[e] = 0x7fffffffffffffffll;
      continue;
    }
    for (int d = 0; d < ol.rank; ++d) oo += (d == dim ? k : coord[d]) * ol.stride[d];
    keys[e] = oo;
  }
}

extern "C" __global__ void toroid_scatter_segments(void* out, int t, const long long* key, const long long* pos,
                                                   long long n, Layout il, const void* src, Layout sl, int op,
                                                   double alpha, int mean, int include_self) {
  const bool real = t >= 6;
  for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n; p += (long long)gridDim.x * blockDim.x) {
    long long at = key[p];
    if (at == 0x7fffffffffffffffll || (p > 0 && key[p - 1] == at)) continue;
    double acc = real ? toroid_load_real(out, at, t) : 0.0;
    long long iacc = real ? 0 : toroid_load_int(out, at, t);
    long long q = p;
    for (; q < n && key[q] == at; ++q) {
      long long rest = pos[q], so = 0;
      for (int d = il.rank - 1; d >= 0; --d) {
        so += (rest % il.size[d]) * sl.stride[d];
        rest /= il.size[d];
      }
      if (real) {
        double v = toroid_load_real(src, so, t) * alpha;
        acc = op == TOROID_STORE ? v : op == TOROID_ADD ? acc + v : op == TOROID_MUL ? acc * v : toroid_pick(acc, v, op);
      } else {
        long long v = toroid_load_int(src, so, t) * static_cast<long long>(alpha);
        unsigned long long ua = static_cast<unsigned long long>(iacc), uv = static_cast<unsigned long long>(v);
        iacc = op == TOROID_STORE ? v
               : op == TOROID_ADD ? static_cast<long long>(ua + uv)
               : op == TOROID_MUL ? static_cast<long long>(ua * uv)
               : op == TOROID_MAX ? (iacc > v ? iacc : v) : (iacc < v ? iacc : v);
      }
    }
    if (mean) {
      long long c = q - p + include_self;
      if (real) acc /= static_cast<double>(c);
      else iacc = toroid_floor_div(iacc, c);
    }
    toroid_store(out, at, t, acc, iacc);
  }
}

// index_put's deterministic form over rows: the n row indices (wrapped, out of range recorded
// and keyed LLONG_MAX) sorted stably, then one thread per (run of equal rows, column) combines
// the run's value rows in order (in double for floats; without accumulate the last wins).
extern "C" __global__ void toroid_put_keys(const long long* idx, long long n, long long rows, long long* keys,
                                           unsigned long long* bad) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n; j += (long long)gridDim.x * blockDim.x) {
    long long r = idx[j] < 0 ? idx[j] + rows : idx[j];
    if (r < 0 || r >= rows) {
      if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
        bad[1] = static_cast<unsigned long long>(rows);
        bad[2] = static_cast<unsigned long long>(idx[j]);
      }
      r = 0x7fffffffffffffffll;
    }
    keys[j] = r;
  }
}

extern "C" __global__ void toroid_put_segments(void* out, int t, const long long* key, const long long* pos, long long n,
                                               long long row, const void* values, int accumulate) {
  const bool real = t >= 6;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n * row; e += (long long)gridDim.x * blockDim.x) {
    long long p = e / row, c = e % row, r = key[p];
    if (r == 0x7fffffffffffffffll || (p > 0 && key[p - 1] == r)) continue;
    long long at = r * row + c;
    double acc = real ? toroid_load_real(out, at, t) : 0.0;
    long long iacc = real ? 0 : toroid_load_int(out, at, t);
    for (long long q = p; q < n && key[q] == r; ++q) {
      long long from = pos[q] * row + c;
      if (real) acc = accumulate ? acc + toroid_load_real(values, from, t) : toroid_load_real(values, from, t);
      else iacc = accumulate ? static_cast<long long>(static_cast<unsigned long long>(iacc) +
                                                      static_cast<unsigned long long>(toroid_load_int(values, from, t)))
                             : toroid_load_int(values, from, t);
    }
    toroid_store(out, at, t, acc, iacc);
  }
}

#define TOROID_INDEX_PUT(name, T)                                                                            \
  extern "C" __global__ void name(T* out, long long rows, long long row, const long long* idx, long long n, \
                                  const T* v, int acc, unsigned long long* bad) {                          \
    toroid_put(out, rows, row, idx, n, v, acc, bad);                                                       \
  }
TOROID_INDEX_PUT(toroid_index_put_f32, float)
TOROID_INDEX_PUT(toroid_index_put_f64, double)
TOROID_INDEX_PUT(toroid_index_put_f16, __half)
TOROID_INDEX_PUT(toroid_index_put_bf16, __nv_bfloat16)
TOROID_INDEX_PUT(toroid_index_put_i64, unsigned long long)
TOROID_INDEX_PUT(toroid_index_put_i32, int)
#endif  // TOROID_DK_SCATTER

#ifdef TOROID_DK_NONZERO
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

// dst (contiguous) = src (strided: sizes and element strides of up to 8 dims), `esize` bytes
// per element.
extern "C" __global__ void toroid_contiguous(const unsigned char* src, unsigned char* dst, long long n, int esize,
                                             Layout l) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    long long rest = i, at = 0;
    for (int d = l.rank - 1; d >= 0; --d) {
      at += (rest % l.size[d]) * l.stride[d];
      rest /= l.size[d];
    }
    switch (esize) {
      case 1: dst[i] = src[at]; break;
      case 2: reinterpret_cast<unsigned short*>(dst)[i] = reinterpret_cast<const unsigned short*>(src)[at]; break;
      case 4: reinterpret_cast<unsigned int*>(dst)[i] = reinterpret_cast<const unsigned int*>(src)[at]; break;
      default:
        reinterpret_cast<unsigned long long*>(dst)[i] = reinterpret_cast<const unsigned long long*>(src)[at];
        break;
    }
  }
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
#endif  // TOROID_DK_NONZERO
)";

struct Dims {
  long long size[kMaxNonzeroDims];
  int rank;
};

// The source compiles in families (TOROID_DK_<FAMILY> defined), each on its first use: a model
// with one cumsum compiles the scans (a fraction of a second), not every device kernel (3 s).
enum class Family { Nonzero, Scan, Scatter, Sort };
constexpr const char* kFamilies[] = {"NONZERO", "SCAN", "SCATTER", "SORT"};

struct Kernels {
  std::unique_ptr<Module> module[4];  // by Family
  Function count = nullptr, coordinates = nullptr;
  Function contiguous = nullptr;
  Function scan[2][2] = {};  // [prod][real]
  Function put[10] = {};     // by DType, where atomics take it
  Function scatter[10] = {}, mean[10] = {};
  Function sort_load[2] = {}, sort_step[2] = {}, sort_chunk[2] = {}, select_compact[2] = {};  // [real]
  Function sort_store = nullptr;
  Function scatter_keys = nullptr, scatter_segments = nullptr, put_keys = nullptr, put_segments = nullptr;
};

void load_family(Kernels& k, Family f) {
  NvrtcOptions o;
  o.arch = device().arch();
  std::string name = std::string("toroid_device_kernels_") + kFamilies[static_cast<int>(f)];
  Cubin c = compile_cubin({device_kernels_source(kFamilies[static_cast<int>(f)]), name}, o);
  auto& m = k.module[static_cast<int>(f)];
  m = std::make_unique<Module>(c.image, name);
  switch (f) {
    case Family::Nonzero:
      k.contiguous = m->function("toroid_contiguous");
      k.count = m->function("toroid_count_nonzero");
      k.coordinates = m->function("toroid_nonzero_coordinates");
      break;
    case Family::Scan:
      k.scan[0][0] = m->function("toroid_cumsum_int");
      k.scan[0][1] = m->function("toroid_cumsum_real");
      k.scan[1][0] = m->function("toroid_cumprod_int");
      k.scan[1][1] = m->function("toroid_cumprod_real");
      break;
    case Family::Scatter: {
      const std::pair<DType, const char*> types[] = {
          {DType::Float32, "f32"}, {DType::Float64, "f64"}, {DType::Float16, "f16"},
          {DType::BFloat16, "bf16"}, {DType::Int64, "i64"}, {DType::Int32, "i32"}};
      for (const auto& [d, suffix] : types) {
        k.put[static_cast<int>(d)] = m->function(std::string("toroid_index_put_") + suffix);
        k.scatter[static_cast<int>(d)] = m->function(std::string("toroid_scatter_") + suffix);
        k.mean[static_cast<int>(d)] = m->function(std::string("toroid_mean_") + suffix);
      }
      k.scatter_keys = m->function("toroid_scatter_keys");
      k.scatter_segments = m->function("toroid_scatter_segments");
      k.put_keys = m->function("toroid_put_keys");
      k.put_segments = m->function("toroid_put_segments");
      break;
    }
    case Family::Sort:
      for (int real = 0; real < 2; ++real) {
        std::string suffix = real ? "real" : "int";
        k.sort_load[real] = m->function("toroid_sort_load_" + suffix);
        k.sort_step[real] = m->function("toroid_sort_step_" + suffix);
        k.sort_chunk[real] = m->function("toroid_sort_chunk_" + suffix);
        k.select_compact[real] = m->function("toroid_select_compact_" + suffix);
      }
      k.sort_store = m->function("toroid_sort_store");
      break;
  }
}

// The kernels with family f's loaded (each family's fields are written once, under its flag).
const Kernels& kernels(Family f) {
  static Kernels k;
  static std::once_flag once[4];
  std::call_once(once[static_cast<int>(f)], [f] { load_family(k, f); });
  return k;
}

// A strided tensor's sizes and element strides as the kernels take them (at most 8 dims).
struct Layout {
  long long size[kMaxNonzeroDims];
  long long stride[kMaxNonzeroDims];
  int rank;
};

Layout layout_of(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  TOROID_CHECK(sizes.size() <= kMaxNonzeroDims && sizes.size() == strides.size(), "a layout of more than 8 dims");
  Layout l{};
  l.rank = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    l.size[d] = sizes[d];
    l.stride[d] = strides[d];
  }
  return l;
}

}  // namespace

std::string device_kernels_source(const std::string& family) {
  std::string defines;
  for (const char* f : kFamilies)
    if (family.empty() || family == f) defines += std::string("#define TOROID_DK_") + f + " 1\n";
  TOROID_CHECK(!defines.empty(), "no device-kernel family " + family);
  return defines + kSource;
}

int64_t count_nonzero(const NonzeroInput& x, Stream s) {
  const Kernels& k = kernels(Family::Nonzero);
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
  const Kernels& k = kernels(Family::Nonzero);
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

void copy_contiguous(const void* src, int esize, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                     void* dst, Stream s) {
  TOROID_CHECK(sizes.size() <= kMaxNonzeroDims && sizes.size() == strides.size(), "a strided copy of more than 8 dims");
  int64_t n = 1;
  for (int64_t x : sizes) n *= x;
  if (n == 0) return;
  Layout l = layout_of(sizes, strides);
  long long count = n;
  void* args[] = {&src, &dst, &count, &esize, &l};
  LaunchDims dims;
  dims.block_x = 256;
  dims.grid_x = static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, int64_t(device().sm_count) * 8));
  launch(kernels(Family::Nonzero).contiguous, dims, args, s, "toroid_contiguous");
}

bool scan_supported(DType x, DType out) {
  auto code = [](DType d) { return static_cast<int>(d); };
  return code(x) <= code(DType::Float64) && code(out) <= code(DType::Float64);
}

void scan(bool prod, const void* x, DType xt, void* out, DType ot, int64_t outer, int64_t len, int64_t inner, Stream s) {
  if (outer * inner == 0 || len == 0) return;
  TOROID_CHECK(scan_supported(xt, ot), "a scan on the device of an unsupported dtype");
  const Kernels& k = kernels(Family::Scan);
  bool real = is_floating(ot);
  int xc = static_cast<int>(xt), oc = static_cast<int>(ot);
  long long o = outer, l = len, in = inner;
  void* args[] = {&x, &xc, &out, &oc, &o, &l, &in};
  LaunchDims dims;
  dims.block_x = 512;  // 4,096 elements of a line per step
  dims.grid_x = static_cast<unsigned>(std::clamp<int64_t>(outer * inner, 1, int64_t(device().sm_count) * 4));
  launch(k.scan[prod ? 1 : 0][real ? 1 : 0], dims, args, s, prod ? "toroid_cumprod" : "toroid_cumsum");
}

bool index_put_supported(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16 ||
         t == DType::Int64 || t == DType::Int32;
}

void index_put_rows(void* out, DType t, int64_t rows, int64_t row, const int64_t* idx, int64_t n, const void* values,
                    bool accumulate, uint64_t* record, Stream s) {
  TOROID_CHECK(index_put_supported(t), "index_put on the device of an unsupported dtype");
  TOROID_CHECK(record != nullptr, "index_put on the device needs an error record");
  if (n == 0 || row == 0) return;
  const Kernels& k = kernels(Family::Scatter);
  long long r = rows, w = row, cnt = n;
  int acc = accumulate ? 1 : 0;
  void* flag = record;
  void* args[] = {&out, &r, &w, &idx, &cnt, &values, &acc, &flag};
  LaunchDims dims;
  dims.block_x = 256;
  dims.grid_x = static_cast<unsigned>(std::clamp<int64_t>((n * row + 255) / 256, 1, int64_t(device().sm_count) * 8));
  launch(k.put[static_cast<int>(t)], dims, args, s, "toroid_index_put");
}

static LaunchDims grid_for(int64_t n, int64_t per_sm = 8) {
  LaunchDims dims;
  dims.block_x = 256;
  dims.grid_x = static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, int64_t(device().sm_count) * per_sm));
  return dims;
}

// A scatter's contributions (the index's elements) and its three layouts, checked.
struct ScatterShape {
  int64_t n = 1;
  Layout ol, il, sl;
  explicit ScatterShape(const ScatterArgs& a) {
    TOROID_CHECK(index_put_supported(a.dtype), "scatter on the device of an unsupported dtype");
    TOROID_CHECK(a.record != nullptr, "scatter on the device needs an error record");
    for (int64_t x : a.index_sizes) n *= x;
    ol = layout_of(a.out_sizes, a.out_strides);
    il = layout_of(a.index_sizes, a.index_strides);
    sl = layout_of(a.index_sizes, a.src_strides);
  }
};

void index_put_rows_deterministic(void* out, DType t, int64_t rows, int64_t row, const int64_t* idx, int64_t n,
                                  const void* values, bool accumulate, uint64_t* record, Stream s) {
  TOROID_CHECK(index_put_supported(t), "index_put on the device of an unsupported dtype");
  TOROID_CHECK(record != nullptr, "index_put on the device needs an error record");
  if (n == 0 || row == 0) return;
  const Kernels& k = kernels(Family::Scatter);
  auto& alloc = DeviceAllocator::global();
  DeviceMemory keys = alloc.allocate(static_cast<size_t>(n) * 8, s), sorted = alloc.allocate(static_cast<size_t>(n) * 8, s),
               pos = alloc.allocate(static_cast<size_t>(n) * 8, s);
  long long cnt = n, r = rows, w = row;
  void* kp = keys->ptr;
  void* rec = record;
  void* key_args[] = {&idx, &cnt, &r, &kp, &rec};
  launch(k.put_keys, grid_for(n), key_args, s, "toroid_put_keys");
  sort_lines(keys->ptr, DType::Int64, 1, n, 1, n, false, sorted->ptr, static_cast<int64_t*>(pos->ptr), s);
  int code = static_cast<int>(t), acc = accumulate ? 1 : 0;
  void* sk = sorted->ptr;
  void* pp = pos->ptr;
  void* seg_args[] = {&out, &code, &sk, &pp, &cnt, &w, &values, &acc};
  launch(k.put_segments, grid_for(n * row), seg_args, s, "toroid_put_segments");
}

void scatter_elements(const ScatterArgs& a, Stream s) {
  ScatterShape sh(a);
  if (sh.n == 0) return;
  int64_t n = sh.n;
  Layout ol = sh.ol, il = sh.il, sl = sh.sl;
  const Kernels& k = kernels(Family::Scatter);
  void* out = a.out;
  const void* idx = a.index;
  const void* src = a.src;
  int dim = static_cast<int>(a.dim), op = static_cast<int>(a.op);
  double alpha = a.alpha;
  void* count = a.count;
  void* rec = a.record;
  void* args[] = {&out, &ol, &idx, &il, &src, &sl, &dim, &op, &alpha, &count, &rec};
  launch(k.scatter[static_cast<int>(a.dtype)], grid_for(n), args, s, a.op == ScatterOp::Store ? "toroid_scatter" : "toroid_scatter_combine");
}

void scatter_deterministic(const ScatterArgs& a, bool mean, bool include_self, Stream s) {
  ScatterShape sh(a);
  if (sh.n == 0) return;
  int64_t n = sh.n;
  Layout ol = sh.ol, il = sh.il, sl = sh.sl;
  const Kernels& k = kernels(Family::Scatter);
  auto& alloc = DeviceAllocator::global();
  DeviceMemory keys = alloc.allocate(static_cast<size_t>(n) * 8, s), sorted = alloc.allocate(static_cast<size_t>(n) * 8, s),
               pos = alloc.allocate(static_cast<size_t>(n) * 8, s);
  const void* idx = a.index;
  int dim = static_cast<int>(a.dim);
  void* kp = keys->ptr;
  void* rec = a.record;
  void* key_args[] = {&ol, &idx, &il, &dim, &kp, &rec};
  launch(k.scatter_keys, grid_for(n), key_args, s, "toroid_scatter_keys");
  sort_lines(keys->ptr, DType::Int64, 1, n, 1, n, false, sorted->ptr, static_cast<int64_t*>(pos->ptr), s);
  void* out = a.out;
  int t = static_cast<int>(a.dtype), op = static_cast<int>(a.op), m = mean ? 1 : 0, self = include_self ? 1 : 0;
  void* sk = sorted->ptr;
  void* pp = pos->ptr;
  long long count = n;
  const void* src = a.src;
  double alpha = a.alpha;
  void* seg_args[] = {&out, &t, &sk, &pp, &count, &il, &src, &sl, &op, &alpha, &m, &self};
  launch(k.scatter_segments, grid_for(n), seg_args, s, "toroid_scatter_segments");
}

void scatter_mean(void* out, DType t, int64_t n, const int32_t* count, bool include_self, Stream s) {
  TOROID_CHECK(index_put_supported(t), "scatter_reduce on the device of an unsupported dtype");
  if (n == 0) return;
  long long total = n;
  int self = include_self ? 1 : 0;
  void* args[] = {&out, &total, &count, &self};
  launch(kernels(Family::Scatter).mean[static_cast<int>(t)], grid_for(n), args, s, "toroid_mean");
}

bool sort_supported(DType t) { return t != DType::Bool && static_cast<int>(t) <= static_cast<int>(DType::Float64); }

namespace {

// Keys and positions of `lines` lines of P each, in device memory.
struct SortBuffers {
  DeviceMemory key, pos;
  long long P = 0;
  SortBuffers(long long lines, long long p, Stream s)
      : key(DeviceAllocator::global().allocate(static_cast<size_t>(lines * p) * 8, s)),
        pos(DeviceAllocator::global().allocate(static_cast<size_t>(lines * p) * 8, s)), P(p) {}
};

// Sorts each chunk of C positions of `b` (C a power of two dividing P): alternately up and down
// as a bitonic network's first stage, or each up when `independent`.
void sort_chunks(const Kernels& ks, int real, SortBuffers& b, long long lines, long long C, long long len, int desc,
                 int independent, long long k_only, Stream s) {
  LaunchDims chunks;
  chunks.block_x = static_cast<unsigned>(std::clamp<long long>(C / 2, 1, 1024));  // a thread per pair
  chunks.grid_x = static_cast<unsigned>(lines * b.P / C);
  void* kp = b.key->ptr;
  void* pp = b.pos->ptr;
  void* args[] = {&kp, &pp, &b.P, &C, &k_only, &len, &desc, &independent};
  launch(ks.sort_chunk[real], chunks, args, s, "toroid_sort_chunk");
}

}  // namespace

void sort_lines(const void* x, DType t, int64_t outer, int64_t len, int64_t inner, int64_t k, bool descending,
                void* values, int64_t* indices, Stream s) {
  TOROID_CHECK(sort_supported(t), "sort on the device of an unsupported dtype");
  int64_t lines = outer * inner;
  if (lines == 0 || k == 0) return;
  const Kernels& ks = kernels(Family::Sort);
  int real = is_floating(t) ? 1 : 0;
  constexpr long long kChunk = 2048;
  long long P = 1;
  while (P < len) P <<= 1;
  long long L = len, in = inner, nl = lines;
  int xt = static_cast<int>(t), desc = descending ? 1 : 0;
  // A few of a long line (topk): sort chunks, keep each one's first k, and again until one
  // chunk holds them; else the whole network over P positions.
  bool select = len > kChunk && k <= kChunk / 2;
  if (select) P = (len + kChunk - 1) / kChunk * kChunk;
  auto b = std::make_unique<SortBuffers>(nl, P, s);
  void* kp = b->key->ptr;
  void* pp = b->pos->ptr;
  void* load_args[] = {&x, &xt, &L, &in, &nl, &P, &kp, &pp};
  launch(ks.sort_load[real], grid_for(nl * P), load_args, s, "toroid_sort_load");
  if (select) {
    sort_chunks(ks, real, *b, nl, kChunk, L, desc, 1, 0, s);
    for (;;) {
      long long keep = b->P / kChunk * k, P2 = keep > kChunk ? (keep + kChunk - 1) / kChunk * kChunk : 1;
      while (keep <= kChunk && P2 < keep) P2 <<= 1;
      auto next = std::make_unique<SortBuffers>(nl, P2, s);
      long long C = kChunk, kk = k, P1 = b->P;
      const void* ck = b->key->ptr;
      const void* cp = b->pos->ptr;
      void* nk = next->key->ptr;
      void* np = next->pos->ptr;
      void* args[] = {&ck, &cp, &nl, &P1, &C, &kk, &nk, &np, &P2, &L};
      launch(ks.select_compact[real], grid_for(nl * P2), args, s, "toroid_select_compact");
      b = std::move(next);
      sort_chunks(ks, real, *b, nl, std::min(P2, kChunk), L, desc, 1, 0, s);
      if (P2 <= kChunk) break;
    }
  } else {
    long long C = std::min(P, kChunk);
    sort_chunks(ks, real, *b, nl, C, L, desc, 0, 0, s);
    for (long long kk = C << 1; kk <= P; kk <<= 1) {
      for (long long j = kk >> 1; j >= C; j >>= 1) {
        void* step[] = {&kp, &pp, &nl, &P, &kk, &j, &L, &desc};
        launch(ks.sort_step[real], grid_for(nl * P / 2), step, s, "toroid_sort_step");
      }
      sort_chunks(ks, real, *b, nl, C, L, desc, 0, kk, s);
    }
  }
  int esize = static_cast<int>(dtype_size(t));
  long long kk = k, Pout = b->P;
  const void* xp = x;
  void* pos_out = b->pos->ptr;
  void* store[] = {&xp, &esize, &L, &in, &nl, &Pout, &kk, &pos_out, &values, &indices};
  launch(ks.sort_store, grid_for(lines * k), store, s, "toroid_sort_store");
}

}  // namespace toroid::runtime::cuda
