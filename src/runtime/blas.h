// Matrix products through CBLAS (OpenBLAS), on f32 and f64 strided views.
#pragma once

#include "toroid/ops/host_tensor.h"

namespace toroid::runtime {

void blas_mm(const ops::HostTensor& a, const ops::HostTensor& b, const ops::HostTensor& out);
void blas_bmm(const ops::HostTensor& a, const ops::HostTensor& b, const ops::HostTensor& out);
// out = beta * bias (broadcast) + alpha * a @ b; bias is ignored when beta is 0, as in PyTorch.
void blas_addmm(const ops::HostTensor& bias, const ops::HostTensor& a, const ops::HostTensor& b, double beta,
                double alpha, const ops::HostTensor& out);
// In place on a contiguous f32/f64 matmul result: relu, or gelu's tanh approximation
// (_addmm_activation).
void activate(const ops::HostTensor& out, bool gelu);

}  // namespace toroid::runtime
