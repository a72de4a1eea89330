#include "toroid/runtime/cuda/cublaslt.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "toolkit_library.h"
#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"

namespace toroid::runtime::cuda {

namespace {

struct CublasLt {
  std::string why;  // empty when loaded
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtGetStatusName) status_name = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

const CublasLt& lib() {
  static std::once_flag once;
  static CublasLt l;
  std::call_once(once, [] {
    void* h = toolkit::open_library("libcublasLt", "13", &l.why);
    if (!h) return;
    std::string missing;
    toolkit::bind_symbol(h, "cublasLtCreate", l.create, &missing);
    toolkit::bind_symbol(h, "cublasLtGetStatusName", l.status_name, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulDescCreate", l.desc_create, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulDescSetAttribute", l.desc_set, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulDescDestroy", l.desc_destroy, &missing);
    toolkit::bind_symbol(h, "cublasLtMatrixLayoutCreate", l.layout_create, &missing);
    toolkit::bind_symbol(h, "cublasLtMatrixLayoutSetAttribute", l.layout_set, &missing);
    toolkit::bind_symbol(h, "cublasLtMatrixLayoutDestroy", l.layout_destroy, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulPreferenceCreate", l.pref_create, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulPreferenceSetAttribute", l.pref_set, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulPreferenceDestroy", l.pref_destroy, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmulAlgoGetHeuristic", l.heuristic, &missing);
    toolkit::bind_symbol(h, "cublasLtMatmul", l.matmul, &missing);
    if (!missing.empty()) l.why = "libcublasLt lacks " + missing;
  });
  return l;
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The most workspace an algorithm may ask for: kWorkspaceBytes, or $TOROID_CUBLASLT_WORKSPACE_MIB
// (a tuning knob: less memory, possibly slower algorithms).
size_t max_workspace_bytes() {
  static const size_t bytes = [] {
    std::optional<int64_t> mib = env_count("TOROID_CUBLASLT_WORKSPACE_MIB");
    return mib ? std::min(static_cast<size_t>(*mib) << 20, kWorkspaceBytes) : kWorkspaceBytes;
  }();
  return bytes;
}

// How a row-major operand reads as a column-major matrix: its transpose stored with
// ld = row_stride (col_stride 1), or the operand itself with ld = col_stride (row_stride 1), then
// used transposed. The stride of a dim of size 1 never matters.
struct ColumnMajor {
  bool transposed = false;
  int64_t rows = 0, cols = 0, ld = 0;  // of the stored column-major matrix
};

std::optional<ColumnMajor> column_major(const MatrixRef& m) {
  if (m.rows < 0 || m.cols < 0 || m.batch_stride < 0) return std::nullopt;
  if ((m.col_stride == 1 || m.cols <= 1) && (m.rows <= 1 || m.row_stride >= std::max<int64_t>(m.cols, 1)))
    return ColumnMajor{false, m.cols, m.rows, m.rows <= 1 ? std::max<int64_t>(m.cols, 1) : m.row_stride};
  if ((m.row_stride == 1 || m.rows <= 1) && (m.cols <= 1 || m.col_stride >= std::max<int64_t>(m.rows, 1)))
    return ColumnMajor{true, m.rows, m.cols, m.cols <= 1 ? std::max<int64_t>(m.rows, 1) : m.col_stride};
  return std::nullopt;
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Float32: return "f32";
    case DType::BFloat16: return "bf16";
    case DType::Float16: return "f16";
    case DType::Float64: return "f64";
    default: return "unsupported dtype";
  }
}

std::string describe(const MatmulArgs& a) {
  auto dims = [](const MatrixRef& m) {
    return "[" + std::to_string(m.rows) + "x" + std::to_string(m.cols) + " strides " + std::to_string(m.row_stride) +
           "," + std::to_string(m.col_stride) + "]";
  };
  const char* epi[] = {"", " relu", " gelu"};
  return std::string(dtype_name(a.dtype)) + " batch " + std::to_string(a.batch) + " " + dims(a.a) + " @ " +
         dims(a.b) + (a.bias ? " +bias" : "") + epi[static_cast<int>(a.epilogue)];
}

void check(cublasStatus_t s, const char* call, const MatmulArgs& args) {
  if (s != CUBLAS_STATUS_SUCCESS) user_error(std::string(call) + ": " + lib().status_name(s) + ": " + describe(args));
}

// The largest power of two (at most 256) that divides the address: cuBLASLt's heuristic assumes
// 256-byte aligned buffers unless told otherwise, and views of tensors need not be.
uint32_t alignment(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

// Descriptors and the algorithm for one problem shape, made once and kept for the life of the
// process (as is the handle: destroying them at exit could follow the CUDA context's teardown).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;  // what the algorithm needs (at most max_workspace_bytes())
};

struct State {
  std::mutex mutex;  // guards everything below, and a plan's descriptor from its set to its use
  cublasLtHandle_t handle = nullptr;
  std::unordered_map<std::string, Plan> plans;
  std::map<Stream, DeviceMemory> workspaces;  // one per ordering stream: matmuls on two streams may overlap
  // Workspaces outgrown: kept, as a CUDA graph captured with one may still replay it.
  std::vector<DeviceMemory> outgrown;
};

State& state() {
  static State* s = new State;  // never destroyed, see Plan
  return *s;
}

struct Types {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
};

Types types_of(DType d, bool tf32) {
  switch (d) {
    // Plain fp32 products unless TF32 is allowed (torch.backends.cuda.matmul.allow_tf32).
    case DType::Float32: return {CUDA_R_32F, CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case DType::BFloat16: return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::Float16: return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::Float64: return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    default: user_error(std::string("cuBLASLt matmul: unsupported dtype ") + dtype_name(d));
  }
}

cublasLtEpilogue_t epilogue_of(const MatmulArgs& args) {
  bool bias = args.bias != nullptr;
  switch (args.epilogue) {
    case Epilogue::None: return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::Relu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Epilogue::Gelu: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  }
  TOROID_INTERNAL_ERROR("unknown epilogue");
}

// Builds the plan for one problem shape; on failure nothing that was created is left behind.
Plan make_plan(cublasLtHandle_t handle, const MatmulArgs& args, const ColumnMajor& a, const ColumnMajor& b,
               int64_t m, int64_t n, int64_t c_batch_stride) {
  const CublasLt& l = lib();
  Types t = types_of(args.dtype, args.tf32);
  Plan p;
  cublasLtMatmulPreference_t pref = nullptr;
  auto release = [&] {
    if (pref) l.pref_destroy(pref);
    for (cublasLtMatrixLayout_t layout : {p.a, p.b, p.c})
      if (layout) l.layout_destroy(layout);
    if (p.desc) l.desc_destroy(p.desc);
  };
  try {
    // Column-major C^T[n,m] = op(B^T)[n,k] · op(A^T)[k,m]: cuBLASLt's A is our B, its B our A.
    check(l.desc_create(&p.desc, t.compute, t.scale), "cublasLtMatmulDescCreate", args);
    auto set_desc = [&](cublasLtMatmulDescAttributes_t attr, const auto& value) {
      check(l.desc_set(p.desc, attr, &value, sizeof value), "cublasLtMatmulDescSetAttribute", args);
    };
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N);
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue_of(args));
    if (args.bias) {
      // cuBLASLt's bias runs along the rows of the column-major D: over the columns of our C.
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, t.data);
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias);  // the heuristic reads its alignment
    }

    auto layout = [&](cublasLtMatrixLayout_t& out, const ColumnMajor& cm, int64_t batch_stride) {
      check(l.layout_create(&out, t.data, static_cast<uint64_t>(cm.rows), static_cast<uint64_t>(cm.cols), cm.ld),
            "cublasLtMatrixLayoutCreate", args);
      if (args.batch > 1) {
        auto count = static_cast<int32_t>(args.batch);
        check(l.layout_set(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
              "cublasLtMatrixLayoutSetAttribute", args);
        check(l.layout_set(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof batch_stride),
              "cublasLtMatrixLayoutSetAttribute", args);
      }
    };
    layout(p.a, b, args.b.batch_stride);
    layout(p.b, a, args.a.batch_stride);
    layout(p.c, ColumnMajor{false, n, m, n}, c_batch_stride);

    check(l.pref_create(&pref), "cublasLtMatmulPreferenceCreate", args);
    auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const auto& value) {
      check(l.pref_set(pref, attr, &value, sizeof value), "cublasLtMatmulPreferenceSetAttribute", args);
    };
    set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{max_workspace_bytes()});
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment(args.b.ptr));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment(args.a.ptr));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment(args.c));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment(args.c));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check(l.heuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found),
          "cublasLtMatmulAlgoGetHeuristic", args);
    if (found == 0) check(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulAlgoGetHeuristic (no algorithm)", args);
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  } catch (...) {
    release();
    throw;
  }
  l.pref_destroy(pref);
  return p;
}

// What the plan depends on: everything but the pointers' values (only their alignments).
std::string plan_key(const MatmulArgs& args, const ColumnMajor& a, const ColumnMajor& b, int64_t c_batch_stride) {
  std::array<int64_t, 19> v = {static_cast<int64_t>(args.dtype), args.tf32, args.batch, a.rows, a.cols, a.ld, a.transposed,
                               args.a.batch_stride, b.rows, b.cols, b.ld, b.transposed, args.b.batch_stride,
                               c_batch_stride, static_cast<int64_t>(args.epilogue),
                               args.bias ? alignment(args.bias) : 0, alignment(args.a.ptr), alignment(args.b.ptr),
                               alignment(args.c)};
  return std::string(reinterpret_cast<const char*>(v.data()), sizeof v);
}

}  // namespace

bool cublaslt_available(std::string* why) {
  try {
    const CublasLt& l = lib();
    if (why) *why = l.why;
    return l.why.empty();
  } catch (const std::exception& e) {  // call_once's own failure (std::system_error)
    if (why) *why = e.what();
    return false;
  }
}

bool matmul_layout_ok(const MatrixRef& m) { return column_major(m).has_value(); }

void matmul(const MatmulArgs& args, Stream s, Stream order) {
  if (const CublasLt& l = lib(); !l.why.empty()) user_error("cuBLASLt is unavailable: " + l.why);
  if (args.a.cols != args.b.rows)
    user_error("cuBLASLt matmul: inner dimensions differ: " + describe(args));
  std::optional<ColumnMajor> a = column_major(args.a), b = column_major(args.b);
  if (!a || !b) user_error("cuBLASLt matmul: an operand is neither row- nor column-contiguous: " + describe(args));
  int64_t m = args.a.rows, n = args.b.cols;
  if (args.batch <= 0 || m == 0 || n == 0) return;
  int64_t c_batch_stride = args.c_batch_stride != 0 ? args.c_batch_stride : m * n;
  device();  // makes the context current on this thread, for the handle and the launch
  if (!s) s = default_stream();

  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  const CublasLt& l = lib();
  if (!st.handle) check(l.create(&st.handle), "cublasLtCreate", args);
  std::string key = plan_key(args, *a, *b, c_batch_stride);
  auto it = st.plans.find(key);
  if (it == st.plans.end()) it = st.plans.emplace(key, make_plan(st.handle, args, *a, *b, m, n, c_batch_stride)).first;
  const Plan& p = it->second;
  if (args.bias)
    check(l.desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &args.bias, sizeof args.bias),
          "cublasLtMatmulDescSetAttribute", args);
  DeviceMemory& ws = st.workspaces[order ? order : s];
  if (p.workspace > 0 && (!ws || ws->nbytes < p.workspace)) {
    if (ws) st.outgrown.push_back(std::move(ws));
    ws = DeviceAllocator::global().allocate(p.workspace, s);
  }

  double alpha64 = args.alpha, beta64 = args.beta;
  bool f64 = args.dtype == DType::Float64;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &args.alpha;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &args.beta;
  check(l.matmul(st.handle, p.desc, alpha, args.b.ptr, p.a, args.a.ptr, p.b, beta, args.c, p.c, args.c, p.c, &p.algo,
                 p.workspace ? ws->ptr : nullptr, p.workspace, static_cast<cudaStream_t>(s)),
        "cublasLtMatmul", args);
}

}  // namespace toroid::runtime::cuda
