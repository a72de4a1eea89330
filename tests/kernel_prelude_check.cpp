// The CPU kernel prelude's bf16 rounding, compiled as the kernel cache compiles kernels (the test
// in tests/CMakeLists.txt): t_round_bf16 skips the trip through 16 bits and must give that trip's
// bits for every float (ties to even, carries into the exponent, infinities, NaNs of either sign,
// subnormals), in a vectorized loop as in a kernel and one element at a time. t_exp (the inline
// expf) stays within 1.01 ulp of the true value over a sweep of floats, vectorized and not, and
// keeps expf's special values; t_erf (the inline erff) within 8 ulp, with erf's special values.
// The t_lm_ functions (libmvec's) give the same bits for an input wherever a loop computes it.
#include "../src/codegen/cpu/kernel_prelude.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The distance of `got` from `want` in units of the last place of want rounded to float.
double ulps(float got, double want) {
  float w = static_cast<float>(want);
  if (std::isinf(w)) return std::isinf(got) && (got > 0) == (w > 0) ? 0 : 1e9;
  double ulp = w == 0 ? std::ldexp(1.0, -149) : std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

// The floats in (lo, hi) at a prime stride over every bit pattern (denormals included), after
// `special`: fn against ref (in double) vectorized and one at a time, within `bound` ulp and, where
// `odd`, with the argument's sign. Prints the worst and returns 0, or prints the first miss.
template <class Fn, class Ref>
int check_sweep(const char* name, std::vector<float> x, float lo, float hi, Fn fn, Ref ref, double bound, bool odd) {
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4093) {
    float f;
    uint32_t b = static_cast<uint32_t>(u);
    std::memcpy(&f, &b, 4);
    if (f > lo && f < hi) x.push_back(f);
  }
  int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> vec(x.size());
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) vec[static_cast<size_t>(i)] = fn(x[static_cast<size_t>(i)]);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double want = ref(static_cast<double>(x[i]));
    double e = std::max(ulps(vec[i], want), ulps(fn(x[i]), want));
    if (!(e <= bound) || (odd && std::signbit(vec[i]) != std::signbit(x[i]))) {
      std::printf("%s(%a) = %a (vectorized %a), the true value %a: %.3f ulp\n", name, x[i], fn(x[i]), vec[i], want, e);
      return 1;
    }
    worst = std::max(worst, e);
  }
  std::printf("%s: %zu floats within %.3f ulp\n", name, x.size(), worst);
  return 0;
}

const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();

int check_exp() {
  std::vector<float> special{0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.7228394f, 88.73f, -87.33f, -103.9f, -103.97f, -104.5f,
                             1e-30f, -1e-30f, 0.34657359f, -0.34657359f};
  auto fn = [](float v) { return t_exp(v); };
  if (check_sweep("t_exp", special, -110.0f, 95.0f, fn, [](double v) { return std::exp(v); }, 1.01, false)) return 1;
  if (t_exp(inf) != inf || t_exp(-inf) != 0.0f || !std::isnan(t_exp(nan)) || t_exp(-200.0f) != 0.0f ||
      t_exp(100.0f) != inf) {
    std::printf("t_exp's special values: exp(inf) = %a, exp(-inf) = %a, exp(nan) = %a, exp(-200) = %a, exp(100) = %a\n",
                t_exp(inf), t_exp(-inf), t_exp(nan), t_exp(-200.0f), t_exp(100.0f));
    return 1;
  }
  return 0;
}

int check_erf() {
  std::vector<float> special{0.0f, -0.0f, 1.0f, -1.0f, 3.9199998f, 3.92f, -3.92f, 1e-38f, -1e-45f, 0.5f, 2.0f, -2.5f};
  auto fn = [](float v) { return t_erf(v); };
  if (check_sweep("t_erf", special, -6.0f, 6.0f, fn, [](double v) { return std::erf(v); }, 8.0, true)) return 1;
  if (t_erf(inf) != 1.0f || t_erf(-inf) != -1.0f || !std::isnan(t_erf(nan)) || t_erf(1e30f) != 1.0f) {
    std::printf("t_erf's special values: erf(inf) = %a, erf(-inf) = %a, erf(nan) = %a, erf(1e30) = %a\n", t_erf(inf),
                t_erf(-inf), t_erf(nan), t_erf(1e30f));
    return 1;
  }
  return 0;
}

bool same_bits(float a, float b) { return bits_of(a) == bits_of(b) || (a != a && b != b); }

// `fn` (a t_lm_ function) over a sweep of floats in loops of every length from 1 to 37, so that
// each input lands in a loop's full vectors, its narrower remainder and its scalar tail, against
// `one` (the same function through a pointer: never vectorized).
template <class Fn>
int check_one_variant(const char* name, Fn fn, float (*volatile one)(float)) {
  std::vector<float> x{0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, 1e-40f, -1e-40f, 88.7f, -103.9f};
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) {
    float f;
    uint32_t b = static_cast<uint32_t>(u);
    std::memcpy(&f, &b, 4);
    x.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(x.size());
  for (int64_t len = 1; len <= 37; ++len) {
    for (int64_t start = 0; start < n; start += len) {
      const int64_t m = std::min(len, n - start);
      const float* in = x.data() + start;
      float* o = out.data() + start;
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) o[i] = fn(in[i]);
    }
    for (size_t i = 0; i < x.size(); ++i) {
      const float alone = one(x[i]);
      if (!same_bits(out[i], alone)) {
        std::printf("%s(%a) = %a in loops of %lld, %a alone\n", name, x[i], out[i], static_cast<long long>(len), alone);
        return 1;
      }
    }
  }
  std::printf("%s: %zu floats, the same bits in loops of 1 to 37 and alone\n", name, x.size());
  return 0;
}

int check_vector_math() {
  return check_one_variant("t_lm_expf", [](float v) { return t_lm_expf(v); }, t_lm_expf) ||
         check_one_variant("t_lm_logf", [](float v) { return t_lm_logf(v); }, t_lm_logf) ||
         check_one_variant("t_lm_erff", [](float v) { return t_lm_erff(v); }, t_lm_erff) ||
         check_one_variant("t_lm_tanhf", [](float v) { return t_lm_tanhf(v); }, t_lm_tanhf) ||
         check_one_variant("t_lm_expm1f", [](float v) { return t_lm_expm1f(v); }, t_lm_expm1f) ||
         check_one_variant("t_lm_log1pf", [](float v) { return t_lm_log1pf(v); }, t_lm_log1pf);
}

}  // namespace

int main() {
  if (int rc = check_exp()) return rc;
  if (int rc = check_erf()) return rc;
  if (int rc = check_vector_math()) return rc;
  std::vector<uint32_t> in{0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                           0x7f800001u, 0x7fffffffu, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu,
                           0x00008000u, 0x00018000u};
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) in.push_back(static_cast<uint32_t>(u));  // a prime stride
  std::vector<float> x(in.size()), fast(in.size()), trip(in.size());
  std::memcpy(x.data(), in.data(), in.size() * 4);
  int64_t n = static_cast<int64_t>(x.size());
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) fast[static_cast<size_t>(i)] = t_round_bf16(x[static_cast<size_t>(i)]);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) trip[static_cast<size_t>(i)] = t_bf16_to_float(t_float_to_bf16(x[static_cast<size_t>(i)]));
  for (size_t i = 0; i < in.size(); ++i)
    if (bits_of(fast[i]) != bits_of(trip[i]) || bits_of(t_round_bf16(x[i])) != bits_of(trip[i])) {
      std::printf("t_round_bf16(0x%08x) = 0x%08x, the trip through 16 bits gives 0x%08x\n", in[i], bits_of(fast[i]),
                  bits_of(trip[i]));
      return 1;
    }
  std::printf("t_round_bf16: %zu floats match\n", in.size());
  return 0;
}
