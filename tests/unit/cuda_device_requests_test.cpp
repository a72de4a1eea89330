// Which hand-written device kernels a CUDA program's compile builds beside its own kernels
// (device_kernel_requests): no GPU needed, nothing compiled.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "toroid/driver/compile.h"
#include "toroid/runtime/cuda/executor.h"

namespace {

constexpr const char* kAttentionGraph = R"(graph @attn functional {
  sym n : hint=8, range=[1, inf]
  sym e : hint=32, range=[1, 128]
  %q = input : f32[1, 2, n, 64]
  %k = input : f32[1, 2, 8, 64]
  %v = input : f32[1, 2, 8, 40]
  %o = aten.scaled_dot_product_attention.default(%q, %k, %v) : f32[1, 2, n, 40]
  %qb = input : bf16[1, 2, 8, 32]
  %ob = aten.scaled_dot_product_attention.default(%qb, %qb, %qb, None, 0.0, true) : bf16[1, 2, 8, 32]
  %qw = input : f16[1, 2, 8, 200]
  %ow = aten.scaled_dot_product_attention.default(%qw, %qw, %qw) : f16[1, 2, 8, 200]
  %qs = input : f16[1, 2, 8, e]
  %os = aten.scaled_dot_product_attention.default(%qs, %qs, %qs) : f16[1, 2, 8, e]
  output %o, %ob, %ow, %os
}
)";

std::vector<std::string> names(const toroid::codegen::wrapper::WrapperProgram& w, int arch) {
  std::vector<std::string> out;
  for (const auto& r : toroid::runtime::cuda::device_kernel_requests(w, arch)) {
    out.push_back(r.name);
    EXPECT_NE(r.source.find(r.name + "(AttentionArgs a)"), std::string::npos) << r.name;
  }
  return out;
}

// Head sizes that are constants name their kernel (a sequence length may be symbolic); a head
// of 200 has none (the host runs it), nor has one whose size only a run knows.
TEST(CudaDeviceRequests, AttentionKernelsOfConstantHeads) {
  toroid::driver::CompileOptions o;
  o.target = toroid::Target::cuda();
  o.target.cuda_arch = 90;
  o.load = false;
  auto m = toroid::driver::CompiledModule::compile(kAttentionGraph, "attn.tir", o);
  const auto& w = m->current().wrapper;
  EXPECT_EQ(names(w, 90), (std::vector<std::string>{"toroid_attention_tc_f32_64", "toroid_attention_tc_bf16_32"}));
  // Before sm_80 the SIMT kernels take them.
  EXPECT_EQ(names(w, 75), (std::vector<std::string>{"toroid_attention_f32_64", "toroid_attention_bf16_32"}));
}

}  // namespace
