// Row kernels as the CUDA compiler emits them (codegen/cuda/cuda_kernel.cpp's slot path); no GPU
// needed. Their numerics on a GPU: tests/lit/compile/row-slots.tir under tools/gpu/cuda_checks.sh.
#include <gtest/gtest.h>

#include <string>

#include "toroid/codegen/cuda/cuda_kernel.h"
#include "toroid/driver/compile.h"

namespace {

using toroid::codegen::CudaKernel;
using toroid::codegen::wrapper::Line;

// The one row kernel of `body` (a graph over %x : DTYPE[s0, ROW]; s0 hints 8192 rows: few rows
// would split the reductions into pieces).
CudaKernel row_kernel(const std::string& row, const std::string& dtype, const std::string& body,
                      const std::string& extra_inputs = "") {
  std::string text = "graph @rows functional {\n  sym s0 : hint=8192, range=[1, inf]\n  sym s1 : hint=4096, range=[1, inf]\n"
                     "  %x = input : " + dtype + "[s0, " + row + "]\n" + extra_inputs + body + "}\n";
  toroid::driver::CompileOptions o;
  o.compile = false;
  o.target = toroid::Target::cuda();
  auto m = toroid::driver::CompiledModule::compile(text, "rows.tir", o);
  const auto& w = m->current().wrapper;
  for (const Line& l : w.lines)
    if (l.kind == Line::Kind::KernelCall) return w.cuda_kernels.at(static_cast<size_t>(l.kernel));
  ADD_FAILURE() << "no kernel";
  return {};
}

const std::string kSoftmax = "  %y = aten._softmax.default(%x, -1, false) : DT[s0, ROW]\n  output %y\n";

std::string softmax(const std::string& row, const std::string& dtype) {
  std::string b = kSoftmax;
  b.replace(b.find("DT"), 2, dtype);
  b.replace(b.find("ROW"), 3, row);
  return b;
}

TEST(RowKernels, KnownRowLengthFixesTheBlock) {
  // 2044 f32: 511 groups of 4, four a thread: 128 threads, compiled in.
  CudaKernel k = row_kernel("2044", "f32", softmax("2044", "f32"));
  EXPECT_EQ(k.shape, CudaKernel::Shape::Rows);
  EXPECT_EQ(k.row_slots, 4);
  EXPECT_EQ(k.row_threads, 128);
  EXPECT_NE(k.entry_i32.find("__launch_bounds__(128)"), std::string::npos) << k.entry_i32;
  EXPECT_NE(k.body.find("<= 4 * I(128)"), std::string::npos);
}

TEST(RowKernels, RowsOfAThousandGroupsTakeEightSlots) {
  // 4096 f32 = 1024 groups: eight a thread, 128 threads; 8192 f32 (softmax's benchmark row) 256.
  CudaKernel k = row_kernel("4096", "f32", softmax("4096", "f32"));
  EXPECT_EQ(k.row_slots, 8);
  EXPECT_EQ(k.row_threads, 128);
  EXPECT_NE(k.body.find("<= 8 * I(128)"), std::string::npos);
  EXPECT_EQ(row_kernel("8192", "f32", softmax("8192", "f32")).row_threads, 256);
  // 2048 f32 and 4096 bf16 = 512 groups: four a thread, so that a row keeps 128 threads.
  CudaKernel shorter = row_kernel("2048", "f32", softmax("2048", "f32"));
  EXPECT_EQ(shorter.row_slots, 4);
  EXPECT_EQ(shorter.row_threads, 128);
  EXPECT_EQ(row_kernel("4096", "bf16", softmax("4096", "bf16")).row_slots, 4);
}

TEST(RowKernels, ShortRowsShareAWarpAndABlock) {
  // 100 f32 = 25 groups: eight slots a thread, a segment of 8 lanes, 16 rows a block; the
  // reductions name the segment's lanes.
  CudaKernel k = row_kernel("100", "f32", softmax("100", "f32"));
  EXPECT_EQ(k.row_slots, 8);
  EXPECT_EQ(k.row_threads, 8);
  EXPECT_EQ(k.rows_per_block, 16);
  EXPECT_EQ(k.vector_width, 4);
  EXPECT_NE(k.body.find("t_block_reduce<8>("), std::string::npos) << k.body;
  EXPECT_NE(k.entry_i32.find("__launch_bounds__(128)"), std::string::npos) << k.entry_i32;
  EXPECT_NE(k.entry_i32.find("blockIdx.x * blockDim.y + threadIdx.y"), std::string::npos) << k.entry_i32;
  // 49 f32: 4 does not divide the row, so 1-element accesses (every row on the slot path).
  CudaKernel odd = row_kernel("49", "f32", softmax("49", "f32"));
  EXPECT_EQ(odd.vector_width, 1);
  EXPECT_EQ(odd.row_threads, 8);
  EXPECT_EQ(odd.row_slots, 8);
  // 197 f32 (ViT's attention rows): a warp a row, 8 rows a block.
  CudaKernel vit = row_kernel("197", "f32", softmax("197", "f32"));
  EXPECT_EQ(vit.row_threads, 32);
  EXPECT_EQ(vit.rows_per_block, 8);
  EXPECT_NE(vit.body.find("t_block_reduce("), std::string::npos);
  // 1024 f32 = 256 groups is not short: four slots, 64 threads, a row a block.
  CudaKernel longer = row_kernel("1024", "f32", softmax("1024", "f32"));
  EXPECT_EQ(longer.row_slots, 4);
  EXPECT_EQ(longer.row_threads, 64);
  EXPECT_EQ(longer.rows_per_block, 1);
  EXPECT_EQ(longer.vector_width, 4);
}

TEST(RowKernels, LongKnownRowsTakeEightSlots) {
  // 10000 f32 = 2500 groups: more than 512 threads of four, within 512 of eight.
  CudaKernel k = row_kernel("10000", "f32", softmax("10000", "f32"));
  EXPECT_EQ(k.row_slots, 8);
  EXPECT_EQ(k.row_threads, 512);
}

TEST(RowKernels, RowsTooLongForTheSlotsLeaveTheBlockToTheExecutor) {
  // 40000 f32 = 10000 groups, over 512 threads of eight: the slot path stays (for shorter
  // launches it cannot get), but no block size is compiled in.
  CudaKernel k = row_kernel("40000", "f32", softmax("40000", "f32"));
  EXPECT_EQ(k.row_threads, 0);
  EXPECT_NE(k.entry_i32.find("__launch_bounds__(512)"), std::string::npos);
}

TEST(RowKernels, RowsOfSymbolicLengthHaveFourSlotsAndNoFixedBlock) {
  CudaKernel k = row_kernel("s1", "f32", softmax("s1", "f32"));
  EXPECT_EQ(k.row_slots, 4);
  EXPECT_EQ(k.row_threads, 0);
  EXPECT_NE(k.body.find("static_cast<I>(blockDim.x)"), std::string::npos);
}

TEST(RowKernels, SixteenBitSlotsArePacked) {
  CudaKernel k = row_kernel("4096", "bf16", softmax("4096", "bf16"));
  EXPECT_NE(k.body.find("uint4 "), std::string::npos);
  EXPECT_NE(k.body.find("t_vload_slot<true>("), std::string::npos);
  EXPECT_NE(k.body.find("t_slot_get<t_bf16>("), std::string::npos);
}

TEST(RowKernels, LayerNormMeanComesFromTheWelfordResult) {
  CudaKernel k = row_kernel("768", "f32",
                            "  %y = aten.layer_norm.default(%x, [768], %w, %b, 1e-05, true) : f32[s0, 768]\n  output %y\n",
                            "  %w = input : f32[768]\n  %b = input : f32[768]\n");
  EXPECT_NE(k.body.find("t_block_welford"), std::string::npos);
  EXPECT_EQ(k.body.find("t_block_reduce("), std::string::npos) << k.body;
  EXPECT_NE(k.body.find(".mean : float(0) / float(0)"), std::string::npos);
}

TEST(RowKernels, WelfordMergesWeighHalvesOnlyWhenTheThreadsSplitTheRowEvenly) {
  auto layer_norm = [](const std::string& n) {
    return row_kernel(n, "f32", "  %y = aten.layer_norm.default(%x, [" + n + "], %w, %b, 1e-05, true) : f32[s0, " + n + "]\n  output %y\n",
                      "  %w = input : f32[" + n + "]\n  %b = input : f32[" + n + "]\n");
  };
  CudaKernel even = layer_norm("768");  // 192 groups of 4 over 32 threads
  EXPECT_EQ(even.row_threads, 32);
  EXPECT_NE(even.body.find("t_block_welford_even("), std::string::npos) << even.body;
  for (const char* n : {"770", "1000"}) {  // 385 groups of 2 over 128 threads; 250 of 4 over 64
    CudaKernel uneven = layer_norm(n);
    EXPECT_NE(uneven.body.find("t_block_welford("), std::string::npos) << n;
    EXPECT_EQ(uneven.body.find("t_block_welford_even"), std::string::npos) << n;
  }
  CudaKernel symbolic = row_kernel("s1", "f32", "  %y = aten.layer_norm.default(%x, [s1], %w, %b, 1e-05, true) : f32[s0, s1]\n  output %y\n",
                                   "  %w = input : f32[s1]\n  %b = input : f32[s1]\n");
  EXPECT_EQ(symbolic.body.find("t_block_welford_even"), std::string::npos);
}

TEST(RowKernels, AValueReadBackByALaterLoopNeedsNoBarrierOnTheSlotPath) {
  CudaKernel k = row_kernel(
      "1024", "bf16",
      "  %h = aten.add.Tensor(%x, %r) : bf16[s0, 1024]\n"
      "  %hf = aten._to_copy.default(%h, dtype=torch.float32) : f32[s0, 1024]\n"
      "  %sq = aten.mul.Tensor(%hf, %hf) : f32[s0, 1024]\n"
      "  %ms = aten.mean.dim(%sq, [-1], true) : f32[s0, 1]\n"
      "  %y = aten.mul.Tensor(%hf, %ms) : f32[s0, 1024]\n"
      "  output %y, %h\n",
      "  %r = input : bf16[s0, 1024]\n");
  EXPECT_NE(k.body.find("t_slot_set("), std::string::npos);
  // A short row (128 groups, 16 lanes): the row's sync is only for the other path,
  // `if (!flag) t_row_sync<16>();`.
  size_t sync = k.body.find("t_row_sync<16>();");
  ASSERT_NE(sync, std::string::npos) << k.body;
  EXPECT_NE(k.body.rfind("if (!", sync), std::string::npos);
  EXPECT_EQ(k.body.find("t_row_sync", sync + 1), std::string::npos);
  EXPECT_EQ(k.body.find("__syncthreads"), std::string::npos);
}

}  // namespace
