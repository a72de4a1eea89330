#!/usr/bin/env bash
# Whether the host compiler turns float -> __bf16 conversions in a vectorized loop into AVX512-BF16's
# vcvtneps2bf16 (issue 18: bf16 stores cost CPU kernels ~10 vector ops each in software), per flag set.
cat > /tmp/p.cpp <<'X'
#include <cstdint>
#include <cstring>
void store(const float* __restrict__ a, const float* __restrict__ b, __bf16* __restrict__ o, long n) {
  #pragma omp simd
  for (long i = 0; i < n; ++i) o[i] = (__bf16)(a[i] + b[i]);
}
void roundtrip(const float* __restrict__ a, float* __restrict__ o, long n) {
  #pragma omp simd
  for (long i = 0; i < n; ++i) o[i] = (float)(__bf16)a[i];
}
X
c++ --version | head -1
for f in "" "-ffast-math" "-fno-signaling-nans -fno-trapping-math"; do echo "flags: $f"; c++ -O3 -march=native -fopenmp -S -o /tmp/p.s /tmp/p.cpp $f 2>&1 | head -3; grep -c vcvtneps2bf16 /tmp/p.s; grep -E "vcvtneps2bf16|call" /tmp/p.s | sort | uniq -c | head -5; done
