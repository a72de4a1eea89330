// scaled_dot_product_attention on the CPU, for a kernels.cpp that has such a line (embedded into
// toroid as cpp_attention_template(); it follows the prelude, whose helpers it uses). One pass
// over the keys per block of 16 query rows with an online softmax: each row keeps its running
// maximum and sum and its output, rescaled when the maximum grows, so no score matrix is stored.
// Keys come in blocks of 64, transposed so that a row's scores against the block are one loop
// over the block (vectorized) per query element; values stay row-major for the weighted sum.
// The executor fills the arguments (runtime/attention_call.h):
//   bufs: query, key, value, mask (or null), out
//   p[0..20): (batch, head, row, col) element strides of query, key, value, mask and out
//   p[20..29): batch, heads, L, S, E, Ev, query heads per key head, is_causal, mask kind
//              (0 none, 1 bool, 2 additive in the query's dtype)
//   p[29]: the scale's bits (a double)
#ifndef TOROID_ATTENTION_TEMPLATE
#define TOROID_ATTENTION_TEMPLATE 1
namespace {
inline float t_att_load(const float* p, int64_t i) { return p[i]; }
inline double t_att_load(const double* p, int64_t i) { return p[i]; }
inline float t_att_load(const uint16_t* p, int64_t i) { return t_bf16_to_float(p[i]); }
inline float t_att_load(const _Float16* p, int64_t i) { return static_cast<float>(p[i]); }
inline void t_att_store(float* p, int64_t i, float x) { p[i] = x; }
inline void t_att_store(double* p, int64_t i, double x) { p[i] = x; }
inline void t_att_store(uint16_t* p, int64_t i, float x) { p[i] = t_float_to_bf16(x); }
inline void t_att_store(_Float16* p, int64_t i, float x) { p[i] = static_cast<_Float16>(x); }

// T: the tensors' element type; A: what scores and sums are computed in (double for f64, else float).
template <class T, class A>
void t_attention(char* const* bufs, const int64_t* p) {
  const T* q = reinterpret_cast<const T*>(bufs[0]);
  const T* k = reinterpret_cast<const T*>(bufs[1]);
  const T* v = reinterpret_cast<const T*>(bufs[2]);
  const char* mask = bufs[3];
  T* out = reinterpret_cast<T*>(bufs[4]);
  const int64_t *qs = p, *ks = p + 4, *vs = p + 8, *ms = p + 12, *os = p + 16;
  const int64_t B = p[20], H = p[21], L = p[22], S = p[23], E = p[24], Ev = p[25], group = p[26];
  const bool causal = p[27] != 0;
  const int64_t mask_kind = p[28];
  const A scale = static_cast<A>(t_f64_from_bits(p[29]));
  const A neg_inf = -std::numeric_limits<A>::infinity();
  constexpr int64_t QB = 16, KB = 64;
  const int64_t blocks = (L + QB - 1) / QB, tasks = B * H * blocks;
  t_for_rows(tasks, B * H * L * S * (E + Ev) >= 65536, [&](int64_t t0, int64_t t1) {
    std::vector<A> qb(static_cast<size_t>(QB * E)), kt(static_cast<size_t>(E * KB)), vb(static_cast<size_t>(KB * Ev)),
        acc(static_cast<size_t>(QB * Ev));
    A s[KB], w[KB], m[QB], l[QB];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (H * blocks), h = t / blocks % H, i0 = t % blocks * QB;
      const int64_t rows = std::min(QB, L - i0);
      const T* qp = q + b * qs[0] + h * qs[1];
      const T* kp = k + b * ks[0] + h / group * ks[1];
      const T* vp = v + b * vs[0] + h / group * vs[1];
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t e = 0; e < E; ++e) qb[r * E + e] = static_cast<A>(t_att_load(qp, (i0 + r) * qs[2] + e * qs[3])) * scale;
        for (int64_t c = 0; c < Ev; ++c) acc[r * Ev + c] = 0;
        m[r] = neg_inf;
        l[r] = 0;
      }
      // With is_causal no row of this block looks past its last row's position.
      const int64_t keys = causal ? std::min(S, i0 + rows) : S;
      for (int64_t j0 = 0; j0 < keys; j0 += KB) {
        const int64_t n = std::min(KB, keys - j0);
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t e = 0; e < E; ++e) kt[e * KB + j] = t_att_load(kp, (j0 + j) * ks[2] + e * ks[3]);
          for (int64_t c = 0; c < Ev; ++c) vb[j * Ev + c] = t_att_load(vp, (j0 + j) * vs[2] + c * vs[3]);
        }
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          for (int64_t j = 0; j < n; ++j) s[j] = 0;
          for (int64_t e = 0; e < E; ++e) {
            const A x = qb[r * E + e];
            const A* kr = &kt[e * KB];
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) s[j] += x * kr[j];
          }
          A top = neg_inf;
          for (int64_t j = 0; j < n; ++j) {
            bool keep = !(causal && j0 + j > i);
            if (keep && mask_kind) {
              const int64_t at = b * ms[0] + h * ms[1] + i * ms[2] + (j0 + j) * ms[3];
              if (mask_kind == 1) keep = mask[at] != 0;
              else s[j] += static_cast<A>(t_att_load(reinterpret_cast<const T*>(mask), at));
            }
            s[j] = keep ? s[j] : neg_inf;
            top = s[j] > top || s[j] != s[j] ? s[j] : top;  // a NaN score stays: the row is NaN
          }
          if (top == neg_inf) continue;  // every key so far masked
          const A next = m[r] != m[r] || top != top ? m[r] + top : std::max(m[r], top);
          const A keep_old = t_exp_of(m[r] - next);  // 0 while m is -inf
          m[r] = next;
          A sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t j = 0; j < n; ++j) {
            w[j] = t_exp_of(s[j] - next);
            sum += w[j];
          }
          l[r] = l[r] * keep_old + sum;
          A* ar = &acc[r * Ev];
          for (int64_t c = 0; c < Ev; ++c) ar[c] *= keep_old;
          for (int64_t j = 0; j < n; ++j) {
            const A wj = w[j];
            const A* vr = &vb[j * Ev];
#pragma omp simd
            for (int64_t c = 0; c < Ev; ++c) ar[c] += wj * vr[c];
          }
        }
      }
      // A row whose keys are all masked (or that has none) gives zeros, as PyTorch's safe softmax.
      for (int64_t r = 0; r < rows; ++r) {
        const A inv = l[r] == 0 ? A(0) : A(1) / l[r];
        T* orow = out + b * os[0] + h * os[1] + (i0 + r) * os[2];
        for (int64_t c = 0; c < Ev; ++c) t_att_store(orow, c * os[3], acc[r * Ev + c] * inv);
      }
    }
  });
}
}  // namespace
#endif
