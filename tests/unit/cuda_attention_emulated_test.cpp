// The attention device kernel's source (runtime/cuda/device_attention.cpp) run on the host: a
// small shim gives it CUDA's names (threads of a block as std::threads meeting at a barrier for
// __syncthreads, warp shuffles through shared memory between two barriers, bf16 and f16 as
// their host types), g++ compiles it with the runtime's kernel cache, and each block of the
// launch attention_launch plans runs in turn. Results are checked against a float64 loop: the
// kernel's indexing, masking, online softmax and grouped heads are tested without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "toroid/runtime/cuda/device_kernels.h"
#include "toroid/runtime/so_cache.h"

namespace {

using namespace toroid;
using namespace toroid::runtime;

constexpr const char* kShim = R"(
#include <math.h>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
struct t_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local t_dim3 threadIdx, blockIdx;
static t_dim3 blockDim, gridDim;
static std::barrier<>* t_block_barrier = nullptr;
static float t_exchange[1024];
inline void __syncthreads() { t_block_barrier->arrive_and_wait(); }
// Every thread of the block shuffles at the same point (as the kernel's warps all do).
inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
  t_exchange[threadIdx.x] = v;
  __syncthreads();
  float r = t_exchange[threadIdx.x ^ static_cast<unsigned>(lane_mask)];
  __syncthreads();
  return r;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
struct float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline int min(int a, int b) { return a < b ? a : b; }
struct __nv_bfloat16 { uint16_t bits; };
inline float __bfloat162float(__nv_bfloat16 h) { uint32_t u = uint32_t(h.bits) << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {uint16_t(u >> 16)};
}
using __half = _Float16;
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __float2half(float f) { return static_cast<_Float16>(f); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
inline unsigned short __half_as_ushort(__half h) { unsigned short b; std::memcpy(&b, &h, 2); return b; }
inline float t_from_bits(const __nv_bfloat16*, unsigned bits) { uint32_t u = bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline float t_from_bits(const __half*, unsigned bits) { unsigned short b = bits; __half h; std::memcpy(&h, &b, 2); return h; }
// mma.sync m16n8k16 (row.col, float accumulators) for a warp, every thread of the block calling
// it at the same point as the kernel's warps do. Fragments as PTX documents them: A[r][k] in
// lane (r % 8) * 4 + (k % 8) / 2, register r / 8 + 2 * (k / 8); B[k][n] in lane n * 4 + (k % 8) / 2,
// register k / 8; D[r][n] in lane (r % 8) * 4 + n / 2, register 2 * (r / 8) + n % 2; the lower
// 16 bits of a register hold the even column.
#define TOROID_ATT_HOST_MMA 1
static unsigned t_mma_a[1024][4], t_mma_b[1024][2];
// ldmatrix .x4 (.trans): lane L gives row L % 8 of matrix L / 8; register i of a lane holds
// matrix i's row lane / 4, columns 2 (lane % 4) and + 1 (transposed: column lane / 4, those rows).
static const unsigned short* t_ldsm_rows[1024];
inline void t_ldsm(unsigned (&r)[4], const unsigned short* p, bool trans) {
  const unsigned me = threadIdx.x, base = me & ~31u, lane = me & 31u;
  t_ldsm_rows[me] = p;
  __syncthreads();
  for (unsigned i = 0; i < 4; ++i) {
    unsigned lo, hi;
    if (trans) {
      lo = t_ldsm_rows[base + i * 8 + 2 * (lane % 4)][lane / 4];
      hi = t_ldsm_rows[base + i * 8 + 2 * (lane % 4) + 1][lane / 4];
    } else {
      lo = t_ldsm_rows[base + i * 8 + lane / 4][2 * (lane % 4)];
      hi = t_ldsm_rows[base + i * 8 + lane / 4][2 * (lane % 4) + 1];
    }
    r[i] = lo | hi << 16;
  }
  __syncthreads();
}
inline void toroid_att_ldsm(unsigned (&r)[4], const unsigned short* p) { t_ldsm(r, p, false); }
inline void toroid_att_ldsm_trans(unsigned (&r)[4], const unsigned short* p) { t_ldsm(r, p, true); }
struct float2 { float x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
// cp.async as a plain copy: the kernel's barriers order it as they order the hardware's.
inline void toroid_att_cp16(void* dst, const void* src, int bytes) {
  if (bytes) std::memcpy(dst, src, 16);
  else std::memset(dst, 0, 16);
}
inline void toroid_att_cp_commit() {}
template <int N> inline void toroid_att_cp_wait() {}
struct uint2 { unsigned x, y; };
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
// cvt.rna.tf32.f32: 10 fraction bits, ties away from zero (the low 13 bits cleared).
inline unsigned toroid_att_tf32(float x) {
  unsigned u; std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return u;
  return (u + 0x1000u) & 0xffffe000u;
}
// mma.sync m16n8k8 tf32: A[r][k] in lane (r % 8) * 4 + k % 4, register r / 8 + 2 * (k / 4);
// B[k][n] in lane n * 4 + k % 4, register k / 4; D as for m16n8k16. The hardware reads 19 bits.
inline void toroid_att_mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  const unsigned me = threadIdx.x, base = me & ~31u, lane = me & 31u;
  std::memcpy(t_mma_a[me], a, sizeof a);
  t_mma_b[me][0] = b0, t_mma_b[me][1] = b1;
  __syncthreads();
  auto tf32 = [](unsigned bits) { return __uint_as_float(bits & 0xffffe000u); };
  for (int u = 0; u < 4; ++u) {
    int r = static_cast<int>(lane >> 2) + 8 * (u >> 1), n = static_cast<int>(lane & 3u) * 2 + (u & 1);
    for (int k = 0; k < 8; ++k)
      d[u] += tf32(t_mma_a[base + (r % 8) * 4 + k % 4][r / 8 + 2 * (k / 4)]) * tf32(t_mma_b[base + n * 4 + k % 4][k / 4]);
  }
  __syncthreads();
}
template <class T>
void toroid_att_mma(const T* tag, float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  const unsigned me = threadIdx.x, base = me & ~31u, lane = me & 31u;
  std::memcpy(t_mma_a[me], a, sizeof a);
  t_mma_b[me][0] = b0, t_mma_b[me][1] = b1;
  __syncthreads();
  auto half = [&](unsigned word, int k) { return t_from_bits(tag, (word >> (16 * (k % 2))) & 0xffffu); };
  for (int u = 0; u < 4; ++u) {
    int r = static_cast<int>(lane >> 2) + 8 * (u >> 1), n = static_cast<int>(lane & 3u) * 2 + (u & 1);
    for (int k = 0; k < 16; ++k)
      d[u] += half(t_mma_a[base + (r % 8) * 4 + (k % 8) / 2][r / 8 + 2 * (k / 8)], k) *
              half(t_mma_b[base + n * 4 + (k % 8) / 2][k / 8], k);
  }
  __syncthreads();
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
template <class F> void t_emulate(unsigned gx, unsigned gz, unsigned threads, const F& kernel) {
  blockDim = {threads, 1, 1};
  gridDim = {gx, 1, gz};
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned x = 0; x < gx; ++x) {
      std::barrier<> bar(threads);
      t_block_barrier = &bar;
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < threads; ++t)
        ts.emplace_back([&, t] { threadIdx = {t, 0, 0}; blockIdx = {x, 0, z}; kernel(); });
      for (std::thread& th : ts) th.join();
    }
}
)";

// The kernels of `dtype` with the shim, and `run_<kernel>(params, grid_x, grid_z, block)` for each.
SharedObject emulated(DType dtype, const std::string& suffix) {
  std::istringstream in(cuda::attention_kernel_source(dtype));
  std::string source = kShim, line;
  while (std::getline(in, line))
    if (line.rfind("#include <cuda", 0) != 0) source += line + "\n";
  for (int d : {16, 32, 64, 128})
    for (std::string kind : {"", "tc_"}) {
      if (kind == "tc_" && dtype == DType::Float32 && d > 64) continue;
      std::string k = "toroid_attention_" + kind + suffix + "_" + std::to_string(d);
      source += "extern \"C\" void run_" + k +
              "(const void* p, unsigned gx, unsigned gz, unsigned threads) { AttentionArgs a; std::memcpy(&a, p, sizeof a); "
                "t_emulate(gx, gz, threads, [&] { " + k + "(a); }); }\n";
    }
  CompileFlags flags;
  flags.flags = "-O1 -std=c++20 -pthread -shared -fPIC";
  return compile_and_load(source, flags);
}

float to_float(DType t, const uint16_t* p, size_t i) {
  if (t == DType::BFloat16) {
    uint32_t u = uint32_t(p[i]) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  return static_cast<float>(reinterpret_cast<const _Float16*>(p)[i]);
}

// Tensors [B, H, rows, cols] (key and value with KH heads), contiguous, as floats and as stored.
struct Case {
  DType dtype = DType::Float32;
  int64_t B = 1, H = 1, KH = 1, L = 1, S = 1, E = 1, Ev = 1;
  bool causal = false;
  double scale = 0;    // 0: 1/sqrt(E)
  int mask_kind = 0;   // 0 none, 1 bool [L, S], 2 additive [B, 1, L, S]
  bool empty_row = false;  // bool mask: query row 1 masks every key
};

class CudaAttentionEmulated : public ::testing::Test {
 protected:
  // ctest gives the tests' shared cache (each test is a process of its own: the modules compile
  // once per dtype for the run); alone, a private directory removed afterwards.
  static void SetUpTestSuite() {
    const char* shared = std::getenv("TOROID_TEST_KERNEL_CACHE");
    own_dir_ = shared == nullptr || *shared == 0;
    dir_ = new std::string(own_dir_ ? std::string(std::filesystem::temp_directory_path() /
                                                  ("toroid-att-emu-" + std::to_string(::getpid())))
                                    : std::string(shared));
    ::setenv("TOROID_CACHE_DIR", dir_->c_str(), 1);
  }
  static void TearDownTestSuite() {
    if (own_dir_) toroid_test::remove_dir_retrying(*dir_);
    delete dir_;
  }

  void check(const Case& c) {
    const char* suffix = c.dtype == DType::Float32 ? "f32" : c.dtype == DType::BFloat16 ? "bf16" : "f16";
    SharedObject so = emulated(c.dtype, suffix);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    size_t esize = c.dtype == DType::Float32 ? 4 : 2;
    auto make = [&](int64_t n, std::vector<float>& values) {
      std::vector<unsigned char> stored(static_cast<size_t>(n) * esize);
      values.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        float x = normal(rng);
        if (c.dtype == DType::Float32) {
          std::memcpy(&stored[static_cast<size_t>(i) * 4], &x, 4);
        } else if (c.dtype == DType::BFloat16) {
          uint32_t u;
          std::memcpy(&u, &x, 4);
          uint16_t b = static_cast<uint16_t>(u >> 16);
          std::memcpy(&stored[static_cast<size_t>(i) * 2], &b, 2);
        } else {
          _Float16 h = static_cast<_Float16>(x);
          std::memcpy(&stored[static_cast<size_t>(i) * 2], &h, 2);
        }
        values[static_cast<size_t>(i)] = c.dtype == DType::Float32
                                             ? x
                                             : to_float(c.dtype, reinterpret_cast<const uint16_t*>(stored.data()), static_cast<size_t>(i));
      }
      return stored;
    };
    std::vector<float> q, k, v, add;
    std::vector<unsigned char> qs = make(c.B * c.H * c.L * c.E, q), ks = make(c.B * c.KH * c.S * c.E, k),
                               vs = make(c.B * c.KH * c.S * c.Ev, v), adds;
    std::vector<unsigned char> keep(static_cast<size_t>(c.L * c.S), 1);
    if (c.mask_kind == 1) {
      for (size_t i = 0; i < keep.size(); ++i) keep[i] = rng() % 3 != 0;
      if (c.empty_row && c.L > 1)
        for (int64_t j = 0; j < c.S; ++j) keep[static_cast<size_t>(c.S + j)] = 0;
    }
    if (c.mask_kind == 2) adds = make(c.B * c.L * c.S, add);
    std::vector<unsigned char> out(static_cast<size_t>(c.B * c.H * c.L * c.Ev) * esize);

    cuda::AttentionCall a;
    a.dtype = c.dtype;
    a.q = qs.data();
    a.k = ks.data();
    a.v = vs.data();
    a.out = out.data();
    auto strides = [](int64_t* s, int64_t heads, int64_t rows, int64_t cols) {
      s[3] = 1, s[2] = cols, s[1] = rows * cols, s[0] = heads * rows * cols;
    };
    strides(a.q_strides, c.H, c.L, c.E);
    strides(a.k_strides, c.KH, c.S, c.E);
    strides(a.v_strides, c.KH, c.S, c.Ev);
    strides(a.out_strides, c.H, c.L, c.Ev);
    if (c.KH == 1 && c.H > 1) a.k_strides[1] = a.v_strides[1] = 0;
    if (c.mask_kind == 1) {
      a.mask = keep.data();
      a.mask_bool = true;
      a.mask_dtype = DType::Bool;
      a.mask_strides[2] = c.S, a.mask_strides[3] = 1;  // [L, S], broadcast over batch and heads
    } else if (c.mask_kind == 2) {
      a.mask = adds.data();
      a.mask_dtype = c.dtype;
      a.mask_strides[0] = c.L * c.S, a.mask_strides[2] = c.S, a.mask_strides[3] = 1;  // [B, 1, L, S]
    }
    a.batch = c.B, a.heads = c.H, a.L = c.L, a.S = c.S, a.E = c.E, a.Ev = c.Ev;
    a.group = c.KH == 1 ? 1 : c.H / c.KH;
    a.scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.E));
    a.causal = c.causal;
    ASSERT_TRUE(cuda::attention_supported(a));
    // sm_90 takes a tensor-core kernel (fp32's up to 64 columns), sm_75 the other one.
    for (int arch : {90, 75}) {
      std::fill(out.begin(), out.end(), 0xee);
      cuda::AttentionLaunch launch = cuda::attention_launch(a, arch);
      auto run = reinterpret_cast<void (*)(const void*, unsigned, unsigned, unsigned)>(find_symbol(so, "run_" + launch.kernel));
      run(launch.params.data(), launch.grid_x, launch.grid_z, launch.block_x);
      EXPECT_LT(worst_error(c, a, q, k, v, add, keep, out), c.dtype == DType::Float32 ? 2e-5 : 2e-2) << "kernel " << launch.kernel;
    }
  }

  // The largest |out - float64 attention| over every element.
  static double worst_error(const Case& c, const cuda::AttentionCall& a, const std::vector<float>& q, const std::vector<float>& k,
                            const std::vector<float>& v, const std::vector<float>& add, const std::vector<unsigned char>& keep,
                            const std::vector<unsigned char>& out) {
    double worst = 0;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.H; ++h) {
        int64_t kh = c.KH == 1 ? 0 : h / (c.H / c.KH);
        for (int64_t i = 0; i < c.L; ++i) {
          std::vector<double> s(static_cast<size_t>(c.S));
          double top = -INFINITY;
          for (int64_t j = 0; j < c.S; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < c.E; ++e)
              dot += double(q[static_cast<size_t>(((b * c.H + h) * c.L + i) * c.E + e)]) *
                     k[static_cast<size_t>(((b * c.KH + kh) * c.S + j) * c.E + e)];
            dot *= a.scale;
            if (c.mask_kind == 2) dot += add[static_cast<size_t>((b * c.L + i) * c.S + j)];
            bool allowed = !(c.causal && j > i) && (c.mask_kind != 1 || keep[static_cast<size_t>(i * c.S + j)]);
            s[static_cast<size_t>(j)] = allowed ? dot : -INFINITY;
            top = std::max(top, s[static_cast<size_t>(j)]);
          }
          double sum = 0;
          for (double& x : s) sum += (x = top == -INFINITY ? 0.0 : std::exp(x - top));
          for (int64_t e = 0; e < c.Ev; ++e) {
            double want = 0;
            for (int64_t j = 0; j < c.S; ++j)
              want += s[static_cast<size_t>(j)] * v[static_cast<size_t>(((b * c.KH + kh) * c.S + j) * c.Ev + e)];
            want = sum > 0 ? want / sum : 0.0;
            size_t at = static_cast<size_t>(((b * c.H + h) * c.L + i) * c.Ev + e);
            double got = c.dtype == DType::Float32 ? reinterpret_cast<const float*>(out.data())[at]
                                                   : to_float(c.dtype, reinterpret_cast<const uint16_t*>(out.data()), at);
            worst = std::max(worst, std::abs(got - want));
          }
        }
      }
    return worst;
  }

  static std::string* dir_;
  static bool own_dir_;
};
std::string* CudaAttentionEmulated::dir_ = nullptr;
bool CudaAttentionEmulated::own_dir_ = false;

// The emulated kernels are compiled and run uninstrumented (g++ -O1 in a loaded module): the
// sanitizer build runs two cases for the harness and the launch plans, the plain build all.
#ifdef __SANITIZE_ADDRESS__
#define TOROID_PLAIN_BUILD_CASE() GTEST_SKIP() << "the plain build runs this case"
#else
#define TOROID_PLAIN_BUILD_CASE() (void)0
#endif

TEST_F(CudaAttentionEmulated, LengthsOffTheTilesAndAnotherValueSize) {
  TOROID_PLAIN_BUILD_CASE();
  Case c;
  c.B = 2, c.H = 1, c.KH = 1, c.L = 70, c.S = 45, c.E = 64, c.Ev = 40;
  check(c);
}

TEST_F(CudaAttentionEmulated, CausalWithScaleInBf16) {
  TOROID_PLAIN_BUILD_CASE();
  Case c;
  c.dtype = DType::BFloat16, c.H = 2, c.KH = 2, c.L = 33, c.S = 33, c.E = 32, c.Ev = 32, c.causal = true, c.scale = 0.2;
  check(c);
}

TEST_F(CudaAttentionEmulated, GroupedQueryHeadsInF16) {
  TOROID_PLAIN_BUILD_CASE();
  Case c;
  c.dtype = DType::Float16, c.H = 4, c.KH = 2, c.L = 20, c.S = 50, c.E = 16, c.Ev = 16;
  check(c);
}

TEST_F(CudaAttentionEmulated, BoolMaskWithARowOfNoKeys) {
  Case c;
  c.B = 2, c.H = 2, c.KH = 1, c.L = 40, c.S = 37, c.E = 8, c.Ev = 8, c.mask_kind = 1, c.empty_row = true;
  check(c);
  c.dtype = DType::BFloat16, c.E = 12, c.Ev = 12;  // rows the tensor-core kernel reads element by element
  check(c);
}

TEST_F(CudaAttentionEmulated, AdditiveMaskAndTheWidestHeads) {
  TOROID_PLAIN_BUILD_CASE();
  Case c;
  c.H = 2, c.KH = 2, c.L = 9, c.S = 12, c.E = 100, c.Ev = 128, c.mask_kind = 2;
  check(c);
  c.dtype = DType::Float16;
  check(c);
}

TEST_F(CudaAttentionEmulated, SeveralTilesOfQueriesAndKeysInBf16) {
  TOROID_PLAIN_BUILD_CASE();
  Case c;
  c.dtype = DType::BFloat16, c.L = 70, c.S = 130, c.E = 64, c.Ev = 64;
  check(c);
  c.causal = true;
  check(c);
}

TEST_F(CudaAttentionEmulated, NoKeysGivesZeros) {
  Case c;
  c.H = 2, c.KH = 2, c.L = 5, c.S = 0, c.E = 16, c.Ev = 16;
  check(c);
}

}  // namespace
