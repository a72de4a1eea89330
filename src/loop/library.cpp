#include "toroid/loop/library.h"

namespace toroid::loop {

namespace {

constexpr uint32_t bit(DType d) { return 1u << static_cast<unsigned>(d); }
constexpr uint32_t kBlas = bit(DType::Float32) | bit(DType::Float64);
constexpr uint32_t kCublasLt = kBlas | bit(DType::BFloat16) | bit(DType::Float16);
// The CPU's bf16/f16 products are fp32 BLAS calls on converted operands (runtime/blas.cpp).
constexpr uint32_t kCpuMatmul = kCublasLt;
constexpr uint32_t kOneDnn = bit(DType::Float32);
constexpr uint32_t kCudnn = kCublasLt;
constexpr uint32_t kInts = bit(DType::UInt8) | bit(DType::Int8) | bit(DType::Int16) | bit(DType::Int32) | bit(DType::Int64);
constexpr uint32_t kScanOut = kInts | kCublasLt;
constexpr uint32_t kPut = kCublasLt | bit(DType::Int32) | bit(DType::Int64);
constexpr uint32_t kSortable = kInts | kCublasLt;

// One row per op a library serves. The executors implement every LibraryCall for every dtype
// their device's column names (a test walks this table against them).
constexpr LibraryKernel kTable[] = {
    {LibraryCall::Mm, "aten.mm.default", kCpuMatmul, kCublasLt},
    {LibraryCall::Bmm, "aten.bmm.default", kCpuMatmul, kCublasLt},
    {LibraryCall::Addmm, "aten.addmm.default", kCpuMatmul, kCublasLt},
    {LibraryCall::Addmm, "aten._addmm_activation.default", kCpuMatmul, kCublasLt},
    {LibraryCall::Convolution, "aten.convolution.default", kOneDnn, kCudnn},
    {LibraryCall::ConvolutionBackwardInput, "aten.convolution_backward.default", kOneDnn, kCudnn},
    {LibraryCall::ConvolutionBackwardWeight, "aten.convolution_backward.default", kOneDnn, kCudnn, 1},
    // Kernels of fallback lines: the GPU's device kernels (runtime/cuda/device_kernels.h) and
    // the CPU's typed host loops (runtime/cpu_library.h); other layouts run the reference kernel.
    {LibraryCall::Nonzero, "aten.nonzero.default", bit(DType::Int64), bit(DType::Int64)},
    {LibraryCall::Cumsum, "aten.cumsum.default", kScanOut, kScanOut},
    {LibraryCall::Cumprod, "aten.cumprod.default", kScanOut, kScanOut},
    {LibraryCall::IndexPut, "aten.index_put.default", kPut, kPut},
    {LibraryCall::Scatter, "aten.scatter.src", kPut, kPut},
    {LibraryCall::Scatter, "aten.scatter.value", kPut, kPut},
    {LibraryCall::ScatterAdd, "aten.scatter_add.default", kPut, kPut},
    {LibraryCall::ScatterReduce, "aten.scatter_reduce.two", kPut, kPut},
    {LibraryCall::IndexAdd, "aten.index_add.default", kPut, kPut},
    {LibraryCall::Sort, "aten.sort.default", kSortable, kSortable},
    {LibraryCall::Topk, "aten.topk.default", kSortable, kSortable},
    {LibraryCall::Attention, "aten.scaled_dot_product_attention.default", kCublasLt, kCublasLt & ~bit(DType::Float64)},
};

}  // namespace

const char* library_call_name(LibraryCall c) {
  switch (c) {
    case LibraryCall::Mm: return "mm";
    case LibraryCall::Bmm: return "bmm";
    case LibraryCall::Addmm: return "addmm";
    case LibraryCall::Convolution: return "convolution";
    case LibraryCall::ConvolutionBackwardInput: return "convolution_backward_input";
    case LibraryCall::ConvolutionBackwardWeight: return "convolution_backward_weight";
    case LibraryCall::Nonzero: return "nonzero";
    case LibraryCall::Cumsum: return "cumsum";
    case LibraryCall::Cumprod: return "cumprod";
    case LibraryCall::IndexPut: return "index_put";
    case LibraryCall::Scatter: return "scatter";
    case LibraryCall::ScatterAdd: return "scatter_add";
    case LibraryCall::ScatterReduce: return "scatter_reduce";
    case LibraryCall::IndexAdd: return "index_add";
    case LibraryCall::Sort: return "sort";
    case LibraryCall::Topk: return "topk";
    case LibraryCall::Attention: return "attention";
  }
  return "?";
}

const char* epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::None: return "none";
    case Epilogue::Relu: return "relu";
    case Epilogue::Gelu: return "gelu";
  }
  return "?";
}

bool order_varies(LibraryCall c) {
  return c == LibraryCall::IndexPut || c == LibraryCall::Scatter || c == LibraryCall::ScatterAdd ||
         c == LibraryCall::ScatterReduce || c == LibraryCall::IndexAdd;
}

bool updates_first_operand(LibraryCall c) {
  return c == LibraryCall::IndexPut || c == LibraryCall::Scatter || c == LibraryCall::ScatterAdd ||
         c == LibraryCall::ScatterReduce || c == LibraryCall::IndexAdd;
}

const LibraryKernel* find_library_kernel(std::string_view op, DType dtype, Device device, unsigned result) {
  for (const LibraryKernel& k : kTable)
    if (k.op == op && k.result == result && ((device.is_cuda() ? k.cuda_dtypes : k.cpu_dtypes) & bit(dtype))) return &k;
  return nullptr;
}

bool runs_as_fallback(LibraryCall c) {
  switch (c) {
    case LibraryCall::Mm:
    case LibraryCall::Bmm:
    case LibraryCall::Addmm:
    case LibraryCall::Convolution:
    case LibraryCall::ConvolutionBackwardInput:
    case LibraryCall::ConvolutionBackwardWeight: return false;
    case LibraryCall::Nonzero:
    case LibraryCall::Cumsum:
    case LibraryCall::Cumprod:
    case LibraryCall::IndexPut:
    case LibraryCall::Scatter:
    case LibraryCall::ScatterAdd:
    case LibraryCall::ScatterReduce:
    case LibraryCall::IndexAdd:
    case LibraryCall::Sort:
    case LibraryCall::Topk:
    case LibraryCall::Attention: return true;
  }
  return true;
}

bool is_convolution(LibraryCall c) {
  return c == LibraryCall::Convolution || c == LibraryCall::ConvolutionBackwardInput ||
         c == LibraryCall::ConvolutionBackwardWeight;
}

bool has_library_kernel(std::string_view op, Device device) {
  for (const LibraryKernel& k : kTable)
    if (k.op == op && (device.is_cuda() ? k.cuda_dtypes : k.cpu_dtypes)) return true;
  return false;
}

bool has_library_kernel(std::string_view op) {
  for (const LibraryKernel& k : kTable)
    if (k.op == op) return true;
  return false;
}

}  // namespace toroid::loop
