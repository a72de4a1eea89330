// Convolution and its two backward passes through oneDNN (f32, 1-3 spatial dims, groups, stride,
// padding, dilation), on strided views: oneDNN reads and writes the tensors' own layouts.
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
// The gradients of out = conv(input, weight): grad_input from grad_output and the weight, and
// grad_weight from grad_output and the input (convolution_backward's first two results).
void onednn_convolution_backward_input(const ops::HostTensor& grad_output, const ops::HostTensor& weight,
                                       const ConvParams& p, const ops::HostTensor& grad_input);
void onednn_convolution_backward_weight(const ops::HostTensor& grad_output, const ops::HostTensor& input,
                                        const ConvParams& p, const ops::HostTensor& grad_weight);

}  // namespace toroid::runtime
