// The executor with the caching host allocator: repeated runs of a compiled graph reuse the
// blocks of the previous run, and outputs the caller still holds are never handed out again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "toroid/bind/inputs.h"
#include "toroid/driver/compile.h"
#include "toroid/interp/interpreter.h"
#include "toroid/runtime/host_allocator.h"
#include "toroid/support/error.h"

namespace {

using toroid::ops::RtValue;
using toroid::runtime::HostAllocator;

// Intermediates (the mm results and the relu) are allocated and freed inside a run; two outputs.
constexpr const char* kGraph = R"(graph @g functional {
  sym s0 : hint=16, range=[1, inf]
  %x = input : f32[s0, 32]
  %w = input : f32[32, 64]
  %v = input : f32[64, 8]
  %h = aten.mm.default(%x, %w) : f32[s0, 64]
  %r = aten.relu.default(%h) : f32[s0, 64]
  %o = aten.mm.default(%r, %v) : f32[s0, 8]
  %y = aten.mul.Tensor(%o, %o) : f32[s0, 8]
  %z = aten.add.Tensor(%y, %o) : f32[s0, 8]
  output %y, %z
})";

class RuntimeExecutor : public ::testing::Test {
 protected:
  // Compiled kernels go to a temporary cache, not to $HOME.
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("toroid-runtime-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static std::filesystem::path dir_;
};
std::filesystem::path RuntimeExecutor::dir_;

void expect_close(const std::vector<RtValue>& got, const std::vector<RtValue>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const toroid::ops::HostTensor &g = got[i].tensor(), &w = want[i].tensor();
    ASSERT_EQ(g.sizes(), w.sizes());
    for (int64_t k = 0; k < g.numel(); ++k)
      ASSERT_NEAR(g.get_double(k), w.get_double(k), 1e-4 * (1 + std::abs(w.get_double(k)))) << "output " << i;
  }
}

TEST_F(RuntimeExecutor, SecondRunAllocatesNoNewBlocks) {
  auto m = toroid::driver::CompiledModule::compile(kGraph, "g.tir");
  std::vector<RtValue> in = toroid::bind::random_inputs(m->graph(), 1);
  std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
  HostAllocator& a = HostAllocator::global();
  toroid::runtime::RunStats s1, s2;
  expect_close(m->run(in, &s1), want);  // outputs dropped: their blocks go back to the cache
  toroid::runtime::HostCacheStats before = a.stats();
  EXPECT_GT(before.cached_blocks, 0);
  std::vector<RtValue> out = m->run(in, &s2);
  expect_close(out, want);
  toroid::runtime::HostCacheStats after = a.stats();
  EXPECT_EQ(after.fresh_blocks, before.fresh_blocks);
  EXPECT_GT(after.reused_blocks, before.reused_blocks);
  // peak_bytes counts the program's own bytes, not size classes or the cache.
  EXPECT_EQ(s1.peak_bytes, s2.peak_bytes);
  EXPECT_GT(s1.peak_bytes, 0);
  EXPECT_LT(s1.peak_bytes, 16 * (64 + 64 + 8 + 8 + 8) * 4 + 1);
}

TEST_F(RuntimeExecutor, HeldOutputsAreNotReused) {
  auto m = toroid::driver::CompiledModule::compile(kGraph, "g.tir");
  std::vector<RtValue> in1 = toroid::bind::random_inputs(m->graph(), 2);
  std::vector<RtValue> in2 = toroid::bind::random_inputs(m->graph(), 3);
  std::vector<RtValue> want1 = toroid::interp::interpret(m->graph(), in1);
  std::vector<RtValue> want2 = toroid::interp::interpret(m->graph(), in2);
  std::vector<RtValue> out1 = m->run(in1);
  std::vector<RtValue> out2 = m->run(in2);
  for (const RtValue& a : out1)
    for (const RtValue& b : out2) EXPECT_FALSE(a.tensor().shares_storage(b.tensor()));
  expect_close(out1, want1);  // the second run did not write into the first's outputs
  expect_close(out2, want2);
  out1.clear();
  int64_t fresh = HostAllocator::global().stats().fresh_blocks;
  expect_close(m->run(in1), want1);
  EXPECT_EQ(HostAllocator::global().stats().fresh_blocks, fresh);
}

// Caller memory for the outputs (the C ABI's toroid_run_into): both outputs' buffers are placed
// in it, so the results are the caller's storages; the executor does not use memory too small,
// and the driver, which promises the caller's memory, refuses it.
TEST_F(RuntimeExecutor, OutputsPlacedInCallerMemory) {
  auto m = toroid::driver::CompiledModule::compile(kGraph, "g.tir");
  std::vector<RtValue> in = toroid::bind::random_inputs(m->graph(), 4);
  std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
  toroid::sym::Binding b;
  toroid::driver::Specialization& s = m->specialize(in, &b);
  auto y = std::make_shared<toroid::ops::HostStorage>(16 * 8 * 4), z = std::make_shared<toroid::ops::HostStorage>(16 * 8 * 4);
  toroid::runtime::RunOptions o;
  o.outputs = {y, z};
  std::vector<RtValue> out = s.executor->run(in, b, nullptr, o);
  expect_close(out, want);
  EXPECT_EQ(out[0].tensor().storage(), y);
  EXPECT_EQ(out[1].tensor().storage(), z);
  auto small = std::make_shared<toroid::ops::HostStorage>(4);
  o.outputs = {small, nullptr};
  out = s.executor->run(in, b, nullptr, o);
  expect_close(out, want);
  EXPECT_NE(out[0].tensor().storage(), small);
  try {
    m->run_specialized(s, in, b, o);
    FAIL() << "expected a UserError";
  } catch (const toroid::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("output 0: the caller's memory for it has 4 bytes"), std::string::npos) << e.what();
  }
}

// An input whose graph type has an offset (a view a partition receives: the value half of a
// qkv projection) passed as a caller's tensor that starts at its first element: the kernels
// read it at the graph's offset, so the slot is based that far before the tensor (the CUDA
// path, which does not lay inputs out again, read 192 elements past them).
TEST_F(RuntimeExecutor, InputAtAnotherOffsetThanItsGraphType) {
  auto m = toroid::driver::CompiledModule::compile(R"(graph @g functional {
  %x = input : f32[3, 2]{strides=[4, 1], offset=2}
  %y = aten.mul.Tensor(%x, 2.0) : f32[3, 2]
  output %y
})", "g.tir");
  std::vector<RtValue> laid_out = toroid::bind::random_inputs(m->graph(), 5);
  std::vector<RtValue> want = toroid::interp::interpret(m->graph(), laid_out);
  const toroid::ops::HostTensor& x = laid_out[0].tensor();
  ASSERT_EQ(x.offset(), 2);
  // The same elements in a storage of their own, starting at the first one.
  auto first = std::make_shared<toroid::ops::HostStorage>(10 * 4);
  auto from_first = toroid::ops::HostTensor::from_storage(first, x.dtype(), x.sizes(), x.strides(), 0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) from_first.set_double(i * 2 + j, x.get_double(i * 2 + j));
  toroid::sym::Binding b;
  toroid::driver::Specialization& s = m->specialize(laid_out, &b);
  expect_close(s.executor->run({RtValue(from_first)}, b), want);
}

// A symbol only an argument uses (the size of a new tensor, fused into the sum, so nothing of
// that size is allocated) and no input binds: an error, not a kernel run with a made-up value.
TEST_F(RuntimeExecutor, SymbolNoInputBindsIsAnError) {
  auto m = toroid::driver::CompiledModule::compile(R"(graph @g functional {
  sym s0 : hint=4, range=[2, inf]
  %x = input : f32[3]
  %o = aten.ones.default([2*s0], device=device("cpu"), pin_memory=false) : f32[2*s0]
  %y = aten.sum.default(%o) : f32[]
  output %y
})", "g.tir");
  std::vector<RtValue> in = {RtValue(toroid::ops::HostTensor::zeros(toroid::DType::Float32, {3}))};
  try {
    m->run(in);
    FAIL() << "expected a UserError";
  } catch (const toroid::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("symbol s0"), std::string::npos) << e.what();
  }
}

TEST_F(RuntimeExecutor, OtherSizesStillCorrect) {
  auto m = toroid::driver::CompiledModule::compile(kGraph, "g.tir");
  for (int64_t n : {16, 5, 40, 5}) {
    std::vector<RtValue> given(3);
    toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {n, 32});
    for (int64_t k = 0; k < x.numel(); ++k) x.set_double(k, std::sin(static_cast<double>(k)));
    given[0] = RtValue(x);
    std::vector<RtValue> in = toroid::bind::random_inputs(m->graph(), static_cast<uint64_t>(n), {}, given);
    expect_close(m->run(in), toroid::interp::interpret(m->graph(), in));
  }
}

}  // namespace

namespace {

toroid::ops::HostTensor ramp(std::vector<int64_t> sizes) {
  toroid::ops::HostTensor t = toroid::ops::HostTensor::zeros(toroid::DType::Float32, std::move(sizes));
  for (int64_t k = 0; k < t.numel(); ++k) t.set_double(k, std::sin(0.7 * static_cast<double>(k)));
  return t;
}

// softmax over a symbolic last dim: decomposing it broadcasts [s0, 1] against [s0, s1], which
// records the guard s1 != 1. A call with s1 == 1 must compile again (and be right), and calls
// with the first sizes keep using the first compilation.
TEST_F(RuntimeExecutor, FailedCompileGuardCompilesAgain) {
  auto m = toroid::driver::CompiledModule::compile(R"(graph @sm functional {
  sym s0 : hint=4, range=[1, inf]
  sym s1 : hint=8, range=[1, inf]
  %x = input : f32[s0, s1]
  %y = aten._softmax.default(%x, -1, false) : f32[s0, s1]
  output %y
})", "sm.tir");
  EXPECT_FALSE(m->current().graph->shape_env().guards().empty());
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{4, 8}, {3, 1}, {5, 8}, {2, 1}}) {
    std::vector<RtValue> in{RtValue(ramp(sizes))};
    expect_close(m->run(in), toroid::interp::interpret(m->graph(), in));
  }
  EXPECT_EQ(m->num_specializations(), 2u);
}

}  // namespace

namespace {

// A float input (a learning rate) reaches the kernels as a run-time argument: new values run
// the same specialization and the same kernels, and the source holds none of them.
TEST(RuntimeFloatSymbols, ANewLearningRateNeitherRecompilesNorChangesTheSource) {
  auto m = toroid::driver::CompiledModule::compile(R"(graph @sgd functional {
  sym s0 : hint=64, range=[1, inf]
  sym f0 : float, hint=0.01
  %p = input : f32[s0]
  %g = input : f32[s0]
  %lr = input : float{value=f0}
  %step = aten.mul.Tensor(%g, %lr) : f32[s0]
  %new = aten.sub.Tensor(%p, %step) : f32[s0]
  output %new
})", "sgd.tir");
  std::string source = toroid::driver::emit(m->current(), "cpp");
  for (double lr : {0.01, 0.5, -3.25}) {
    std::vector<RtValue> in = toroid::bind::random_inputs(m->graph(), 9);
    in[2] = RtValue::floating(lr);
    std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
    std::vector<RtValue> got = m->run(in);
    ASSERT_EQ(got.size(), 1u);
    for (int64_t k = 0; k < want[0].tensor().numel(); ++k)
      ASSERT_NEAR(got[0].tensor().get_double(k), want[0].tensor().get_double(k), 1e-5) << "lr " << lr;
    double p0 = in[0].tensor().get_double(0), g0 = in[1].tensor().get_double(0);
    EXPECT_NEAR(got[0].tensor().get_double(0), p0 - lr * g0, 1e-5);
  }
  EXPECT_EQ(m->num_specializations(), 1u);
  EXPECT_EQ(toroid::driver::emit(m->current(), "cpp"), source);
  EXPECT_EQ(source.find("0.01"), std::string::npos);
  EXPECT_NE(source.find("t_f64_from_bits(sym"), std::string::npos);
}

}  // namespace

namespace {

// A graph that writes its input, run on a caller tensor that starts inside its storage (the
// run works on a copy laid out as the graph's input is): the write reaches the caller's tensor.
TEST(RuntimeInputWrites, ReachACallerTensorOfAnotherLayout) {
  auto m = toroid::driver::CompiledModule::compile(R"(graph @w functional {
  %x = input : f32[2, 3]
  %y = aten.mul.Tensor(%x, 2.0) : f32[2, 3]
  %c = aten.copy_.default(%x, %y) : f32[2, 3]{storage=%x}
  output %y
})", "w.tir");
  auto storage = std::make_shared<toroid::ops::HostStorage>(8 * sizeof(float));
  toroid::ops::HostTensor x = toroid::ops::HostTensor::from_storage(storage, toroid::DType::Float32, {2, 3}, {3, 1}, 2);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) x.set_double(i * 3 + j, static_cast<double>(10 * i + j));
  m->run({RtValue(x)});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(x.get_double(i * 3 + j), 2.0 * (10 * i + j)) << i << "," << j;
}

}  // namespace
