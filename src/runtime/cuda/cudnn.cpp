#include "toroid/runtime/cuda/cudnn.h"

#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <tuple>

#include "toroid/ops/meta_util.h"
#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::runtime::cuda {

namespace {

bool laid_out_as(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, MemoryFormat f) {
  return sizes.size() == strides.size() && ops::meta::is_contiguous_as(sizes, strides, f);
}

}  // namespace

const char* conv_pass_name(ConvPass p) {
  switch (p) {
    case ConvPass::Forward: return "convolution";
    case ConvPass::BackwardData: return "convolution's input gradient";
    case ConvPass::BackwardFilter: return "convolution's weight gradient";
  }
  return "?";
}

bool weight_channels_last(const ConvArgs& a) {
  return laid_out_as(a.w_sizes, a.w_strides, MemoryFormat::ChannelsLast) &&
         (!laid_out_as(a.w_sizes, a.w_strides, MemoryFormat::Contiguous) ||
          laid_out_as(a.x_sizes, a.x_strides, MemoryFormat::ChannelsLast));
}

}  // namespace toroid::runtime::cuda

#if __has_include(<cudnn.h>)
// The convolution entry points are marked deprecated in cuDNN 9 (in favour of its graph API)
// but are supported; they are what a single forward convolution needs.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>

#include "toolkit_library.h"

namespace toroid::runtime::cuda {

namespace {

struct Cudnn {
  std::string why;  // empty when loaded
  decltype(&::cudnnGetErrorString) error_string = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnSetStream) set_stream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) tensor_create = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) tensor_set = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) tensor_destroy = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) filter_create = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) filter_set = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) filter_destroy = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) conv_create = nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) conv_set = nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) conv_groups = nullptr;
  decltype(&::cudnnSetConvolutionMathType) conv_math = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) conv_destroy = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) algorithms = nullptr;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize) workspace_size = nullptr;
  decltype(&::cudnnConvolutionForward) forward = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7) data_algorithms = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataWorkspaceSize) data_workspace_size = nullptr;
  decltype(&::cudnnConvolutionBackwardData) backward_data = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterAlgorithm_v7) filter_algorithms = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterWorkspaceSize) filter_workspace_size = nullptr;
  decltype(&::cudnnConvolutionBackwardFilter) backward_filter = nullptr;
  decltype(&::cudnnAddTensor) add_tensor = nullptr;
  // The graph (backend) API; absent symbols leave only the convolution API.
  decltype(&::cudnnBackendCreateDescriptor) backend_create = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) backend_destroy = nullptr;
  decltype(&::cudnnBackendSetAttribute) backend_set = nullptr;
  decltype(&::cudnnBackendGetAttribute) backend_get = nullptr;
  decltype(&::cudnnBackendFinalize) backend_finalize = nullptr;
  decltype(&::cudnnBackendExecute) backend_execute = nullptr;
  bool graph_api = false;
};

const Cudnn& lib() {
  static std::once_flag once;
  static Cudnn l;
  std::call_once(once, [] {
    void* h = toolkit::open_library("libcudnn", "9", &l.why);
    if (!h) return;
    std::string missing;
    toolkit::bind_symbol(h, "cudnnGetErrorString", l.error_string, &missing);
    toolkit::bind_symbol(h, "cudnnCreate", l.create, &missing);
    toolkit::bind_symbol(h, "cudnnSetStream", l.set_stream, &missing);
    toolkit::bind_symbol(h, "cudnnCreateTensorDescriptor", l.tensor_create, &missing);
    toolkit::bind_symbol(h, "cudnnSetTensorNdDescriptor", l.tensor_set, &missing);
    toolkit::bind_symbol(h, "cudnnDestroyTensorDescriptor", l.tensor_destroy, &missing);
    toolkit::bind_symbol(h, "cudnnCreateFilterDescriptor", l.filter_create, &missing);
    toolkit::bind_symbol(h, "cudnnSetFilterNdDescriptor", l.filter_set, &missing);
    toolkit::bind_symbol(h, "cudnnDestroyFilterDescriptor", l.filter_destroy, &missing);
    toolkit::bind_symbol(h, "cudnnCreateConvolutionDescriptor", l.conv_create, &missing);
    toolkit::bind_symbol(h, "cudnnSetConvolutionNdDescriptor", l.conv_set, &missing);
    toolkit::bind_symbol(h, "cudnnSetConvolutionGroupCount", l.conv_groups, &missing);
    toolkit::bind_symbol(h, "cudnnSetConvolutionMathType", l.conv_math, &missing);
    toolkit::bind_symbol(h, "cudnnDestroyConvolutionDescriptor", l.conv_destroy, &missing);
    toolkit::bind_symbol(h, "cudnnGetConvolutionForwardAlgorithm_v7", l.algorithms, &missing);
    toolkit::bind_symbol(h, "cudnnGetConvolutionForwardWorkspaceSize", l.workspace_size, &missing);
    toolkit::bind_symbol(h, "cudnnConvolutionForward", l.forward, &missing);
    toolkit::bind_symbol(h, "cudnnGetConvolutionBackwardDataAlgorithm_v7", l.data_algorithms, &missing);
    toolkit::bind_symbol(h, "cudnnGetConvolutionBackwardDataWorkspaceSize", l.data_workspace_size, &missing);
    toolkit::bind_symbol(h, "cudnnConvolutionBackwardData", l.backward_data, &missing);
    toolkit::bind_symbol(h, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", l.filter_algorithms, &missing);
    toolkit::bind_symbol(h, "cudnnGetConvolutionBackwardFilterWorkspaceSize", l.filter_workspace_size, &missing);
    toolkit::bind_symbol(h, "cudnnConvolutionBackwardFilter", l.backward_filter, &missing);
    toolkit::bind_symbol(h, "cudnnAddTensor", l.add_tensor, &missing);
    if (!missing.empty()) l.why = "libcudnn lacks " + missing;
    std::string no_graph;
    toolkit::bind_symbol(h, "cudnnBackendCreateDescriptor", l.backend_create, &no_graph);
    toolkit::bind_symbol(h, "cudnnBackendDestroyDescriptor", l.backend_destroy, &no_graph);
    toolkit::bind_symbol(h, "cudnnBackendSetAttribute", l.backend_set, &no_graph);
    toolkit::bind_symbol(h, "cudnnBackendGetAttribute", l.backend_get, &no_graph);
    toolkit::bind_symbol(h, "cudnnBackendFinalize", l.backend_finalize, &no_graph);
    toolkit::bind_symbol(h, "cudnnBackendExecute", l.backend_execute, &no_graph);
    l.graph_api = no_graph.empty();
  });
  return l;
}

std::string shape(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string describe(const ConvArgs& a) {
  return std::string(dtype_short_name(a.dtype)) + " " + conv_pass_name(a.pass) + " of " + shape(a.x_sizes) +
         " by " + shape(a.w_sizes) + " (stride " + shape(a.stride) + ", padding " + shape(a.padding) +
         ", dilation " + shape(a.dilation) + ", groups " + std::to_string(a.groups) + ")";
}

void check(cudnnStatus_t st, const char* call, const ConvArgs& a) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  user_error(std::string(call) + ": " + lib().error_string(st) + ", for the " + describe(a));
}

cudnnDataType_t data_type(DType d) {
  switch (d) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

// cuDNN wants at least 4 dims: a 1-D convolution runs as 2-D over a height of 1.
std::vector<int> dims4(const std::vector<int64_t>& v, int64_t fill) {
  std::vector<int> out(v.begin(), v.end());
  if (out.size() == 3) out.insert(out.begin() + 2, static_cast<int>(fill));
  return out;
}

std::vector<int> spatial2(const std::vector<int64_t>& v, int fill) {
  std::vector<int> out(v.begin(), v.end());
  if (out.size() == 1) out.insert(out.begin(), fill);
  return out;
}

// A call's descriptors, made once per shape and layout (with its plan) and kept.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~Descriptors() {
    const Cudnn& l = lib();
    if (x) l.tensor_destroy(x);
    if (y) l.tensor_destroy(y);
    if (bias) l.tensor_destroy(bias);
    if (w) l.filter_destroy(w);
    if (conv) l.conv_destroy(conv);
  }
};

void set_tensor(cudnnTensorDescriptor_t d, const ConvArgs& a, const std::vector<int64_t>& sizes,
                const std::vector<int64_t>& strides) {
  std::vector<int> dims = dims4(sizes, 1);
  // The inserted height of 1 gets the width's extent as its stride (any value is valid).
  std::vector<int> st(strides.begin(), strides.end());
  if (st.size() == 3) st.insert(st.begin() + 2, static_cast<int>(strides[2] * sizes[2]));
  check(lib().tensor_set(d, data_type(a.dtype), static_cast<int>(dims.size()), dims.data(), st.data()),
        "cudnnSetTensorNdDescriptor", a);
}

// One descriptor of cuDNN's graph API, destroyed with its owner.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type) {
    if (lib().backend_create(type, &d_) != CUDNN_STATUS_SUCCESS) d_ = nullptr;
  }
  ~BackendDescriptor() {
    if (d_) lib().backend_destroy(d_);
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  // Sets attributes (each call: name, type, count, values), then finalizes; false on an error.
  bool set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    return d_ && lib().backend_set(d_, name, type, count, values) == CUDNN_STATUS_SUCCESS;
  }
  bool set(cudnnBackendAttributeName_t name, const BackendDescriptor& other) {
    cudnnBackendDescriptor_t o = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  }
  bool finalize() { return d_ && lib().backend_finalize(d_) == CUDNN_STATUS_SUCCESS; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};
using Backend = std::unique_ptr<BackendDescriptor>;

// The operands' ids in a graph plan's variant pack.
constexpr int64_t kX = 1, kW = 2, kY = 3;

// A convolution as a one-operation graph of cuDNN's graph API: the engine its heuristics rank
// first among those whose numerics PyTorch's would allow, finalized into an execution plan.
// The graph API reaches engines the convolution API's algorithms do not (depthwise NHWC kernels:
// ConvNeXt's 7x7 ran ~190 µs as the grouped direct kernel, where PyTorch's graph-API call gets
// ~23 µs).
struct GraphPlan {
  std::vector<Backend> keep;  // the graph's descriptors, alive as long as its plan
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
  std::string engine;  // why the graph API was not used, when plan is null
};

// The largest power of two up to 16 that divides the address (cuDNN's vectorized loads need it).
int64_t alignment(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 16;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

Backend graph_tensor(const ConvArgs& a, int64_t id, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& strides, const void* data) {
  std::vector<int64_t> dims(sizes), st(strides);
  if (dims.size() == 3) {  // 1-D: a height of 1, as for the convolution API
    dims.insert(dims.begin() + 2, 1);
    st.insert(st.begin() + 2, strides[2] * sizes[2]);
  }
  cudnnDataType_t type = data_type(a.dtype);
  int64_t align = alignment(data);
  auto t = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  bool ok = t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type) &&
            t->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data()) &&
            t->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(st.size()), st.data()) &&
            t->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id) &&
            t->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align) && t->finalize();
  return ok ? std::move(t) : nullptr;
}

// Whether an engine's numerical notes are allowed for these arguments: f32 keeps to FMA math
// unless TF32 is allowed (no tensor cores, no inputs converted down), f64 always; no engine
// reduces in reduced precision or varies between runs.
bool numerics_allowed(const ConvArgs& a, cudnnBackendDescriptor_t config) {
  const Cudnn& l = lib();
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (!e || l.backend_get(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) !=
                CUDNN_STATUS_SUCCESS)
    return false;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (l.backend_get(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                    notes) != CUDNN_STATUS_SUCCESS)
    return false;
  bool exact = a.dtype == DType::Float64 || (a.dtype == DType::Float32 && !a.tf32);
  for (int64_t i = 0; i < n; ++i) {
    cudnnBackendNumericalNote_t note = notes[i];
    if (note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION || note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
      return false;
    if (exact && (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
      return false;
  }
  return true;
}

// The operation descriptor of a pass and its attributes' names for x, w and y (or their
// gradients), the convolution, alpha and beta.
struct OpAttributes {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

OpAttributes op_attributes(ConvPass p) {
  switch (p) {
    case ConvPass::BackwardData:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    case ConvPass::BackwardFilter:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
    case ConvPass::Forward: break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
}

GraphPlan make_graph_plan(cudnnHandle_t handle, const ConvArgs& a) {
  GraphPlan g;
  const Cudnn& l = lib();
  auto fail = [&](const std::string& why) {
    g.plan = nullptr;
    g.engine = why;
    return std::move(g);
  };
  if (!l.graph_api) return fail("libcudnn has no graph API");
  // The engines' layout checks read the strides of size-1 dims too (a depthwise weight's one
  // input channel): a dense operand is described with the strides of its layout's order.
  bool nhwc = laid_out_as(a.x_sizes, a.x_strides, MemoryFormat::ChannelsLast);
  auto canonical = [](const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, bool channels_last) {
    MemoryFormat f = channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
    return laid_out_as(sizes, strides, f) ? ops::meta::format_strides(sizes, f) : strides;
  };
  Backend x = graph_tensor(a, kX, a.x_sizes, canonical(a.x_sizes, a.x_strides, nhwc), a.x),
          y = graph_tensor(a, kY, a.y_sizes, canonical(a.y_sizes, a.y_strides, nhwc), a.y),
          w = graph_tensor(a, kW, a.w_sizes, canonical(a.w_sizes, a.w_strides, weight_channels_last(a)), a.w);
  if (!x || !y || !w) return fail("a tensor descriptor was refused");
  std::vector<int> pad32 = spatial2(a.padding, 0), stride32 = spatial2(a.stride, 1), dil32 = spatial2(a.dilation, 1);
  std::vector<int64_t> pad(pad32.begin(), pad32.end()), stride(stride32.begin(), stride32.end()),
      dil(dil32.begin(), dil32.end());
  int64_t spatial = static_cast<int64_t>(pad.size());
  cudnnDataType_t compute = a.dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  auto conv = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  if (!conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) ||
      !conv->set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) ||
      !conv->set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial) ||
      !conv->set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, dil.data()) ||
      !conv->set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, stride.data()) ||
      !conv->set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, pad.data()) ||
      !conv->set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, pad.data()) || !conv->finalize())
    return fail("the convolution descriptor was refused");
  OpAttributes names = op_attributes(a.pass);
  auto op = std::make_unique<BackendDescriptor>(names.type);
  double one64 = 1.0, zero64 = 0.0;
  float one32 = 1.0f, zero32 = 0.0f;
  bool f64 = a.dtype == DType::Float64;
  cudnnBackendAttributeType_t scalar = f64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  if (!op->set(names.x, *x) || !op->set(names.w, *w) || !op->set(names.y, *y) || !op->set(names.conv, *conv) ||
      !op->set(names.alpha, scalar, 1, f64 ? static_cast<const void*>(&one64) : &one32) ||
      !op->set(names.beta, scalar, 1, f64 ? static_cast<const void*>(&zero64) : &zero32) || !op->finalize())
    return fail("the convolution operation was refused");
  auto graph = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnnBackendDescriptor_t ops = op->get();
  if (!graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ops) ||
      !graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) || !graph->finalize())
    return fail("the operation graph was refused");
  BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t heur = CUDNN_HEUR_MODE_A;
  if (!heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *graph) ||
      !heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur) || !heuristics.finalize())
    return fail("the heuristics found no engine");
  int64_t count = 0;
  if (l.backend_get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                    nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return fail("the heuristics found no engine");
  std::vector<Backend> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(std::make_unique<BackendDescriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  if (l.backend_get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                    raw.data()) != CUDNN_STATUS_SUCCESS)
    return fail("the heuristics' results could not be read");
  for (int64_t i = 0; i < count; ++i) {
    if (!numerics_allowed(a, raw[static_cast<size_t>(i)])) continue;
    auto plan = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (!plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) ||
        !plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[static_cast<size_t>(i)]) || !plan->finalize())
      continue;
    int64_t n = 0;
    if (l.backend_get(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &g.workspace) !=
        CUDNN_STATUS_SUCCESS)
      continue;
    g.plan = plan->get();
    for (Backend* d : {&x, &y, &w, &conv, &op, &graph, &configs[static_cast<size_t>(i)], &plan})
      g.keep.push_back(std::move(*d));
    return g;
  }
  return fail("no engine of the heuristics' " + std::to_string(count) + " has allowed numerics and finalizes");
}

struct Plan {
  std::unique_ptr<Descriptors> d;
  int algo = 0;  // the pass's cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  size_t workspace = 0;
  GraphPlan graph;  // used when it has a plan
};

struct State {
  std::mutex mu;
  cudnnHandle_t handle = nullptr;
  std::map<std::string, Plan> plans;  // by the call's description, layouts, bias and math
  std::map<Stream, DeviceMemory> workspaces;
  // Workspaces outgrown: kept, as a CUDA graph captured with one may still replay it.
  std::vector<DeviceMemory> outgrown;
};

State& state() {
  static State s;
  return s;
}

// What a plan depends on: everything but the pointers (bytes, not text: looked up every call).
std::string plan_key(const ConvArgs& a) {
  std::vector<int64_t> v{static_cast<int64_t>(a.pass), static_cast<int64_t>(a.dtype), a.groups, a.bias != nullptr,
                         a.tf32, static_cast<int64_t>(a.x_sizes.size())};
  for (const auto* list : {&a.x_sizes, &a.x_strides, &a.w_sizes, &a.w_strides, &a.y_sizes, &a.y_strides, &a.stride,
                           &a.padding, &a.dilation})
    v.insert(v.end(), list->begin(), list->end());
  for (const void* p : {a.x, a.w, a.y}) v.push_back(alignment(p));  // the graph plan's tensors declare it
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
}

// TOROID_CUDNN_GRAPH=0 keeps convolutions on the convolution API's algorithms.
bool graph_api_wanted() {
  static const bool wanted = env_flag("TOROID_CUDNN_GRAPH").value_or(true);
  return wanted;
}

// The heuristics' ranked algorithms for a pass (`query`, named `name` in errors): the first whose
// result never varies between runs and that reports a workspace size, else the first that
// reports one; its algorithm, workspace and the math the heuristics chose it for go into the plan
// (algo -1: none).
template <class Perf, int kCount, class Query, class WorkspaceSize>
void choose(const ConvArgs& a, Plan& p, cudnnMathType_t& math, const char* name, Query query, WorkspaceSize size) {
  Perf perf[kCount];
  int found = 0;
  check(query(kCount, &found, perf), name, a);
  for (bool deterministic : {true, false})
    for (int i = 0; i < found; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || (deterministic && perf[i].determinism != CUDNN_DETERMINISTIC))
        continue;
      if (size(perf[i].algo, &p.workspace) != CUDNN_STATUS_SUCCESS) continue;
      p.algo = static_cast<int>(perf[i].algo);
      math = perf[i].mathType;
      return;
    }
  p.algo = -1;
  TOROID_LOG("cuda", "cuDNN's convolution API has no algorithm for the " + describe(a));
}

// The descriptors and algorithm for one shape, layout and math (cuDNN's heuristics).
Plan make_plan(cudnnHandle_t handle, const ConvArgs& a) {
  const Cudnn& l = lib();
  Plan p;
  p.d = std::make_unique<Descriptors>();
  Descriptors& d = *p.d;
  check(l.tensor_create(&d.x), "cudnnCreateTensorDescriptor", a);
  check(l.tensor_create(&d.y), "cudnnCreateTensorDescriptor", a);
  check(l.filter_create(&d.w), "cudnnCreateFilterDescriptor", a);
  check(l.conv_create(&d.conv), "cudnnCreateConvolutionDescriptor", a);
  set_tensor(d.x, a, a.x_sizes, a.x_strides);
  set_tensor(d.y, a, a.y_sizes, a.y_strides);
  std::vector<int> wdims = dims4(a.w_sizes, 1);
  cudnnTensorFormat_t w_format = weight_channels_last(a) ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  check(l.filter_set(d.w, data_type(a.dtype), w_format, static_cast<int>(wdims.size()), wdims.data()),
        "cudnnSetFilterNdDescriptor", a);
  std::vector<int> pad = spatial2(a.padding, 0), stride = spatial2(a.stride, 1), dil = spatial2(a.dilation, 1);
  cudnnDataType_t compute = a.dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check(l.conv_set(d.conv, static_cast<int>(pad.size()), pad.data(), stride.data(), dil.data(), CUDNN_CROSS_CORRELATION,
                   compute),
        "cudnnSetConvolutionNdDescriptor", a);
  check(l.conv_groups(d.conv, static_cast<int>(a.groups)), "cudnnSetConvolutionGroupCount", a);
  // f32 with TF32 allowed: the default math, which lets cuDNN pick TF32 tensor-core algorithms.
  bool f32 = a.dtype == DType::Float32 || a.dtype == DType::Float64;
  cudnnMathType_t math = !f32 ? CUDNN_TENSOR_OP_MATH : a.tf32 && a.dtype == DType::Float32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  check(l.conv_math(d.conv, math), "cudnnSetConvolutionMathType", a);

  if (graph_api_wanted()) {
    p.graph = make_graph_plan(handle, a);
    std::string api = p.graph.plan ? "graph API, workspace " + std::to_string(p.graph.workspace) + " bytes"
                                   : "convolution API (" + p.graph.engine + ")";
    TOROID_LOG("cuda", describe(a) + " strides " + shape(a.x_strides) + " by " + shape(a.w_strides) + ": " + api);
  }
  if (!p.graph.plan) {
    // The convolution API's algorithms for the pass, with the math the heuristics chose (FMA stays
    // when TF32 is not allowed).
    cudnnMathType_t chosen_math = math;
    if (a.pass == ConvPass::Forward)
      choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          a, p, chosen_math, "cudnnGetConvolutionForwardAlgorithm_v7",
          [&](int n, int* found, auto* perf) { return l.algorithms(handle, d.x, d.w, d.conv, d.y, n, found, perf); },
          [&](auto algo, size_t* bytes) { return l.workspace_size(handle, d.x, d.w, d.conv, d.y, algo, bytes); });
    else if (a.pass == ConvPass::BackwardData)
      choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          a, p, chosen_math, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
          [&](int n, int* found, auto* perf) { return l.data_algorithms(handle, d.w, d.y, d.conv, d.x, n, found, perf); },
          [&](auto algo, size_t* bytes) { return l.data_workspace_size(handle, d.w, d.y, d.conv, d.x, algo, bytes); });
    else
      choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          a, p, chosen_math, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
          [&](int n, int* found, auto* perf) { return l.filter_algorithms(handle, d.x, d.y, d.conv, d.w, n, found, perf); },
          [&](auto algo, size_t* bytes) { return l.filter_workspace_size(handle, d.x, d.y, d.conv, d.w, algo, bytes); });
    if (p.algo >= 0 && (math == CUDNN_DEFAULT_MATH || math == CUDNN_TENSOR_OP_MATH))
      check(l.conv_math(d.conv, chosen_math), "cudnnSetConvolutionMathType", a);
  }
  if (a.bias && a.pass == ConvPass::Forward) {
    std::vector<int64_t> bsizes(a.y_sizes.size(), 1), bstrides(a.y_sizes.size(), 1);
    bsizes[1] = a.y_sizes[1];
    check(l.tensor_create(&d.bias), "cudnnCreateTensorDescriptor", a);
    set_tensor(d.bias, a, bsizes, bstrides);
  }
  return p;
}

}  // namespace

bool cudnn_available(std::string* why) {
  const Cudnn& l = lib();
  if (why) *why = l.why;
  return l.why.empty();
}

bool convolution_supported(const ConvArgs& a, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (!cudnn_available(why)) return false;
  size_t rank = a.x_sizes.size();
  if (rank < 3 || rank > 5) return no("cuDNN convolutions take 1 to 3 spatial dims");
  if (a.w_sizes.size() != rank || a.w_strides.size() != rank || a.y_sizes.size() != rank || a.x_strides.size() != rank || a.y_strides.size() != rank)
    return no("operand ranks differ");
  if (a.dtype != DType::Float32 && a.dtype != DType::Float64 && a.dtype != DType::Float16 && a.dtype != DType::BFloat16)
    return no(std::string("no cuDNN convolution of ") + dtype_short_name(a.dtype));
  for (const auto* v : {&a.x_sizes, &a.x_strides, &a.w_sizes, &a.y_sizes, &a.y_strides})
    for (int64_t e : *v)
      if (e < 0 || e > INT_MAX) return no("a size or stride does not fit cuDNN's int descriptors");
  for (const auto& [sizes, strides] : {std::pair{&a.x_sizes, &a.x_strides}, std::pair{&a.y_sizes, &a.y_strides}})
    for (size_t d = 0; d < sizes->size(); ++d)
      if ((*sizes)[d] > 1 && (*strides)[d] == 0) return no("a broadcast operand (a zero stride)");
  if (!laid_out_as(a.w_sizes, a.w_strides, MemoryFormat::Contiguous) &&
      !laid_out_as(a.w_sizes, a.w_strides, MemoryFormat::ChannelsLast))
    return no("the weight is not contiguous (nor channels-last)");
  return true;
}

bool convolution(const ConvArgs& a, Stream s, Stream order) {
  std::string why;
  if (!convolution_supported(a, &why)) user_error("cuDNN cannot run the " + describe(a) + ": " + why);
  const Cudnn& l = lib();
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.handle) check(l.create(&st.handle), "cudnnCreate", a);
  check(l.set_stream(st.handle, static_cast<cudaStream_t>(s)), "cudnnSetStream", a);

  std::string key = plan_key(a);
  auto it = st.plans.find(key);
  if (it == st.plans.end()) it = st.plans.emplace(key, make_plan(st.handle, a)).first;
  const Plan& plan = it->second;
  if (!plan.graph.plan && plan.algo < 0) return false;
  size_t workspace = plan.graph.plan ? static_cast<size_t>(plan.graph.workspace) : plan.workspace;
  DeviceMemory& ws = st.workspaces[order ? order : s];
  if (workspace > 0 && (!ws || ws->nbytes < workspace)) {
    if (ws) st.outgrown.push_back(std::move(ws));
    ws = DeviceAllocator::global().allocate(workspace, s);
  }
  double one64 = 1.0, zero64 = 0.0;
  float one32 = 1.0f, zero32 = 0.0f;
  const void* one = a.dtype == DType::Float64 ? static_cast<const void*>(&one64) : &one32;
  const void* zero = a.dtype == DType::Float64 ? static_cast<const void*>(&zero64) : &zero32;
  const Descriptors& d = *plan.d;
  if (plan.graph.plan) {
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* data[3] = {a.x, a.w, a.y};
    int64_t ids[3] = {kX, kW, kY};
    void* workspace_ptr = workspace ? ws->ptr : nullptr;
    if (!pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data) ||
        !pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids) ||
        !pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_ptr) || !pack.finalize())
      user_error("cuDNN refused the operands of the " + describe(a));
    check(l.backend_execute(st.handle, plan.graph.plan, pack.get()), "cudnnBackendExecute", a);
  } else {
    void* space = plan.workspace ? ws->ptr : nullptr;
    if (a.pass == ConvPass::Forward)
      check(l.forward(st.handle, one, d.x, a.x, d.w, a.w, d.conv, static_cast<cudnnConvolutionFwdAlgo_t>(plan.algo),
                      space, plan.workspace, zero, d.y, a.y),
            "cudnnConvolutionForward", a);
    else if (a.pass == ConvPass::BackwardData)
      check(l.backward_data(st.handle, one, d.w, a.w, d.y, a.y, d.conv,
                            static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algo), space, plan.workspace, zero, d.x, a.x),
            "cudnnConvolutionBackwardData", a);
    else
      check(l.backward_filter(st.handle, one, d.x, a.x, d.y, a.y, d.conv,
                              static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algo), space, plan.workspace, zero,
                              d.w, a.w),
            "cudnnConvolutionBackwardFilter", a);
  }
  if (a.bias && a.pass == ConvPass::Forward)
    check(l.add_tensor(st.handle, one, d.bias, a.bias, one, d.y, a.y), "cudnnAddTensor", a);
  return true;
}

}  // namespace toroid::runtime::cuda

#else  // no cudnn.h at build time

namespace toroid::runtime::cuda {

bool cudnn_available(std::string* why) {
  if (why) *why = "toroid was built without cuDNN's headers";
  return false;
}
bool convolution_supported(const ConvArgs&, std::string* why) { return cudnn_available(why); }
bool convolution(const ConvArgs&, Stream, Stream) { user_error("toroid was built without cuDNN's headers: no cuDNN convolution"); }

}  // namespace toroid::runtime::cuda

#endif
