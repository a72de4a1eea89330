// The library kernels toroid calls instead of generating code (BLAS, oneDNN, cuBLASLt, cuDNN),
// and the table that says which op, dtype and device each one serves. Lowering consults the
// table once; the buffer and its Wrapper IR line carry the choice, so no later layer compares
// op names. This header names no IR type: the executors include it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "toroid/graph/types.h"
#include "toroid/sym/expr.h"

namespace toroid::loop {

enum class LibraryCall : uint8_t {
  Mm,           // out = a @ b
  Bmm,          // out[i] = a[i] @ b[i]
  Addmm,        // out = beta * self + alpha * (a @ b), then the epilogue
  Convolution,  // forward convolution, 1 to 3 spatial dims, optional bias
  // convolution_backward's grad_input (operands grad_output, weight) and grad_weight (operands
  // grad_output, input), one library call each; its grad_bias is a generated reduction.
  ConvolutionBackwardInput,
  ConvolutionBackwardWeight,
  // nonzero on the device: a count (the run's one sync), then the coordinates. Its result size
  // is data-dependent, so the call allocates it (a fallback line that runs a device kernel).
  Nonzero,
  Cumsum,    // along one dim, contiguous (device kernels, as Nonzero)
  Cumprod,
  IndexPut,  // one index tensor over dim 0, atomic adds when accumulating
  Scatter,        // scatter.src and scatter.value: stores (the last writer wins, as PyTorch's)
  ScatterAdd,     // scatter_add: atomic adds
  ScatterReduce,  // scatter_reduce.two: sum, prod, mean, amax, amin, atomically
  IndexAdd,       // index_add: scatter_add of alpha * source with the index broadcast along the other dims
  Sort,           // sort: a stable bitonic sort per line
  Topk,           // topk: sort's first k
  Attention,      // scaled_dot_product_attention: softmax(q k^T * scale + mask) v, one pass over the keys
};
const char* library_call_name(LibraryCall c);

// What runs after an Addmm: _addmm_activation's relu or tanh-gelu.
enum class Epilogue : uint8_t { None, Relu, Gelu };
const char* epilogue_name(Epilogue e);

// The scalar arguments of a library call, symbolic until a run binds them.
struct LibraryParams {
  SymExpr beta = SymExpr::integer(1), alpha = SymExpr::integer(1);  // Addmm
  Epilogue epilogue = Epilogue::None;                               // Addmm
  std::vector<SymExpr> stride, padding, dilation;                   // the convolutions
  SymExpr groups = SymExpr::integer(1);                             // the convolutions
  bool tf32 = false;  // f32 operands may be rounded to TF32 (Mm, Bmm, Addmm, the convolutions)
};

struct LibraryKernel {
  LibraryCall call;
  std::string_view op;  // the ATen op it computes
  uint32_t cpu_dtypes;   // bit (1 << dtype) for each dtype the CPU library takes
  uint32_t cuda_dtypes;  // the same for the GPU library
  unsigned result = 0;   // which of the op's results (convolution_backward's grad_weight: 1)
};

// The library kernel for result `result` of calls of `op` producing `dtype` on `device`, or null
// (the call runs generated code or its reference kernel).
const LibraryKernel* find_library_kernel(std::string_view op, DType dtype, Device device, unsigned result = 0);
// Whether the call runs as a fallback line (the device's kernel of an op that allocates its
// results or updates its first operand), not as an extern line into planned memory.
bool runs_as_fallback(LibraryCall c);
// Whether the call is one of the convolutions (its params carry stride, padding, dilation, groups).
bool is_convolution(LibraryCall c);
// Whether the call's result may differ between runs (atomic adds in a varying order, stores to
// a repeated index where the last writer wins): its sorted form runs when deterministic results
// are asked.
bool order_varies(LibraryCall c);
// Whether the call's result is its first operand with some elements updated (index_put, the
// scatters, index_add): it may run in that operand's memory when nothing else reads it.
bool updates_first_operand(LibraryCall c);

// Whether some device has a library kernel for `op` (for messages: why a call fell back).
bool has_library_kernel(std::string_view op);
// Whether `device` has a library kernel for `op` for some dtype.
bool has_library_kernel(std::string_view op, Device device);

}  // namespace toroid::loop
