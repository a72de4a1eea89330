// What a compilation generates code for: the device, its instruction set, and the options that
// change the code. The driver makes one (toroidc --device and --cuda-arch, the C ABI's device)
// and every layer reads that value: the pass pipeline, lowering (library calls, split
// reductions), the loop program, code generation, the Wrapper IR and the runtime (the C++
// compiler's flags, NVRTC's architecture).
#pragma once

#include <string>

#include "toroid/graph/types.h"

namespace toroid {

struct Target {
  Device device = Device::cpu();
  // NVRTC's sm_<cuda_arch> (a cubin, no PTX JIT). 0 until the driver resolves it: the GPU's
  // when the module is loaded on one, else 90.
  int cuda_arch = 0;
  // The C++ compiler's -march for CPU kernels ("native": this machine's vector units).
  std::string cpu_arch = "native";

  static Target cpu() { return {}; }
  static Target cuda(int arch = 0) { return {Device::cuda(), arch, "native"}; }
  bool is_cuda() const { return device.is_cuda(); }
  const char* device_name() const { return is_cuda() ? "cuda" : "cpu"; }
  // "cpu -march=native", "cuda sm_90" (a cache key, and the Wrapper IR's header).
  std::string str() const {
    return is_cuda() ? "cuda sm_" + std::to_string(cuda_arch) : "cpu -march=" + cpu_arch;
  }
};

}  // namespace toroid
