// The start of every generated C++ translation unit (embedded into toroid at build time, see
// src/codegen/CMakeLists.txt; cpp_prelude() returns it): 16-bit float conversion, Python-style
// integer division, and NaN-propagating max/min (as PyTorch's maximum, clamp and relu).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>
#include <vector>

#include <omp.h>

// Float exp, log, tanh, expm1, log1p and erf: t_lm_<f>f, libmvec's vector functions with one
// variant behind every call. glibc's scalar expf and its SSE, AVX2 and AVX-512 variants round
// differently (tanhf and expm1f even AVX2 against AVX-512), and g++ picks one per loop and per
// loop version (a row's remainder, one half of a split outer loop): equal inputs at two positions
// came out an ulp apart, and an argmax over tied rows picked the wrong one. Each t_lm_ function is
// declared with vector clones (so `omp simd` loops call them) that all run the widest variant,
// narrower vectors padded with 1s; the widest clone is libmvec's own symbol under a second name.
// Its scalar form (a broadcast, then the same variant) is assembly: a body g++ could see would be
// inlined before vectorizing, and a function defined in this file gets no clones but its own.
// Everything is file-local, so a library built from several kernel files has each once per file.
// Elsewhere (no AVX2, no glibc, not g++'s simd clones): the scalar C library, and such loops stay
// scalar.
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && \
    (defined(__AVX512F__) || defined(__AVX2__))
typedef float t_v4sf __attribute__((vector_size(16)));
typedef float t_v8sf __attribute__((vector_size(32)));
#if defined(__AVX512F__)
typedef float t_lm_wide __attribute__((vector_size(64)));
#define T_LM_WIDE(f) _ZGVeN16v_##f
#define T_LM_SCALAR_ASM(f) "\tvbroadcastss %xmm0, %zmm0\n\tjmp _ZGVeN16v_" #f "@PLT\n"
#define T_LM_WIDE_ASM(f) ".set _ZGVeN16v_t_lm_" #f ", _ZGVeN16v_" #f "\n"
static inline t_lm_wide t_lm_from8(t_v8sf x) {
  const t_v8sf one = {1, 1, 1, 1, 1, 1, 1, 1};
  return __builtin_shufflevector(x, one, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static inline t_v8sf t_lm_to8(t_lm_wide r) { return __builtin_shufflevector(r, r, 0, 1, 2, 3, 4, 5, 6, 7); }
static inline t_lm_wide t_lm_from4(t_v4sf x) {
  const t_v4sf one = {1, 1, 1, 1};
  return __builtin_shufflevector(x, one, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
}
#define T_LM_CLONES(f) \
  __attribute__((used)) static t_v8sf _ZGVdN8v_t_lm_##f(t_v8sf x) { return t_lm_to8(T_LM_WIDE(f)(t_lm_from8(x))); }
#else
typedef t_v8sf t_lm_wide;
#define T_LM_WIDE(f) _ZGVdN8v_##f
#define T_LM_SCALAR_ASM(f) "\tvbroadcastss %xmm0, %ymm0\n\tjmp _ZGVdN8v_" #f "@PLT\n"
#define T_LM_WIDE_ASM(f) ".set _ZGVdN8v_t_lm_" #f ", _ZGVdN8v_" #f "\n"
static inline t_lm_wide t_lm_from8(t_v8sf x) { return x; }
static inline t_v8sf t_lm_to8(t_lm_wide r) { return r; }
static inline t_lm_wide t_lm_from4(t_v4sf x) {
  const t_v4sf one = {1, 1, 1, 1};
  return __builtin_shufflevector(x, one, 0, 1, 2, 3, 4, 5, 6, 7);
}
#define T_LM_CLONES(f)
#endif
#define T_LM(f)                                                                                      \
  extern "C" {                                                                                       \
  t_lm_wide T_LM_WIDE(f)(t_lm_wide);                                                                 \
  __attribute__((simd("notinbranch"), const, nothrow, visibility("hidden"))) float t_lm_##f(float); \
  T_LM_CLONES(f)                                                                                     \
  __attribute__((used)) static t_v8sf _ZGVcN8v_t_lm_##f(t_v8sf x) { return t_lm_to8(T_LM_WIDE(f)(t_lm_from8(x))); } \
  __attribute__((used)) static t_v4sf _ZGVbN4v_t_lm_##f(t_v4sf x) {                                  \
    const t_lm_wide r = T_LM_WIDE(f)(t_lm_from4(x));                                                 \
    return __builtin_shufflevector(r, r, 0, 1, 2, 3);                                                \
  }                                                                                                  \
  }                                                                                                  \
  asm(T_LM_WIDE_ASM(f) ".pushsection .text\n.type t_lm_" #f ", @function\nt_lm_" #f ":\n"             \
      T_LM_SCALAR_ASM(f) ".size t_lm_" #f ", .-t_lm_" #f "\n.popsection\n");
T_LM(expf)
T_LM(logf)
T_LM(erff)
T_LM(tanhf)
T_LM(expm1f)
T_LM(log1pf)
#undef T_LM
#undef T_LM_CLONES
#undef T_LM_SCALAR_ASM
#undef T_LM_WIDE_ASM
#undef T_LM_WIDE
#else
static inline float t_lm_expf(float x) { return std::exp(x); }
static inline float t_lm_logf(float x) { return std::log(x); }
static inline float t_lm_erff(float x) { return std::erf(x); }
static inline float t_lm_tanhf(float x) { return std::tanh(x); }
static inline float t_lm_expm1f(float x) { return std::expm1(x); }
static inline float t_lm_log1pf(float x) { return std::log1p(x); }
#endif

namespace {
inline float t_bf16_to_float(uint16_t x) {
  uint32_t u = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t t_float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
// A float symbol's value: its bits travel in the kernel's int64 symbol array.
inline double t_f64_from_bits(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
// t_bf16_to_float(t_float_to_bf16(f)) without the trip through 16 bits: the vectorized loop then
// needs no narrowing and widening shuffles (a fused bf16 kernel rounds each op's result).
inline float t_round_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  uint32_t quiet = (u | 0x400000u) & 0xffff0000u;  // a NaN stays a NaN
  uint32_t bits = (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}
inline float t_round_f16(float f) { return static_cast<float>(static_cast<_Float16>(f)); }
// Dividing by -1 gives -a, which wraps for INT64_MIN (x86's idiv traps there, killing the
// process), with remainder 0.
inline int64_t t_neg_wrap(int64_t a) { return static_cast<int64_t>(0ull - static_cast<uint64_t>(a)); }
inline int64_t t_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return t_neg_wrap(a);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t t_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline int64_t t_imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t t_imax(int64_t a, int64_t b) { return a > b ? a : b; }
// A row of n floats this thread may write and read back (a reduction's per-element values that a
// later loop of the same row reads instead of computing them again); slot < 4.
inline float* t_row_cache(int slot, int64_t n) {
  static thread_local std::vector<float> rows[4];
  std::vector<float>& r = rows[slot];
  if (static_cast<int64_t>(r.size()) < n) r.resize(static_cast<size_t>(n));
  return r.data();
}
// Runs f(begin, end) over the rows [0, n): split evenly over OpenMP's threads where `parallel`
// (the kernel's work is at or over its threshold), else on this thread, as also where one row or
// one thread would do or a parallel region is already running (libgomp's team costs a futex call
// per region even when it has one thread). The team is always the whole pool, even for fewer rows
// than threads (those threads get none): libgomp parks the threads a smaller team leaves out, and
// the next full team waits for them (on the 16-core host cross entropy's 64 MB kernels took
// 2.59 ms in sequence, 1.89 one by one, with a 2-thread region between 16-thread ones).
template <class F>
inline void t_for_rows(int64_t n, bool parallel, const F& f) {
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  if (threads <= 1 || n <= 1 || omp_in_parallel()) {
    f(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t q = n / nt, r = n % nt;
    const int64_t begin = t * q + std::min(t, r);
    const int64_t end = begin + q + (t < r ? 1 : 0);
    if (begin < end) f(begin, end);
  }
}
// A row's L partial results (L a power of two) combined pairwise into v[0]: a few vector ops where
// the lanes of an `omp simd` reduction end in one scalar op per lane, in order.
template <int W, class T, class Op> inline void t_fold_lanes(T* v, Op op) {
  if constexpr (W > 0) {  // each width a constant: straight-line vector ops
#pragma omp simd
    for (int l = 0; l < W; ++l) v[l] = op(v[l], v[l + W]);
    t_fold_lanes<W / 2>(v, op);
  }
}
template <int L, class T> inline T t_sum_lanes(T* v) {
  t_fold_lanes<L / 2>(v, [](T a, T b) { return a + b; });
  return v[0];
}
// Max and min of lanes that hold no NaN (the reductions flag NaNs apart).
template <int L, class T> inline T t_max_lanes(T* v) {
  t_fold_lanes<L / 2>(v, [](T a, T b) { return b > a ? b : a; });
  return v[0];
}
template <int L, class T> inline T t_min_lanes(T* v) {
  t_fold_lanes<L / 2>(v, [](T a, T b) { return b < a ? b : a; });
  return v[0];
}
template <int L> inline int t_any_lanes(int* v) {
  t_fold_lanes<L / 2>(v, [](int a, int b) { return a | b; });
  return v[0];
}
template <int L, class T> inline void t_fill_lanes(T* v, T x) {
#pragma omp simd
  for (int l = 0; l < L; ++l) v[l] = x;
}
inline int64_t t_truncdiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? t_neg_wrap(a) : a / b; }
inline int64_t t_fmod(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
template <class T> inline T t_floordiv_f(T a, T b) {
  if (b == 0) return a / b;
  T m = std::fmod(a, b);
  T d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
  if (d == 0) return std::copysign(T(0), a / b);
  T f = std::floor(d);
  if (d - f > T(0.5)) f += 1;
  return f;
}
template <class T> inline T t_remainder_f(T a, T b) {
  T r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class T> inline T t_maximum(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <class T> inline T t_minimum(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <class T> inline T t_relu(T a) { return a < T(0) ? T(0) : a; }
template <class T> inline T t_sign(T a) { return static_cast<T>((T(0) < a) - (a < T(0))); }
template <class T> inline T t_ipow(T base, T exp) {
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? ((exp & 1) ? -1 : 1) : 0);
  T r = 1;
  while (exp) {
    if (exp & 1) r *= base;
    base *= base;
    exp >>= 1;
  }
  return r;
}
inline float t_exp_of(float x) { return t_lm_expf(x); }
inline double t_exp_of(double x) { return std::exp(x); }
template <class T> inline T t_sigmoid(T a) { return T(1) / (T(1) + t_exp_of(-a)); }
// expf as straight-line vector code (TOROID_CPU_INLINE_EXP): 2^k e^r with k = round(x / ln 2),
// |r| <= ln2 / 2 in two steps (ln2's high part has bits to spare for k), e^r = 1 + r + r^2 P(r)
// with P a degree-4 fit (relative error 3e-9). At most 1.01 ulp from the true value over every
// float (denormal results included: 2^k is applied in two halves). Against libmvec's vector
// expf, a call that spills a loop's registers: faster on a core of its own, slower where two
// threads share a core (more instructions), so kernels use it only under TOROID_CPU_INLINE_EXP=1.
inline float t_exp(float x) {
  const float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);  // beyond: 0 and inf
  const float shifted = c * 1.44269502f + 12582912.0f;  // 1.5 * 2^23: rounds c / ln2 to an integer
  const float k = shifted - 12582912.0f;
  int32_t ki;
  std::memcpy(&ki, &shifted, 4);
  ki -= 0x4b400000;
  float r = c - k * 0.693145751953125f;
  r = r - k * 1.42860682e-06f;
  float p = 0.0013814610429108143f;
  p = p * r + 0.008368710055947304f;
  p = p * r + 0.04166838899254799f;
  p = p * r + 0.1666652113199234f;
  p = p * r + 0.4999999403953552f;
  const float e = (r * r * p + r) + 1.0f;
  const int32_t k1 = ki >> 1, b1 = (k1 + 127) << 23, b2 = (ki - k1 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  const float y = e * s1 * s2;
  return x != x ? x : y;
}
inline float t_sigmoid_exp(float a) { return 1.0f / (1.0f + t_exp(-a)); }
// erff as straight-line vector code (TOROID_CPU_INLINE_ERF): x P(x^2) / Q(x^2) below 3.92 in
// magnitude, +-1 from there (where erf rounds to +-1 in float). P of degree 6 and Q of degree 4
// are a least-squares fit of the relative error (tools/gen/fit_erf.py: 5.2e-8 in exact
// arithmetic, 4.6 ulp evaluated in float over the kernel_prelude_numerics sweep). One division
// and eleven multiply-adds, no table: a gelu loop ran at 2.2x libmvec's erff on one core here.
inline float t_erf(float x) {
  const float t = x * x;
  float p = 1.9922933e-08f;
  p = p * t - 1.9578752e-06f;
  p = p * t + 1.418723e-04f;
  p = p * t + 3.7026019e-03f;
  p = p * t + 5.057661e-02f;
  p = p * t + 1.9994795e-01f;
  p = p * t + 1.1283791e+00f;
  float q = 9.562717e-04f;
  q = q * t + 1.4355277e-02f;
  q = q * t + 1.1500824e-01f;
  q = q * t + 5.1053095e-01f;
  q = q * t + 1.0f;
  const float y = x * p / q;
  return std::fabs(x) >= 3.92f ? std::copysign(1.0f, x) : y;
}
}  // namespace
// Out of range positions of indirect loads (and zero divisors): the first one recorded (by any
// thread) is kept until the executor takes it after the kernel returns. One record per shared
// object: a module compiled in several parts defines it in the first (see kernels_sources).
extern "C" {
__attribute__((visibility("hidden"))) extern int64_t t_index_error, t_index_error_size, t_index_error_value;
}
#ifndef TOROID_KERNELS_EXTRA_PART
extern "C" {
__attribute__((visibility("hidden"))) int64_t t_index_error = 0, t_index_error_size = 0, t_index_error_value = 0;
int64_t toroid_take_index_error(int64_t* size, int64_t* value) {
  // Called after the kernel's threads joined, so the size and value are written.
  *size = __atomic_load_n(&t_index_error_size, __ATOMIC_ACQUIRE);
  *value = __atomic_load_n(&t_index_error_value, __ATOMIC_ACQUIRE);
  return __atomic_exchange_n(&t_index_error, 0, __ATOMIC_ACQ_REL);
}
}
#endif
namespace {
__attribute__((noinline, cold)) void t_index_fail(int64_t site, int64_t size, int64_t value) {
  int64_t none = 0;
  if (__atomic_compare_exchange_n(&t_index_error, &none, site, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    __atomic_store_n(&t_index_error_value, value, __ATOMIC_RELEASE);
    __atomic_store_n(&t_index_error_size, size, __ATOMIC_RELEASE);
  }
}
// The position i in [0, n) (after + n when wrap and i < 0), or -1 (and the error recorded).
inline int64_t t_index_check(int64_t i, int64_t n, bool wrap, int64_t site) {
  const int64_t given = i;
  if (wrap && i < 0) i += n;
  if (__builtin_expect(static_cast<uint64_t>(i) >= static_cast<uint64_t>(n), 0)) {
    t_index_fail(site, n, given);
    return -1;
  }
  return i;
}
// A zero integer divisor is recorded at its site; the division then yields 0 (and the run fails).
template <class I> inline I t_nonzero(I b, int64_t site) {
  if (__builtin_expect(b == 0, 0)) t_index_fail(site, 0, 0);
  return b;
}
}  // namespace
