// Hand-written device kernels for the library calls no generated kernel can do: nonzero (its
// result size only the data knows), the scans (cumsum, cumprod), index_put, the scatters,
// sort / topk and attention. Compiled with NVRTC (through the cubin cache) on first use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "toroid/graph/types.h"
#include "toroid/runtime/cuda/driver.h"
#include "toroid/runtime/cuda/nvrtc.h"

namespace toroid::runtime::cuda {

// A contiguous tensor's elements as nonzero tests them: `esize` bytes each; a float's
// `sign_mask` bits do not make it nonzero (-0.0 is zero; NaN is not).
struct NonzeroInput {
  const void* data = nullptr;
  int64_t numel = 0;
  int esize = 4;
  uint64_t sign_mask = 0;
  std::vector<int64_t> sizes;  // at most kMaxNonzeroDims
};
constexpr size_t kMaxNonzeroDims = 8;

// The kernels' CUDA source: every family, or one ("NONZERO", "SCAN", "SCATTER", "SORT"), as NVRTC
// compiles it on the family's first use in a process.
std::string device_kernels_source(const std::string& family = "");

// dst (contiguous, `esize` bytes per element) = the strided tensor at src (element strides).
void copy_contiguous(const void* src, int esize, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                     void* dst, Stream s);

// How many elements are nonzero: one kernel, then a wait for the stream (the one sync).
int64_t count_nonzero(const NonzeroInput& x, Stream s);
// The coordinates of the nonzero elements in order, element (i, d) at out[d * count + i] (the
// [count, rank] result with strides [1, count], as PyTorch lays it out).
void nonzero_coordinates(const NonzeroInput& x, int64_t count, int64_t* out, Stream s);

// cumsum (prod: cumprod) along the middle dim of contiguous [outer, len, inner] tensors, from
// dtype xt to ot (bool to f64): floats accumulate in double, integers in int64, as the
// reference kernel.
bool scan_supported(DType x, DType out);
void scan(bool prod, const void* x, DType xt, void* out, DType ot, int64_t outer, int64_t len, int64_t inner, Stream s);

// index_put over rows: out[idx[j], :] (+)= values[j, :] for j < n, rows of `row` elements, out
// holding `rows` of them (negative indices count from the end). Accumulation is by atomic adds
// (its order, so float rounding, varies between runs). The first index out of range (nothing
// is written for it) is recorded in `record` (device memory of 3 words, zero: none) as
// {1, rows, index}; the host does not wait.
bool index_put_supported(DType t);
// The same with results that never vary between runs: the n indices sorted stably, then each
// row's values combined in their order (floats in double; without `accumulate` the last wins).
void index_put_rows_deterministic(void* out, DType t, int64_t rows, int64_t row, const int64_t* idx, int64_t n,
                                  const void* values, bool accumulate, uint64_t* record, Stream s);
void index_put_rows(void* out, DType t, int64_t rows, int64_t row, const int64_t* idx, int64_t n, const void* values,
                    bool accumulate, uint64_t* record, Stream s);

// scatter, scatter_add, scatter_reduce and index_add along `dim` into contiguous `out`: for each
// element of the int64 index (any strides), out at its coordinates with coordinate `dim`
// replaced by the index gets src at its coordinates (src's strides, all 0 for a scalar; src at
// least the index's sizes) times `alpha`: stored, or combined by atomics (adds; products,
// maxima and minima by compare-and-swap loops; the order, so float rounding, varies between
// runs), dtypes as index_put. `count` (int32 per element of out, zeroed; optional) counts each
// element's contributions. An index out of range is recorded as index_put's.
enum class ScatterOp : int { Store = -1, Add = 0, Mul = 1, Max = 2, Min = 3 };
struct ScatterArgs {
  void* out = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> out_sizes, out_strides;
  const int64_t* index = nullptr;
  std::vector<int64_t> index_sizes, index_strides;
  const void* src = nullptr;
  std::vector<int64_t> src_strides;
  int64_t dim = 0;
  ScatterOp op = ScatterOp::Store;
  double alpha = 1.0;
  int32_t* count = nullptr;
  uint64_t* record = nullptr;
};
void scatter_elements(const ScatterArgs& a, Stream s);
// The same scatter with results that never vary between runs (torch.use_deterministic_algorithms):
// the contributions' positions in out sorted stably, then each position's contributions
// combined in their order (floats in double); a store keeps the last. `mean` divides each
// position with contributions by their number (+1 with `include_self`); `count` is not used.
void scatter_deterministic(const ScatterArgs& a, bool mean, bool include_self, Stream s);
// scatter_reduce's mean: out[i] /= count[i] (+1 with `include_self`) where count[i] > 0 (floor
// division for integers), over `n` contiguous elements.
void scatter_mean(void* out, DType t, int64_t n, const int32_t* count, bool include_self, Stream s);

// sort and topk along the middle dim of a contiguous [outer, len, inner] tensor: the first `k`
// of each line's stable order (ascending, or descending; NaN largest), values (x's dtype,
// copied exactly) and int64 positions into contiguous [outer, k, inner] results. A bitonic
// network, in shared memory for lines of up to 2048 and for the short steps of longer ones.
bool sort_supported(DType t);
void sort_lines(const void* x, DType t, int64_t outer, int64_t len, int64_t inner, int64_t k, bool descending,
                void* values, int64_t* indices, Stream s);

// scaled_dot_product_attention (device_attention.cpp): out[b, h] = softmax(q[b, h] k[b, h / group]^T
// * scale + mask) v[b, h / group], each tensor as (batch, head, row, col) element strides (0 where
// a dim broadcasts), f32 / bf16 / f16 with float accumulation; a row whose keys are all masked
// gives zeros. The kernel takes last dims of up to 128 and at most 65,535 batch x heads.
struct AttentionCall {
  DType dtype = DType::Float32;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* mask = nullptr;  // none, bool (allowed where true), or additive in `dtype`
  bool mask_bool = false;
  DType mask_dtype = DType::Float32;
  void* out = nullptr;
  int64_t q_strides[4] = {}, k_strides[4] = {}, v_strides[4] = {}, mask_strides[4] = {}, out_strides[4] = {};
  int64_t batch = 1, heads = 1, L = 0, S = 0, E = 0, Ev = 0, group = 1;
  double scale = 1.0;
  bool causal = false;
};
bool attention_supported(const AttentionCall& a);
void attention(const AttentionCall& a, Stream s);
// What attention() launches on a device of sm_<arch>: the kernel's name, its one parameter (a
// struct, as bytes), the grid (x: blocks of query rows, 64 on the tensor-core kernels, which
// sm_80 and later take for bf16 and f16 and for fp32 of up to 64 columns, 32 on the others;
// z: batch x heads) and the block.
struct AttentionLaunch {
  std::string kernel;
  std::vector<unsigned char> params;
  unsigned grid_x = 1, grid_z = 1, block_x = 128;
};
AttentionLaunch attention_launch(const AttentionCall& a, int arch);
std::string attention_kernel_source(DType dtype);  // every kernel of one dtype
// One kernel: head size `dims` (16, 32, 64 or 128), on tensor cores or not (what
// attention_launch names for a call).
std::string attention_kernel_source(DType dtype, int dims, bool tensor_cores);
// The request (source and name) for the one kernel attention() launches on sm_<arch> for operands of
// `dtype` whose query/key and value heads are E and Ev wide; none where no device kernel takes
// them. Compiling it ahead (with the program's kernels) puts it in the cubin cache, where its
// first launch finds it.
std::optional<CubinRequest> attention_kernel_for(DType dtype, int64_t E, int64_t Ev, int arch);

}  // namespace toroid::runtime::cuda
