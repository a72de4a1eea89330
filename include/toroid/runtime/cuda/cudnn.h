// Convolution and its two backward passes through cuDNN 9 (the libcudnn.so.9 shim), loaded at
// run time like the other toolkit libraries: a one-operation graph of its graph API, run by the
// engine its heuristics rank first among those with allowed numerics; where the graph API has
// none (or TOROID_CUDNN_GRAPH=0), its convolution API's algorithms. f32 runs with FMA math
// unless ConvArgs::tf32 lets cuDNN choose TF32 tensor cores (PyTorch's
// torch.backends.cudnn.allow_tf32); bf16 and f16 may use tensor cores and accumulate in f32; f64
// is supported; no graph-API engine that varies between runs (the convolution API's algorithms:
// a deterministic one first, another only where it has none). The plan is made once per shape,
// layout and operand alignment.
// TOROID_LOG=cuda says which API each shape got.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "toroid/graph/types.h"
#include "toroid/runtime/cuda/driver.h"

namespace toroid::runtime::cuda {

bool cudnn_available(std::string* why = nullptr);  // never throws

// Which pass of a convolution y = conv(x, w) a call runs: the forward (writes y), the gradient of
// x (BackwardData: reads dy from y and w, writes dx to x) or the gradient of w (BackwardFilter:
// reads dy from y and x, writes dw to w).
enum class ConvPass : uint8_t { Forward, BackwardData, BackwardFilter };
const char* conv_pass_name(ConvPass p);

// A (not transposed) convolution over 1 to 3 spatial dims, or one of its backward passes. Sizes
// and strides are in elements; x and y may be strided, the weight [k, c / groups, spatial...]
// contiguous or, with 2 spatial dims, channels-last.
struct ConvArgs {
  ConvPass pass = ConvPass::Forward;
  DType dtype = DType::Float32;
  std::vector<int64_t> x_sizes, x_strides;  // [n, c, spatial...]
  std::vector<int64_t> w_sizes, w_strides;  // [k, c / groups, kernel...]
  std::vector<int64_t> y_sizes, y_strides;  // [n, k, out...]
  std::vector<int64_t> stride, padding, dilation;  // one per spatial dim
  int64_t groups = 1;
  // The pass writes one of x, w and y (the pass says which) and reads the other two.
  void* x = nullptr;
  void* w = nullptr;
  const void* bias = nullptr;  // the forward's, optional, [k] contiguous
  void* y = nullptr;
  bool tf32 = false;  // f32 operands may be rounded to TF32 on tensor cores
};

// Whether the weight is described to cuDNN as channels-last (NHWC filter): where its strides
// are (a model converted with .to(memory_format=torch.channels_last): such a weight was refused),
// or where they fit both orders (a depthwise or 1x1 weight) and the input is channels-last, so
// that input, filter and output share one layout (for the convolution API).
bool weight_channels_last(const ConvArgs& a);

// Whether cuDNN can take these arguments (ranks, the weight's layout, sizes that fit its int
// descriptors); the reason in *why otherwise.
bool convolution_supported(const ConvArgs& a, std::string* why);
// Runs on stream s, with a workspace from the device allocator (one per `order` stream, null:
// s, as matmul's); false, having run nothing, when cuDNN has no engine or algorithm for it (the
// convolution API's algorithms refuse some mixes of layouts). UserError naming the shapes when
// cuDNN fails.
[[nodiscard]] bool convolution(const ConvArgs& a, Stream s = nullptr, Stream order = nullptr);

}  // namespace toroid::runtime::cuda
