// Convolution through oneDNN (f32, 1-3 spatial dims, groups, stride, padding, dilation), on
// strided views: oneDNN reads and writes the tensors' own layouts.
#pragma once

#include <cstdint>
#include <vector>

#include "toroid/ops/host_tensor.h"

namespace toroid::runtime {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// out = conv(input, weight) + bias (bias may be undefined). Primitives are cached by shape.
void onednn_convolution(const ops::HostTensor& input, const ops::HostTensor& weight, const ops::HostTensor* bias,
                        const ConvParams& p, const ops::HostTensor& out);

}  // namespace toroid::runtime
