// Matrix multiplication through cuBLASLt, loaded at run time (libcublasLt.so.13 or
// libcublasLt.so). toroid's tensors are row-major; cuBLASLt's are column-major, so a row-major
// C = A @ B is computed as the column-major C^T = B^T @ A^T.
#pragma once

#include <cstdint>
#include <string>

#include "toroid/graph/types.h"
#include "toroid/runtime/cuda/driver.h"

namespace toroid::runtime::cuda {

bool cublaslt_available(std::string* why = nullptr);  // never throws

// A batch of row-major matrices: element (b, i, j) is at ptr + (b*batch_stride + i*row_stride
// + j*col_stride) elements. One of row_stride and col_stride must be 1 (the other at least the
// size of that dim), else the caller copies first (matmul_layout_ok says).
struct MatrixRef {
  const void* ptr = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 1;
  int64_t batch_stride = 0;  // 0: the same matrix for every batch entry (broadcast)
};
bool matmul_layout_ok(const MatrixRef& m);

enum class Epilogue { None, Relu, Gelu };  // GELU is the tanh approximation (cuBLASLt's GELU)

struct MatmulArgs {
  DType dtype = DType::Float32;  // f32, bf16 or f16 (fp32 accumulation); f64 too
  int64_t batch = 1;
  MatrixRef a, b;      // [m, k] and [k, n]
  void* c = nullptr;   // [m, n] output, row-major contiguous per batch entry
  int64_t c_batch_stride = 0;  // 0: m * n
  // Optional bias over the columns (length n), added before the activation.
  const void* bias = nullptr;
  // c = activation(alpha * a @ b + beta * c_in + bias), c_in read from c when beta != 0.
  float alpha = 1.0f, beta = 0.0f;
  Epilogue epilogue = Epilogue::None;
  bool tf32 = false;  // f32: products of operands rounded to TF32 on tensor cores (fp32 accumulation)
};

// Runs on stream s, with a workspace from the device allocator as large as the algorithm needs,
// one per `order` stream: the stream whose work this call is ordered with (null: s). A capture
// passes the stream its graph replays on, so capturing takes no workspace of its own. UserError
// (naming the shapes and dtype) when cuBLASLt has no algorithm for it.
void matmul(const MatmulArgs& args, Stream s = nullptr, Stream order = nullptr);

}  // namespace toroid::runtime::cuda
