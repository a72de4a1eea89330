// The CUDA driver API, loaded at run time: libcuda.so.1 is opened with dlopen on first use, so
// every toroid binary runs, CPU only, on machines without a GPU or a driver. Nothing here
// exposes CUDA types; handles are opaque pointers (CUstream, CUfunction, CUdeviceptr as void*).
//
// Every driver call is checked: a failure is a UserError naming the call, the driver's error
// name and string, and what toroid was doing ("cuLaunchKernel(kernel3): CUDA_ERROR_...: ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace toroid::runtime::cuda {

// True when libcuda loads, cuInit succeeds and there is at least one device. Otherwise false,
// with the reason in *why ("libcuda.so.1 not found: ...", "no CUDA device", ...). Never throws.
bool available(std::string* why = nullptr);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;           // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int arch() const { return cc_major * 10 + cc_minor; }  // 90 for sm_90
  int sm_count = 0;
  int max_threads_per_block = 0;
  size_t shared_bytes_per_block = 0;
  size_t total_bytes = 0;
  int driver_version = 0;     // cuDriverGetVersion
};

using Stream = void*;    // CUstream
using Function = void*;  // CUfunction

// Device 0 of the process: its primary context (retained on first use, made current on the
// calling thread by every entry point) and one non-blocking stream that toroid launches on.
// UserError when !available(), with the reason.
const DeviceInfo& device();
Stream default_stream();

// Raw device memory (cuMemAlloc / cuMemFree). Prefer DeviceAllocator.
void* raw_alloc(size_t nbytes);  // UserError on out of memory, naming the size
void raw_free(void* p);

void copy_to_device(void* dst, const void* src, size_t nbytes, Stream s = nullptr);   // async on s
void copy_to_host(void* dst, const void* src, size_t nbytes, Stream s = nullptr);     // synchronous
// Page-locked host memory (cuMemHostAlloc), zeroed: device-to-host copies into it are
// asynchronous.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t nbytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};
// Queued on s; the bytes are there once the stream has reached this point (an Event tells).
void copy_to_pinned_host(PinnedBuffer& dst, size_t offset, const void* src, size_t nbytes, Stream s = nullptr);
void copy_device_to_device(void* dst, const void* src, size_t nbytes, Stream s = nullptr);
void memset_zero(void* dst, size_t nbytes, Stream s = nullptr);
void memset_bytes(void* dst, unsigned char value, size_t nbytes, Stream s = nullptr);
void synchronize(Stream s = nullptr);  // nullptr: the default stream above

// More non-blocking streams (tests, overlapping work). destroy_stream waits for the stream's
// work first; drop the DeviceMemory allocated on a stream before destroying it (returning a
// block may record an event on its stream).
Stream create_stream();
void destroy_stream(Stream s);

// A loaded cubin (cuModuleLoadData); unloaded when destroyed.
class Module {
 public:
  explicit Module(const std::string& image, const std::string& what);  // `what` names it in errors
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Function function(const std::string& name) const;  // UserError when missing
  // A __device__ global of the module: its address and size.
  void* global(const std::string& name, size_t* nbytes = nullptr) const;

 private:
  void* module_ = nullptr;
  std::string what_;
};

// Lets `f` take `bytes` of dynamic shared memory (above the 48 KiB any kernel may use, up to the
// device's opt-in limit). UserError naming `what` when the device has less.
void allow_dynamic_shared(Function f, size_t bytes, const char* what);

struct LaunchDims {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;  // dynamic shared memory
  // The kernel itself waits for the stream's earlier work before touching memory (toroid's
  // generated kernels begin with griddepcontrol.wait): it may then be launched as a programmatic
  // dependent, its blocks scheduled during the previous kernel's last blocks.
  bool waits_on_stream = false;
};
// cuLaunchKernel; `args` as cuLaunchKernel takes them (one pointer per kernel parameter).
// `what` names the kernel in errors.
void launch(Function f, const LaunchDims& dims, void** args, Stream s, const char* what);
// Whether kernels that wait on their stream are launched early (programmatic dependent launch):
// a device of compute capability 9.0 or newer, unless $TOROID_CUDA_DEPENDENT_LAUNCH=0.
bool dependent_launches();

// CUDA graphs: the work queued on a stream between begin_capture and end_capture is recorded,
// not run, and end_capture instantiates it; launch_graph replays it on any stream. Capture is in
// relaxed mode, so the caching allocator may still call cuMemAlloc meanwhile (on a stream
// that is not capturing: toroid's default stream and CUDA's legacy one cannot be captured).
class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec();
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

 private:
  void* exec_ = nullptr;  // CUgraphExec
  friend std::unique_ptr<GraphExec> end_capture(Stream s);
  friend void launch_graph(const GraphExec& g, Stream s);
};
void begin_capture(Stream s);
std::unique_ptr<GraphExec> end_capture(Stream s);  // UserError when capture or instantiation failed
void abort_capture(Stream s) noexcept;             // ends a capture after an error, dropping its work
bool is_capturing(Stream s);                       // the caller's own capture, say
void launch_graph(const GraphExec& g, Stream s);

// Events: completion, and elapsed milliseconds between two recorded events.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(Stream s = nullptr);
  void synchronize();
  bool done() const;  // the work before the record has finished (cuEventQuery)
  float elapsed_ms_since(const Event& start) const;  // both recorded and complete
 private:
  void* event_ = nullptr;
};

}  // namespace toroid::runtime::cuda
