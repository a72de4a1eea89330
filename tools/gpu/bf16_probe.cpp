#include <cstdint>
void cvt(const float* __restrict a, __bf16* __restrict o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = (__bf16)(a[i] * 2.0f);
}
void load(const __bf16* __restrict a, float* __restrict o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = (float)a[i] * 2.0f;
}
