// The CPU kernel prelude's bf16 rounding, compiled as the kernel cache compiles kernels (the test
// in tests/CMakeLists.txt): t_round_bf16 skips the trip through 16 bits and must give that trip's
// bits for every float (ties to even, carries into the exponent, infinities, NaNs of either sign,
// subnormals), in a vectorized loop as in a kernel and one element at a time.
#include "../src/codegen/cpu/kernel_prelude.h"

#include <cstdio>
#include <vector>

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

int main() {
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
