// Combo kernels (sched::combine_kernels, codegen/cuda/cuda_combo.cpp) as the CUDA compiler
// emits them; no GPU needed. Their numerics on a GPU: gpu_executor_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "toroid/codegen/cuda/cuda_kernel.h"
#include "toroid/driver/compile.h"

namespace {

using toroid::codegen::CudaKernel;
using toroid::codegen::wrapper::Line;
using toroid::codegen::wrapper::WrapperProgram;

std::unique_ptr<toroid::driver::CompiledModule> compile_for(const std::string& text, bool cuda, bool combos = true) {
  toroid::driver::CompileOptions o;
  o.compile = false;
  o.target = cuda ? toroid::Target::cuda() : toroid::Target::cpu();
  o.combo_kernels = combos;
  return toroid::driver::CompiledModule::compile(text, "combo.tir", o);
}

// The kernels a program launches, in order.
std::vector<const CudaKernel*> launched(const WrapperProgram& w) {
  std::vector<const CudaKernel*> out;
  for (const Line& l : w.lines)
    if (l.kind == Line::Kind::KernelCall) out.push_back(&w.cuda_kernels.at(static_cast<size_t>(l.kernel)));
  return out;
}

// `parts` independent updates, each the sum of `reads` inputs of its own.
std::string independent_updates(int parts, int reads) {
  std::string g = "graph @updates functional {\n";
  std::string outputs;
  for (int p = 0; p < parts; ++p) {
    for (int r = 0; r < reads; ++r) g += "  %x" + std::to_string(p) + "_" + std::to_string(r) + " = input : f32[" + std::to_string(100 + p) + "]\n";
    std::string acc = "%x" + std::to_string(p) + "_0";
    for (int r = 1; r < reads; ++r) {
      std::string next = "%s" + std::to_string(p) + "_" + std::to_string(r);
      g += "  " + next + " = aten.add.Tensor(" + acc + ", %x" + std::to_string(p) + "_" + std::to_string(r) + ") : f32[" +
           std::to_string(100 + p) + "]\n";
      acc = next;
    }
    outputs += (outputs.empty() ? "" : ", ") + acc;
  }
  return g + "  output " + outputs + "\n}\n";
}

TEST(ComboKernels, IndependentFlatKernelsShareOneLaunch) {
  auto m = compile_for(independent_updates(5, 2), true);
  std::vector<const CudaKernel*> k = launched(m->current().wrapper);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0]->parts.size(), 5u);
  EXPECT_EQ(k[0]->args.size(), 15u);  // two inputs and an output per part
  EXPECT_NE(k[0]->entry_i32.find("if (b < nb4)"), std::string::npos) << k[0]->entry_i32;
}

TEST(ComboKernels, ParametersStayUnderFourKiB) {
  // 20 parts of 27 pointers each: 4400 bytes together, so two combos.
  auto m = compile_for(independent_updates(20, 26), true);
  std::vector<const CudaKernel*> k = launched(m->current().wrapper);
  ASSERT_GE(k.size(), 2u);
  size_t parts = 0;
  for (const CudaKernel* c : k) {
    size_t n = c->parts.empty() ? 1 : c->parts.size();
    parts += n;
    size_t bytes = 8 * (c->args.size() + c->sym_slots.size()) + 4 * c->parts.size();
    EXPECT_LE(bytes, toroid::codegen::cuda::kMaxComboParamBytes) << c->name;
  }
  EXPECT_EQ(parts, 20u);
}

TEST(ComboKernels, DependentKernelsStayApart) {
  // %z reads %y: two launches, in order.
  auto m = compile_for(R"(graph @chain functional {
  %x = input : f32[64]
  %t = input : f32[8, 64]
  %y = aten.mul.Tensor(%x, 2.0) : f32[64]
  %z = aten.add.Tensor(%t, %y) : f32[8, 64]
  output %y, %z
})",
                       true);
  std::vector<const CudaKernel*> k = launched(m->current().wrapper);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_TRUE(k[0]->parts.empty());
  EXPECT_TRUE(k[1]->parts.empty());
}

TEST(ComboKernels, OffOrOnTheCpuEachKernelIsItsOwnLaunch) {
  EXPECT_EQ(launched(compile_for(independent_updates(3, 2), true, false)->current().wrapper).size(), 3u);
  auto cpu = compile_for(independent_updates(3, 2), false);
  EXPECT_EQ(cpu->current().wrapper.kernels.size(), 3u);
}

}  // namespace
