// The start of every generated CUDA translation unit (embedded into toroid at build time, see
// src/codegen/CMakeLists.txt; cuda_prelude() returns it): integer types without the standard
// library (NVRTC has none), 16-bit float conversion, Python-style integer division,
// NaN-propagating max/min, 16-byte vector loads and stores, warp and block reductions, and the
// index-error record.
#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(x) x##LL
#define INT64_MIN (-INT64_C(9223372036854775807) - 1)
#else
#include <cstdint>
#endif

#define T_DEV __device__ __forceinline__

// Every entry starts here. A kernel launched as a programmatic dependent (the runtime does so on
// compute capability 9.0 and newer) may start before the stream's previous kernel has finished:
// it waits for that kernel's completion and its memory before any access of its own, then lets
// the next kernel's blocks be scheduled. Its blocks thus wait resident on the multiprocessors the
// previous kernel's last blocks leave idle, and start the moment it completes. Elsewhere (an
// ordinary launch, older devices) both are no-ops.
T_DEV void t_wait_on_stream() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
template <class T> struct t_limits;
template <> struct t_limits<float> {
  static T_DEV float lowest() { return -__int_as_float(0x7f800000); }
  static T_DEV float highest() { return __int_as_float(0x7f800000); }
};
template <> struct t_limits<double> {
  static T_DEV double lowest() { return -__longlong_as_double(0x7ff0000000000000LL); }
  static T_DEV double highest() { return __longlong_as_double(0x7ff0000000000000LL); }
};
template <> struct t_limits<bool> {
  static T_DEV bool lowest() { return false; }
  static T_DEV bool highest() { return true; }
};
template <> struct t_limits<uint8_t> {
  static T_DEV uint8_t lowest() { return 0; }
  static T_DEV uint8_t highest() { return 255; }
};
template <> struct t_limits<int8_t> {
  static T_DEV int8_t lowest() { return -128; }
  static T_DEV int8_t highest() { return 127; }
};
template <> struct t_limits<int16_t> {
  static T_DEV int16_t lowest() { return -32768; }
  static T_DEV int16_t highest() { return 32767; }
};
template <> struct t_limits<int32_t> {
  static T_DEV int32_t lowest() { return -2147483647 - 1; }
  static T_DEV int32_t highest() { return 2147483647; }
};
template <> struct t_limits<int64_t> {
  static T_DEV int64_t lowest() { return INT64_MIN; }
  static T_DEV int64_t highest() { return INT64_C(9223372036854775807); }
};
T_DEV float t_nan_f() { return __int_as_float(0x7fc00000); }
T_DEV double t_nan_d() { return __longlong_as_double(0x7ff8000000000000LL); }

// A float symbol's value: its bits travel as an int64 kernel parameter.
T_DEV double t_f64_from_bits(int64_t bits) { return __longlong_as_double(bits); }
// bf16 and f16 storage: bit patterns converted with the hardware's cvt (round to nearest even),
// rather than cuda_bf16.h and cuda_fp16.h, which take most of NVRTC's time to parse.
struct __align__(2) t_bf16 { unsigned short bits; };
struct __align__(2) t_f16 { unsigned short bits; };
T_DEV float t_to_float(t_bf16 v) { return __uint_as_float(static_cast<unsigned int>(v.bits) << 16); }
T_DEV float t_to_float(t_f16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
T_DEV t_bf16 t_to_bf16(float f) {
  t_bf16 r;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    r.bits = static_cast<unsigned short>((u >> 16) | 0x40u);  // NaN stays a (quiet) NaN
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    r.bits = static_cast<unsigned short>(u >> 16);
  }
#endif
  return r;
}
T_DEV t_f16 t_to_f16(float f) {
  t_f16 r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
  return r;
}
T_DEV float t_round_bf16(float f) { return t_to_float(t_to_bf16(f)); }
T_DEV float t_round_f16(float f) { return t_to_float(t_to_f16(f)); }

// Dividing by -1 gives -a, wrapping for the most negative value, with remainder 0 (as on the CPU).
template <class I> T_DEV I t_neg_wrap(I a) { return static_cast<I>(0ull - static_cast<unsigned long long>(a)); }
template <class I> T_DEV I t_floordiv(I a, I b) {
  if (b == 0) return 0;
  if (b == -1) return t_neg_wrap(a);
  I q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
template <class I> T_DEV I t_mod(I a, I b) {
  if (b == 0 || b == -1) return 0;
  I r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class I> T_DEV I t_imin(I a, I b) { return a < b ? a : b; }
template <class I> T_DEV I t_imax(I a, I b) { return a > b ? a : b; }
template <class I> T_DEV I t_truncdiv(I a, I b) { return b == 0 ? I(0) : b == -1 ? t_neg_wrap(a) : I(a / b); }
template <class I> T_DEV I t_fmod(I a, I b) { return b == 0 || b == -1 ? I(0) : I(a % b); }
template <class T> T_DEV T t_floordiv_f(T a, T b) {
  if (b == 0) return a / b;
  T m = fmod(a, b);
  T d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
  if (d == 0) return copysign(T(0), a / b);
  T f = floor(d);
  if (d - f > T(0.5)) f += 1;
  return f;
}
template <class T> T_DEV T t_remainder_f(T a, T b) {
  T r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class T> T_DEV T t_maximum(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <class T> T_DEV T t_minimum(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <class T> T_DEV T t_relu(T a) { return a < T(0) ? T(0) : a; }
template <class T> T_DEV T t_sign(T a) { return static_cast<T>((T(0) < a) - (a < T(0))); }
template <class T> T_DEV bool t_isinf(T a) { return a == t_limits<T>::highest() || a == t_limits<T>::lowest(); }
template <class T> T_DEV T t_ipow(T base, T exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  T r = 1;
  while (exp) {
    if (exp & 1) r *= base;
    base *= base;
    exp >>= 1;
  }
  return r;
}
T_DEV float t_sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }
T_DEV double t_sigmoid(double a) { return 1.0 / (1.0 + exp(-a)); }

// Element conversions between storage and compute types.
T_DEV float t_load(const t_bf16& x) { return t_to_float(x); }
T_DEV float t_load(const t_f16& x) { return t_to_float(x); }
template <class T> T_DEV T t_load(const T& x) { return x; }
template <class S> struct t_store;
template <> struct t_store<t_bf16> {
  template <class V> static T_DEV t_bf16 from(V v) { return t_to_bf16(static_cast<float>(v)); }
};
template <> struct t_store<t_f16> {
  template <class V> static T_DEV t_f16 from(V v) { return t_to_f16(static_cast<float>(v)); }
};
template <class S> struct t_store {
  template <class V> static T_DEV S from(V v) { return static_cast<S>(v); }
};

// N elements at p (16-byte aligned when N * sizeof(T) is a multiple of 16), in 16- or 8-byte
// transactions; through the read-only cache (NC) only for storages the kernel never writes.
template <class V, bool NC> T_DEV V t_ld(const V* p) {
  if constexpr (NC) return __ldg(p);
  else return *p;
}
template <int N, bool NC, class T> T_DEV void t_vload(T (&dst)[N], const T* __restrict__ p) {
  constexpr int bytes = N * int(sizeof(T));
  if constexpr (bytes % 16 == 0) {
#pragma unroll
    for (int k = 0; k < bytes / 16; ++k) reinterpret_cast<uint4*>(dst)[k] = t_ld<uint4, NC>(reinterpret_cast<const uint4*>(p) + k);
  } else if constexpr (bytes % 8 == 0) {
#pragma unroll
    for (int k = 0; k < bytes / 8; ++k) reinterpret_cast<uint2*>(dst)[k] = t_ld<uint2, NC>(reinterpret_cast<const uint2*>(p) + k);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) dst[k] = p[k];
  }
}
// A row kernel's slot of 16-bit values: one 16-byte group kept as four 32-bit registers (an
// array of eight 16-bit values takes eight), lanes read and written by position.
template <bool NC, class T> T_DEV void t_vload_slot(uint4& dst, const T* __restrict__ p) {
  dst = t_ld<uint4, NC>(reinterpret_cast<const uint4*>(p));
}
template <class T> T_DEV void t_vstore_slot(T* __restrict__ p, const uint4& s) { *reinterpret_cast<uint4*>(p) = s; }
template <class T> T_DEV T t_slot_get(const uint4& s, int j) {
  static_assert(sizeof(T) == 2, "16-bit slots");
  const unsigned w = (&s.x)[j / 2];
  const unsigned short b = static_cast<unsigned short>(j % 2 ? w >> 16 : w & 0xffffu);
  T r;
  memcpy(&r, &b, 2);
  return r;
}
template <class T> T_DEV void t_slot_set(uint4& s, int j, T v) {
  static_assert(sizeof(T) == 2, "16-bit slots");
  unsigned short b;
  memcpy(&b, &v, 2);
  unsigned& w = (&s.x)[j / 2];
  w = j % 2 ? (w & 0xffffu) | (unsigned(b) << 16) : (w & 0xffff0000u) | b;
}
template <int N, class T> T_DEV void t_vstore(T* __restrict__ p, const T (&src)[N]) {
  constexpr int bytes = N * int(sizeof(T));
  if constexpr (bytes % 16 == 0) {
#pragma unroll
    for (int k = 0; k < bytes / 16; ++k) reinterpret_cast<uint4*>(p)[k] = reinterpret_cast<const uint4*>(src)[k];
  } else if constexpr (bytes % 8 == 0) {
#pragma unroll
    for (int k = 0; k < bytes / 8; ++k) reinterpret_cast<uint2*>(p)[k] = reinterpret_cast<const uint2*>(src)[k];
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = src[k];
  }
}
template <class T> T_DEV bool t_aligned16(const T* p) { return (reinterpret_cast<uint64_t>(p) & 15) == 0; }

// Warp and block reductions. Every thread of the block calls t_block_reduce with the same
// function; every thread gets the result. Their shared memory holds two halves of 16 partials
// (a row's block has at most 512 threads, 16 warps): a site that reduces again (a block's next
// row) passes the other half (t_half, flipped each row), so one barrier a reduction suffices: a
// warp writes a half again only after passing the next row's barrier, which every warp reaches
// after reading this row's partials (checked on an H200 with blocks looping over 1000 rows,
// bench/RESULTS.md 41a; time unchanged there, a barrier fewer where rows loop). A row of
// Lanes < 32 threads (blockDim.x == Lanes, blockDim.y rows a block) is a segment of its warp:
// its shuffles and barriers name only its own lanes, so a segment with no row (past the grid's
// last row) leaves the others alone.
template <int Lanes> T_DEV unsigned t_row_lanes() {
  if constexpr (Lanes >= 32) return 0xffffffffu;
  else return ((1u << Lanes) - 1u) << (((threadIdx.y * Lanes + threadIdx.x) & 31u) & ~unsigned(Lanes - 1));
}
// The threads of a row see each other's stores.
template <int Lanes = 32> T_DEV void t_row_sync() {
  if constexpr (Lanes < 32) __syncwarp(t_row_lanes<Lanes>());
  else if (blockDim.x <= 32) __syncwarp();
  else __syncthreads();
}
// A shuffle of any value of 1 to 8 bytes: `shfl` moves an int or a long long, v's bits travel.
template <class T, class Shfl> T_DEV T t_shfl_bits(T v, Shfl shfl) {
  if constexpr (sizeof(T) == 8) {
    long long x;
    memcpy(&x, &v, 8);
    x = shfl(x);
    memcpy(&v, &x, 8);
    return v;
  } else if constexpr (sizeof(T) == 4) {
    int x;
    memcpy(&x, &v, 4);
    x = shfl(x);
    memcpy(&v, &x, 4);
    return v;
  } else {
    return static_cast<T>(shfl(static_cast<int>(v)));
  }
}
template <class T> T_DEV T t_shfl_xor(T v, int m, unsigned lanes = 0xffffffffu) {
  return t_shfl_bits(v, [&](auto x) { return __shfl_xor_sync(lanes, x, m); });
}
// Lane 0's value in every lane of the warp.
template <class T> T_DEV T t_shfl0(T v) {
  return t_shfl_bits(v, [](auto x) { return __shfl_sync(0xffffffffu, x, 0); });
}
template <int Lanes = 32, class T, class F> T_DEV T t_warp_reduce(T v, F f) {
  const unsigned lanes = t_row_lanes<Lanes>();
#pragma unroll
  for (int m = Lanes / 2; m > 0; m >>= 1) v = f(v, t_shfl_xor(v, m, lanes));
  return v;
}
// The block's warp partials, combined by every warp (blockDim.x is a power of two, so is the warp
// count: xor shuffles below it stay among the partials), then lane 0's result broadcast by shuffle
// (one barrier fewer than combining in warp 0 and broadcasting through shared memory; layer_norm
// over 4096 bf16 on an H200 0.2 us faster, bench/RESULTS.md 40b). Returns the same bits in every
// thread of the row; sm is one half (16 entries; unused by a warp or segment).
template <int Lanes = 32, class T, class F> T_DEV T t_block_reduce(T v, F f, T* sm) {
  v = t_warp_reduce<Lanes>(v, f);
  if (Lanes < 32 || blockDim.x <= 32) return v;
  const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) sm[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = sm[lane & (warps - 1)];
#pragma unroll
  for (int m = 8; m > 0; m >>= 1)
    if (m < warps) r = f(r, t_shfl_xor(r, m));
  return t_shfl0(r);
}
// Welford partials (count, mean, M2), merged with Chan's formula.
template <class A> struct t_welford {
  A n, mean, m2;
};
// Infinite values: a partial holding one has an infinite mean and a NaN M2, and a merge keeps
// the mean a plain sum would give (inf, or NaN for infinities of both signs), where the update by
// d = b.mean - a.mean would turn it into NaN (eager's mean of [inf, 1] is inf, its var NaN).
template <class A> T_DEV A t_welford_mean(A a_mean, A b_mean, A shift) {
  return t_isinf(a_mean) || t_isinf(b_mean) ? a_mean + b_mean : a_mean + shift;
}
template <class A> T_DEV t_welford<A> t_welford_add(t_welford<A> w, A x) {
  w.n += A(1);
  const A d = x - w.mean;
  w.mean = t_welford_mean(w.mean, x, d / w.n);
  w.m2 += d * (x - w.mean);
  return w;
}
// A merge's weight b.n / n: counts are exact integers, so an approximate float quotient (2 ulp,
// as Triton's division) moves the mean by ~1e-7 of d and saves the IEEE division's sequence
// (an H200 layer norm over rows of 4096 bf16 ran 0.4% faster, bench/RESULTS.md 36d).
T_DEV float t_welford_weight(float bn, float n) { return __fdividef(bn, n); }
T_DEV double t_welford_weight(double bn, double n) { return bn / n; }
template <class A> T_DEV t_welford<A> t_welford_merge(t_welford<A> a, t_welford<A> b) {
  const A n = a.n + b.n;
  if (n == A(0)) return a;
  const A d = b.mean - a.mean, fb = t_welford_weight(b.n, n);
  return {n, t_welford_mean(a.mean, b.mean, d * fb), a.m2 + b.m2 + d * d * a.n * fb};
}
// N values' own count, mean and M2 (two passes in registers).
template <int N, class A> T_DEV t_welford<A> t_welford_group(const A (&x)[N]) {
  A s = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) s += x[k];
  const A mean = s * (A(1) / A(N));
  A m2 = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) m2 += (x[k] - mean) * (x[k] - mean);
  return {A(N), mean, m2};
}
// N values at once, merged with one division.
template <int N, class A> T_DEV t_welford<A> t_welford_add_group(t_welford<A> w, const A (&x)[N]) {
  return t_welford_merge(w, t_welford_group(x));
}
// A thread's values as offsets from its first one, K (group k = 0 sets it): their count, sum
// and sum of squares, a partial made once (t_welford_from_shift). M2 = s2 - s1^2 / n loses at
// most ~n eps relative to itself: (x - mean)^2 <= n var for each of the thread's own n values.
template <int N, class A> T_DEV void t_shift_add_group(A& K, A& s1, A& s2, A& n, const A (&x)[N], int k) {
  if (k == 0) K = t_isinf(x[0]) || x[0] != x[0] ? A(0) : x[0];  // a finite shift: inf - inf is NaN
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const A f = x[j] - K;
    s1 += f;
    s2 += f * f;
  }
  n += A(N);
}
template <class A> T_DEV t_welford<A> t_welford_from_shift(A n, A K, A s1, A s2) {
  if (n == A(0)) return {0, 0, 0};
  const A m = t_welford_weight(s1, n), m2 = s2 - s1 * m;
  return {n, K + m, m2 < A(0) ? A(0) : m2};
}
template <class A> T_DEV t_welford<A> t_welford_shfl(t_welford<A> w, int m, unsigned lanes = 0xffffffffu) {
  return {t_shfl_xor(w.n, m, lanes), t_shfl_xor(w.mean, m, lanes), t_shfl_xor(w.m2, m, lanes)};
}
// A block's (or a row segment's) Welford partials combined: `step(w, m, lanes)` merges w with
// the partial of lane ^ m, over the row's lanes, then every warp combines the warps' partials (as
// t_block_reduce).
template <int Lanes, class A, class Step> T_DEV t_welford<A> t_block_welford_by(t_welford<A> w, t_welford<A>* sm, Step step) {
  const unsigned lanes = t_row_lanes<Lanes>();
#pragma unroll
  for (int m = Lanes / 2; m > 0; m >>= 1) w = step(w, m, lanes);
  if (Lanes < 32 || blockDim.x <= 32) return w;
  const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) sm[threadIdx.x >> 5] = w;
  __syncthreads();
  t_welford<A> r = sm[lane & (warps - 1)];
#pragma unroll
  for (int m = 8; m > 0; m >>= 1)
    if (m < warps) r = step(r, m, 0xffffffffu);
  return {t_shfl0(r.n), t_shfl0(r.mean), t_shfl0(r.m2)};
}
template <int Lanes = 32, class A> T_DEV t_welford<A> t_block_welford(t_welford<A> w, t_welford<A>* sm) {
  return t_block_welford_by<Lanes>(w, sm, [](t_welford<A> a, int m, unsigned lanes) { return t_welford_merge(a, t_welford_shfl(a, m, lanes)); });
}
// t_block_welford where every lane holds the same count (a row of constant length its threads
// split evenly): each merge weighs its sides by one half, so the counts are not exchanged and no
// quotient is taken (two shuffles a step instead of three).
template <class A> T_DEV t_welford<A> t_welford_merge_even(t_welford<A> a, A b_mean, A b_m2) {
  const A d = b_mean - a.mean;
  return {a.n + a.n, t_welford_mean(a.mean, b_mean, d * A(0.5)), a.m2 + b_m2 + d * d * a.n * A(0.5)};
}
template <int Lanes = 32, class A> T_DEV t_welford<A> t_block_welford_even(t_welford<A> w, t_welford<A>* sm) {
  return t_block_welford_by<Lanes>(w, sm, [](t_welford<A> a, int m, unsigned lanes) {
    return t_welford_merge_even(a, t_shfl_xor(a.mean, m, lanes), t_shfl_xor(a.m2, m, lanes));
  });
}
// Arg reductions: (value, flat position); NaN wins, then the better value, then the first position.
template <class T> struct t_arg {
  T v;
  int64_t i;
  bool valid;
};
template <class T, bool Max> T_DEV t_arg<T> t_arg_pick(t_arg<T> a, t_arg<T> b) {
  if (!a.valid) return b;
  if (!b.valid) return a;
  const bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) return an && bn ? (a.i <= b.i ? a : b) : (an ? a : b);
  if (Max ? a.v > b.v : a.v < b.v) return a;
  if (Max ? b.v > a.v : b.v < a.v) return b;
  return a.i <= b.i ? a : b;
}
template <class T, bool Max> T_DEV t_arg<T> t_arg_shfl(t_arg<T> a, int m, unsigned lanes = 0xffffffffu) {
  return {t_shfl_xor(a.v, m, lanes), t_shfl_xor(a.i, m, lanes), static_cast<bool>(t_shfl_xor(static_cast<int>(a.valid), m, lanes))};
}
template <class T, bool Max, int Lanes = 32> T_DEV t_arg<T> t_block_arg(t_arg<T> a, t_arg<T>* sm) {
  const unsigned lanes = t_row_lanes<Lanes>();
#pragma unroll
  for (int m = Lanes / 2; m > 0; m >>= 1) a = t_arg_pick<T, Max>(a, t_arg_shfl<T, Max>(a, m, lanes));
  if (Lanes < 32 || blockDim.x <= 32) return a;
  const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) sm[threadIdx.x >> 5] = a;
  __syncthreads();
  if (threadIdx.x < 32) {
    t_arg<T> r = sm[lane < warps ? lane : 0];
    for (int m = warps >> 1; m > 0; m >>= 1) r = t_arg_pick<T, Max>(r, t_arg_shfl<T, Max>(r, m));
    if (lane == 0) sm[32] = r;
  }
  __syncthreads();
  return sm[32];
}

// Out of range positions of indirect loads: the first one recorded (by any thread) is kept in
// the module's record {site, size, value} until the executor reads and clears it. The executor
// points t_index_error at the module's place in its one array of records before any launch.
__device__ unsigned long long* t_index_error;
__device__ __noinline__ void t_index_fail(int64_t site, int64_t size, int64_t value) {
  if (atomicCAS(&t_index_error[0], 0ull, static_cast<unsigned long long>(site)) == 0ull) {
    t_index_error[1] = static_cast<unsigned long long>(size);
    t_index_error[2] = static_cast<unsigned long long>(value);
  }
}
T_DEV int64_t t_index_check(int64_t i, int64_t n, bool wrap, int64_t site) {
  const int64_t given = i;
  if (wrap && i < 0) i += n;
  if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(n)) {
    t_index_fail(site, n, given);
    return -1;
  }
  return i;
}
// A zero integer divisor is recorded at its site; the division then yields 0 (and the run fails).
template <class I> T_DEV I t_nonzero(I b, int64_t site) {
  if (b == 0) t_index_fail(site, 0, 0);
  return b;
}
