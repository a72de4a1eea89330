// The executor of a CUDA Wrapper IR program: the same lines as the CPU executor, with kernels
// launched from cubins, buffers in device memory (the caching device allocator, or one
// workspace the caller passes), matmuls through cuBLASLt, and the remaining ops (convolution,
// fallbacks) run by their reference kernels on host copies of their operands.
//
// Tensors on this path are ops::HostTensor values whose storage is device memory (a HostStorage
// adopting a device pointer): the metadata (sizes, strides, offset) works as on the CPU, and the
// data is never touched on the host. to_device/to_host convert.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"
#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/runtime/cuda/nvrtc.h"
#include "toroid/runtime/executor.h"
#include "toroid/sym/shape_env.h"

namespace toroid::runtime::cuda {

// A device copy of a host value (tensors copied whole storage, so views stay views).
ops::RtValue to_device(const ops::RtValue& host, Stream s = nullptr);
// A host copy of a device value.
ops::RtValue to_host(const ops::RtValue& device, Stream s = nullptr);
// `nbytes` of device memory (at least one byte allocated) as a storage that frees it with itself.
std::shared_ptr<ops::HostStorage> device_storage(size_t nbytes, Stream s = nullptr);
// A device-resident tensor over `memory`.
ops::HostTensor device_tensor(DeviceMemory memory, DType dtype, std::vector<int64_t> sizes,
                              std::vector<int64_t> strides, int64_t offset);

// The NVRTC requests of a program's kernels (one translation unit each).
// One per kernel: its 32-bit entry point only (the 64-bit one when it has none), as the executor
// loads them; with both_widths, a second request for the 64-bit entry point (to check that
// everything compiles; the first ones are the same translation units a run compiles).
std::vector<CubinRequest> cubin_requests(const codegen::wrapper::WrapperProgram& w, bool both_widths = false);
// The hand-written device kernels a program's library calls will launch on sm_<arch> whose
// choice the compile already knows (attention with head sizes that are constants), for
// compiling beside its kernels: the executor compiles them on first launch, from the cubin cache.
std::vector<CubinRequest> device_kernel_requests(const codegen::wrapper::WrapperProgram& w, int arch);

class CudaExecutor final : public Executor {
 public:
  // Loads one module per kernel from `cubins` (cubin_requests' order and entry points). A
  // launch that needs a kernel's 64-bit entry point compiles it then, with `options`.
  CudaExecutor(const codegen::wrapper::WrapperProgram& program, const std::vector<Cubin>& cubins,
               const NvrtcOptions& options = {});
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // Inputs and outputs are device-resident (RunOptions::outputs too); as Executor::run
  // otherwise. Returns once the work is queued on the stream, except that a program that checks
  // gather positions synchronizes to report an out of range one (unless
  // options.deferred_checks). An error found in an earlier deferred check is reported first,
  // before any work is queued.
  std::vector<ops::RtValue> run(const std::vector<ops::RtValue>& inputs, sym::Binding binding,
                                RunStats* stats = nullptr, const RunOptions& options = {}) override;
  void check_errors() override;
  // Every size must be known before the run.
  size_t workspace_bytes(const sym::Binding& binding, bool outputs_given = true) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace toroid::runtime::cuda
