#include "toroid/runtime/cuda/driver.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "driver_internal.h"
#include "toroid/support/env.h"
#include "toroid/support/error.h"

namespace toroid::runtime::cuda {

namespace {

// The driver functions toroid calls, each with the version of its ABI that toroid calls it by
// (the PFN_<name>_v<version> typedefs of cudaTypedefs.h). cuGetProcAddress resolves the base name
// at that version, so the entry point always matches the type: asking at CUDA_VERSION instead
// would hand out, say, cuCtxSynchronize_v2 (which takes a context) for the argument-less
// cuCtxSynchronize that cuda.h declares, and plain dlsym would find cuMemAlloc's 32-bit v1.
#define TOROID_CUDA_FUNCTIONS(X)                                                          \
  X(cuDriverGetVersion, 2020) X(cuDeviceGetCount, 2000) X(cuDeviceGet, 2000)               \
  X(cuDeviceGetName, 2000) X(cuDeviceGetAttribute, 2000) X(cuDeviceTotalMem, 3020)         \
  X(cuDevicePrimaryCtxRetain, 7000) X(cuCtxSetCurrent, 4000) X(cuCtxSynchronize, 2000)     \
  X(cuStreamCreate, 2000) X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000)            \
  X(cuMemAlloc, 3020) X(cuMemFree, 3020) X(cuMemcpyHtoDAsync, 3020)                        \
  X(cuMemcpyDtoHAsync, 3020) X(cuMemcpyDtoDAsync, 3020) X(cuMemsetD8Async, 3020)           \
  X(cuModuleLoadDataEx, 2010) X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000)         \
  X(cuModuleGetGlobal, 3020) X(cuLaunchKernel, 4000) X(cuLaunchKernelEx, 11060)             \
  X(cuEventCreate, 2000)                                                                  \
  X(cuEventRecord, 2000) X(cuEventQuery, 2000) X(cuEventSynchronize, 2000)                 \
  X(cuEventElapsedTime, 2000) X(cuEventDestroy, 4000) X(cuMemHostAlloc, 2020)               \
  X(cuMemFreeHost, 2000) X(cuFuncSetAttribute, 9000) X(cuStreamBeginCapture, 10010)      \
  X(cuStreamEndCapture, 10000) X(cuStreamIsCapturing, 10000) X(cuGraphInstantiateWithFlags, 11040) \
  X(cuGraphLaunch, 10000) X(cuGraphExecDestroy, 10000) X(cuGraphDestroy, 10000)

// `name##_` is not macro-expanded (cuda.h defines cuMemAlloc as cuMemAlloc_v2), so the members
// are cuMemAlloc_ and so on.
struct Api {
  // Found with dlsym: needed before (or to report) cuInit.
  PFN_cuInit_v2000 cuInit_ = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName_ = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString_ = nullptr;
  PFN_cuGetProcAddress_v12000 cuGetProcAddress_ = nullptr;  // exported as cuGetProcAddress_v2
#define TOROID_MEMBER(name, version) PFN_##name##_v##version name##_ = nullptr;
  TOROID_CUDA_FUNCTIONS(TOROID_MEMBER)
#undef TOROID_MEMBER
};

struct Library {
  Api api;
  std::string why;  // empty when the driver is usable
};

template <class F>
bool find_symbol(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

std::string error_text(const Api& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (!api.cuGetErrorName_ || api.cuGetErrorName_(r, &name) != CUDA_SUCCESS || !name)
    return "CUresult " + std::to_string(static_cast<int>(r));
  std::string out = name;
  if (api.cuGetErrorString_(r, &text) == CUDA_SUCCESS && text) out += std::string(": ") + text;
  return out;
}

// Loads libcuda and initializes it; returns why it is unusable, or "" when it is usable.
std::string open_driver(Api& api) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    std::string first = err ? err : "dlopen failed";
    handle = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);  // unusual installs lack the soname
    if (!handle) return "libcuda.so.1 not found (" + first + ")";
  }
  // Never dlclosed: static destructors may still call into it at exit.
  if (!find_symbol(handle, "cuInit", api.cuInit_) ||
      !find_symbol(handle, "cuGetErrorName", api.cuGetErrorName_) ||
      !find_symbol(handle, "cuGetErrorString", api.cuGetErrorString_))
    return "libcuda.so.1 lacks cuInit or cuGetErrorName: not a CUDA driver";
  if (!find_symbol(handle, "cuGetProcAddress_v2", api.cuGetProcAddress_))
    return "the CUDA driver is too old (no cuGetProcAddress_v2; CUDA 12 or newer is needed)";

  if (CUresult r = api.cuInit_(0); r != CUDA_SUCCESS) return "cuInit failed: " + error_text(api, r);

  auto resolve = [&api](const char* name, int version, auto& fn) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r = api.cuGetProcAddress_(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !p) return false;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    return true;
  };
#define TOROID_RESOLVE(name, version) \
  if (!resolve(#name, version, api.name##_)) return "the CUDA driver lacks " #name;
  TOROID_CUDA_FUNCTIONS(TOROID_RESOLVE)
#undef TOROID_RESOLVE

  int count = 0;
  if (CUresult r = api.cuDeviceGetCount_(&count); r != CUDA_SUCCESS)
    return "cuDeviceGetCount failed: " + error_text(api, r);
  if (count == 0) return "no CUDA device";
  return "";
}

// Loaded once, on first use, and never destroyed (calls from static destructors stay valid).
const Library& library() {
  static const Library* lib = [] {
    auto* l = new Library;
    try {
      l->why = open_driver(l->api);
    } catch (const std::exception& e) {  // bad_alloc: available() must not throw
      l->why = e.what();
    }
    return l;
  }();
  return *lib;
}

const Api& api() { return library().api; }

void check(CUresult r, const char* call, const std::string& what) {
  if (r == CUDA_SUCCESS) return;
  std::string message = std::string(call) + ": " + error_text(api(), r);
  if (!what.empty()) message += " (" + what + ")";
  user_error(std::move(message));
}

// Calls a driver function through the table, checking its result: TOROID_CU(cuMemFree, "...", p).
// `what` is built only on failure (launches are on the hot path).
#define TOROID_CU(name, what, ...)                                 \
  do {                                                             \
    CUresult toroid_result_ = api().name##_(__VA_ARGS__);          \
    if (toroid_result_ != CUDA_SUCCESS) check(toroid_result_, #name, what); \
  } while (0)

struct Context {
  DeviceInfo info;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
};

std::atomic<Context*> g_context{nullptr};
// The process has one context, so "current on this thread" is one flag. (Code that switches
// contexts behind toroid's back on a thread it shares would defeat it; toroid does not.)
thread_local bool t_current = false;

Context* open_device() {
  std::string why;
  if (!available(&why)) user_error("CUDA is not available: " + why);
  auto c = std::make_unique<Context>();
  CUdevice dev = 0;
  TOROID_CU(cuDeviceGet, "device 0", &dev, 0);
  TOROID_CU(cuDevicePrimaryCtxRetain, "device 0", &c->ctx, dev);
  TOROID_CU(cuCtxSetCurrent, "device 0", c->ctx);
  t_current = true;

  DeviceInfo& info = c->info;
  info.ordinal = 0;
  char name[256] = {};
  TOROID_CU(cuDeviceGetName, "device 0", name, static_cast<int>(sizeof name) - 1, dev);
  info.name = name;
  auto attribute = [dev](CUdevice_attribute a) {
    int v = 0;
    TOROID_CU(cuDeviceGetAttribute, "device 0", &v, a, dev);
    return v;
  };
  info.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  // Without opting in (cuFuncSetAttribute): what any kernel may use.
  info.shared_bytes_per_block =
      static_cast<size_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  TOROID_CU(cuDeviceTotalMem, "device 0", &info.total_bytes, dev);
  TOROID_CU(cuDriverGetVersion, "device 0", &info.driver_version);

  // Non-blocking: it does not serialize with the legacy NULL stream of other libraries.
  TOROID_CU(cuStreamCreate, "the default stream", &c->stream, CU_STREAM_NON_BLOCKING);
  return c.release();
}

// The device, with its context current on the calling thread. UserError when unavailable.
Context& context() {
  // Initialized once; an exception leaves it uninitialized, so a later call retries.
  static Context* c = [] {
    Context* opened = open_device();
    g_context.store(opened);
    return opened;
  }();
  if (!t_current) {
    TOROID_CU(cuCtxSetCurrent, "making the device 0 context current", c->ctx);
    t_current = true;
  }
  return *c;
}

// For paths that must not throw (destructors, deleters): false when there is no context.
bool make_current_quietly() noexcept {
  Context* c = g_context.load();
  if (!c) return false;
  if (!t_current) {
    if (api().cuCtxSetCurrent_(c->ctx) != CUDA_SUCCESS) return false;
    t_current = true;
  }
  return true;
}

CUstream stream_of(Stream s) {
  CUstream def = context().stream;
  return s ? static_cast<CUstream>(s) : def;
}

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

std::string bytes(size_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

bool available(std::string* why) {
  const Library& lib = library();
  if (why) *why = lib.why;
  return lib.why.empty();
}

const DeviceInfo& device() { return context().info; }

Stream default_stream() { return context().stream; }

void* raw_alloc(size_t nbytes) {
  void* p = detail::try_alloc(nbytes);
  if (!p && nbytes > 0) user_error("cuMemAlloc: out of device memory allocating " + bytes(nbytes));
  return p;
}

void raw_free(void* p) {
  if (!p) return;
  context();
  TOROID_CU(cuMemFree, "freeing device memory", dptr(p));
}

void copy_to_device(void* dst, const void* src, size_t nbytes, Stream s) {
  if (nbytes == 0) return;
  TOROID_CU(cuMemcpyHtoDAsync, "copying " + bytes(nbytes) + " to the device", dptr(dst), src,
            nbytes, stream_of(s));
}

void copy_to_host(void* dst, const void* src, size_t nbytes, Stream s) {
  if (nbytes == 0) return;
  CUstream st = stream_of(s);
  TOROID_CU(cuMemcpyDtoHAsync, "copying " + bytes(nbytes) + " to the host", dst, dptr(src),
            nbytes, st);
  TOROID_CU(cuStreamSynchronize, "copying " + bytes(nbytes) + " to the host", st);
}

void copy_to_pinned_host(PinnedBuffer& dst, size_t offset, const void* src, size_t nbytes, Stream s) {
  if (nbytes == 0) return;
  TOROID_CHECK(offset + nbytes <= dst.size(), "copy_to_pinned_host: past the end of the buffer");
  TOROID_CU(cuMemcpyDtoHAsync, "copying " + bytes(nbytes) + " to pinned host memory",
            static_cast<char*>(dst.data()) + offset, dptr(src), nbytes, stream_of(s));
}

PinnedBuffer::PinnedBuffer(size_t nbytes) : size_(nbytes) {
  context();
  TOROID_CU(cuMemHostAlloc, "allocating " + bytes(nbytes) + " of pinned host memory", &data_, std::max<size_t>(nbytes, 1),
            0u);
  std::memset(data_, 0, std::max<size_t>(nbytes, 1));
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ && make_current_quietly()) api().cuMemFreeHost_(data_);
}

void copy_device_to_device(void* dst, const void* src, size_t nbytes, Stream s) {
  if (nbytes == 0) return;
  TOROID_CU(cuMemcpyDtoDAsync, "copying " + bytes(nbytes) + " on the device", dptr(dst),
            dptr(src), nbytes, stream_of(s));
}

void memset_bytes(void* dst, unsigned char value, size_t nbytes, Stream s) {
  if (nbytes == 0) return;
  TOROID_CU(cuMemsetD8Async, "setting " + bytes(nbytes), dptr(dst), value, nbytes, stream_of(s));
}

void memset_zero(void* dst, size_t nbytes, Stream s) { memset_bytes(dst, 0, nbytes, s); }

void synchronize(Stream s) {
  TOROID_CU(cuStreamSynchronize, "waiting for the stream", stream_of(s));
}

Stream create_stream() {
  context();
  CUstream s = nullptr;
  TOROID_CU(cuStreamCreate, "creating a stream", &s, CU_STREAM_NON_BLOCKING);
  return s;
}

void destroy_stream(Stream s) {
  TOROID_CHECK(s && s != default_stream(), "destroy_stream: not a stream from create_stream");
  synchronize(s);
  TOROID_CU(cuStreamDestroy, "destroying a stream", static_cast<CUstream>(s));
}

Module::Module(const std::string& image, const std::string& what) : what_(what) {
  context();
  // The JIT's log says why PTX did not compile, or which architecture a cubin is for.
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
  CUmodule m = nullptr;
  CUresult r = api().cuModuleLoadDataEx_(&m, image.data(), 2, options, values);
  std::string detail = "loading " + what;
  if (log[0]) detail += ": " + std::string(log);
  check(r, "cuModuleLoadDataEx", detail);
  module_ = m;
}

Module::~Module() {
  // Errors are ignored: at exit the driver may already be shutting down, and the process is
  // ending anyway.
  if (module_ && make_current_quietly()) api().cuModuleUnload_(static_cast<CUmodule>(module_));
}

Function Module::function(const std::string& name) const {
  context();
  CUfunction f = nullptr;
  TOROID_CU(cuModuleGetFunction, "kernel '" + name + "' in " + what_, &f,
            static_cast<CUmodule>(module_), name.c_str());
  return f;
}

void allow_dynamic_shared(Function f, size_t bytes, const char* what) {
  context();
  TOROID_CU(cuFuncSetAttribute, std::string("the dynamic shared memory of kernel '") + what + "' (" + std::to_string(bytes) + " bytes)",
            static_cast<CUfunction>(f), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes));
}

void* Module::global(const std::string& name, size_t* nbytes) const {
  context();
  CUdeviceptr p = 0;
  size_t n = 0;
  TOROID_CU(cuModuleGetGlobal, "global '" + name + "' in " + what_, &p, &n,
            static_cast<CUmodule>(module_), name.c_str());
  if (nbytes) *nbytes = n;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

void launch(Function f, const LaunchDims& d, void** args, Stream s, const char* what) {
  const DeviceInfo& info = context().info;
  auto dims = [&d] {
    return "grid " + std::to_string(d.grid_x) + "x" + std::to_string(d.grid_y) + "x" +
           std::to_string(d.grid_z) + ", block " + std::to_string(d.block_x) + "x" +
           std::to_string(d.block_y) + "x" + std::to_string(d.block_z);
  };
  TOROID_CHECK(f, std::string("launching ") + what + ": no function");
  TOROID_CHECK(d.grid_x && d.grid_y && d.grid_z && d.block_x && d.block_y && d.block_z,
               std::string("launching ") + what + ": empty " + dims());
  uint64_t threads = uint64_t(d.block_x) * d.block_y * d.block_z;
  TOROID_CHECK(threads <= static_cast<uint64_t>(info.max_threads_per_block),
               std::string("launching ") + what + ": " + dims() + " has more than " +
                   std::to_string(info.max_threads_per_block) + " threads per block");
  if (d.waits_on_stream && dependent_launches()) {
    CUlaunchAttribute early{};
    early.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    early.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = d.grid_x, config.gridDimY = d.grid_y, config.gridDimZ = d.grid_z;
    config.blockDimX = d.block_x, config.blockDimY = d.block_y, config.blockDimZ = d.block_z;
    config.sharedMemBytes = d.shared_bytes;
    config.hStream = stream_of(s);
    config.attrs = &early;
    config.numAttrs = 1;
    TOROID_CU(cuLaunchKernelEx, std::string(what) + ", " + dims(), &config, static_cast<CUfunction>(f), args, nullptr);
    return;
  }
  TOROID_CU(cuLaunchKernel, std::string(what) + ", " + dims(), static_cast<CUfunction>(f),
            d.grid_x, d.grid_y, d.grid_z, d.block_x, d.block_y, d.block_z, d.shared_bytes,
            stream_of(s), args, nullptr);
}

bool dependent_launches() {
  // Hopper's griddepcontrol: older devices run the kernels' wait as a no-op, so only the launch
  // attribute depends on the device. Decided once (every launch asks); a failed context retries.
  static const bool on = env_flag("TOROID_CUDA_DEPENDENT_LAUNCH").value_or(true) && context().info.arch() >= 90;
  return on;
}

GraphExec::~GraphExec() {
  if (exec_ && make_current_quietly()) api().cuGraphExecDestroy_(static_cast<CUgraphExec>(exec_));
}

void begin_capture(Stream s) {
  TOROID_CU(cuStreamBeginCapture, "starting a CUDA graph capture", stream_of(s), CU_STREAM_CAPTURE_MODE_RELAXED);
}

std::unique_ptr<GraphExec> end_capture(Stream s) {
  CUgraph g = nullptr;
  TOROID_CU(cuStreamEndCapture, "ending a CUDA graph capture", stream_of(s), &g);
  CUgraphExec exec = nullptr;
  CUresult r = api().cuGraphInstantiateWithFlags_(&exec, g, 0);
  api().cuGraphDestroy_(g);  // the instance keeps what it needs
  check(r, "cuGraphInstantiateWithFlags", "instantiating a captured CUDA graph");
  auto out = std::make_unique<GraphExec>();
  out->exec_ = exec;
  return out;
}

void abort_capture(Stream s) noexcept {
  if (!make_current_quietly()) return;
  CUgraph g = nullptr;
  if (api().cuStreamEndCapture_(stream_of(s), &g) == CUDA_SUCCESS && g) api().cuGraphDestroy_(g);
}

bool is_capturing(Stream s) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  TOROID_CU(cuStreamIsCapturing, "asking whether a stream is capturing", stream_of(s), &status);
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void launch_graph(const GraphExec& g, Stream s) {
  TOROID_CHECK(g.exec_, "launch_graph: an empty graph");
  TOROID_CU(cuGraphLaunch, "launching a CUDA graph", static_cast<CUgraphExec>(g.exec_), stream_of(s));
}

Event::Event() {
  context();
  CUevent e = nullptr;
  TOROID_CU(cuEventCreate, "creating an event", &e, CU_EVENT_DEFAULT);
  event_ = e;
}

Event::~Event() {
  if (event_) api().cuEventDestroy_(static_cast<CUevent>(event_));  // errors ignored, as ~Module
}

void Event::record(Stream s) {
  TOROID_CU(cuEventRecord, "recording an event", static_cast<CUevent>(event_), stream_of(s));
}

void Event::synchronize() {
  context();
  TOROID_CU(cuEventSynchronize, "waiting for an event", static_cast<CUevent>(event_));
}

bool Event::done() const { return detail::event_done(event_); }

float Event::elapsed_ms_since(const Event& start) const {
  context();
  float ms = 0;
  TOROID_CU(cuEventElapsedTime, "timing between events", &ms, static_cast<CUevent>(start.event_),
            static_cast<CUevent>(event_));
  return ms;
}

namespace detail {

Stream resolve(Stream s) { return stream_of(s); }

void* try_alloc(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  context();
  CUdeviceptr p = 0;
  CUresult r = api().cuMemAlloc_(&p, nbytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
  check(r, "cuMemAlloc", "allocating " + bytes(nbytes));
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

void free_quietly(void* p) noexcept {
  if (p && make_current_quietly()) api().cuMemFree_(dptr(p));
}

void synchronize_device() {
  context();
  check(api().cuCtxSynchronize_(), "cuCtxSynchronize", "waiting for the device");
}

void* create_event() {
  context();
  CUevent e = nullptr;
  TOROID_CU(cuEventCreate, "creating an event", &e, CU_EVENT_DISABLE_TIMING);
  return e;
}

void record_event(void* event, Stream s) {
  TOROID_CU(cuEventRecord, "recording an event", static_cast<CUevent>(event), stream_of(s));
}

bool event_done(void* event) {
  context();
  CUresult r = api().cuEventQuery_(static_cast<CUevent>(event));
  if (r == CUDA_ERROR_NOT_READY) return false;
  check(r, "cuEventQuery", "");
  return true;
}

void destroy_event_quietly(void* event) noexcept {
  if (event) api().cuEventDestroy_(static_cast<CUevent>(event));
}

}  // namespace detail

}  // namespace toroid::runtime::cuda
