// The CUDA executor on a GPU: a compiled graph (cuBLASLt matmuls, fused kernels, intermediates
// freed and reused) matches the reference interpreter, through the caching allocator and in
// workspace mode, where every buffer lies in the caller's one allocation. Skips without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "interp_test_util.h"
#include "toroid/bind/inputs.h"
#include "toroid/driver/compile.h"
#include "toroid/interp/interpreter.h"
#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/runtime/cuda/executor.h"
#include "toroid/runtime/cuda/driver.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace {

namespace cuda = toroid::runtime::cuda;
using toroid::ops::RtValue;

// Static sizes: the specialization's binding is the empty one.
constexpr const char* kGraph = R"(graph @g functional {
  %x = input : f32[48, 32]
  %w = input : f32[32, 64]
  %v = input : f32[64, 8]
  %h = aten.mm.default(%x, %w) : f32[48, 64]
  %r = aten.relu.default(%h) : f32[48, 64]
  %o = aten.mm.default(%r, %v) : f32[48, 8]
  %s = aten._softmax.default(%o, -1, false) : f32[48, 8]
  %z = aten.add.Tensor(%s, %o) : f32[48, 8]
  output %s, %z
})";

// `text` compiled for CUDA with the default options.
std::unique_ptr<toroid::driver::CompiledModule> compile_cuda(const char* text, const char* file) {
  toroid::driver::CompileOptions o;
  o.target = toroid::Target::cuda();
  return toroid::driver::CompiledModule::compile(text, file, o);
}

struct NotOwnedStorage : toroid::ops::HostStorage::Releaser {
  void release(std::byte*, size_t) noexcept override {}
};

class GpuExecutor : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
    dir_ = std::filesystem::temp_directory_path() / ("toroid-gpu-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
    toroid::driver::CompileOptions o;
    o.target = toroid::Target::cuda();
    module_ = toroid::driver::CompiledModule::compile(kGraph, "g.tir", o);
    inputs_ = toroid::bind::random_inputs(module_->graph(), 7);
    want_ = toroid::interp::interpret(module_->graph(), inputs_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  // `got` on the device, or on the host (run() copies its outputs back).
  static void expect_close(const std::vector<RtValue>& got, const std::vector<RtValue>& want, bool on_device = true) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      RtValue g = on_device ? cuda::to_host(got[i]) : got[i];
      const toroid::ops::HostTensor &gt = g.tensor(), &wt = want[i].tensor();
      ASSERT_EQ(gt.sizes(), wt.sizes());
      for (int64_t k = 0; k < gt.numel(); ++k)
        ASSERT_NEAR(gt.get_double(k), wt.get_double(k), 1e-4 * (1 + std::abs(wt.get_double(k)))) << "output " << i;
    }
  }

  std::filesystem::path dir_;
  std::unique_ptr<toroid::driver::CompiledModule> module_;
  std::vector<RtValue> inputs_, want_;
};

TEST_F(GpuExecutor, MatchesTheReference) {
  std::vector<RtValue> on_device;
  for (const RtValue& v : inputs_) on_device.push_back(cuda::to_device(v));
  expect_close(module_->run_device(on_device), want_);
  expect_close(module_->run(inputs_), want_, false);  // host inputs and outputs, copied both ways
}

TEST_F(GpuExecutor, WorkspaceModeKeepsEveryBufferInTheWorkspace) {
  const toroid::driver::Specialization& s = module_->current();
  size_t need = s.workspace_bytes({}, /*outputs_given=*/false);  // the outputs too
  ASSERT_GT(need, 0u);
  cuda::DeviceMemory ws = cuda::DeviceAllocator::global().allocate(need);
  std::vector<RtValue> on_device;
  for (const RtValue& v : inputs_) on_device.push_back(cuda::to_device(v));
  toroid::runtime::RunOptions o;
  o.workspace = ws->ptr;
  o.workspace_bytes = need;
  std::vector<RtValue> out = module_->current().executor->run(on_device, {}, nullptr, o);
  const auto* lo = static_cast<const std::byte*>(ws->ptr);
  for (const RtValue& v : out) {
    const std::byte* p = v.tensor().storage()->data();
    EXPECT_TRUE(p >= lo && p < lo + need) << "an output outside the workspace";
  }
  expect_close(out, want_);
  // Too small a workspace is a clear error, not a write past its end.
  o.workspace_bytes = need - 1;
  try {
    module_->current().executor->run(on_device, {}, nullptr, o);
    FAIL() << "expected a UserError";
  } catch (const toroid::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the workspace has"), std::string::npos) << e.what();
  }
}

// Outputs given caller memory take no room in the workspace: the smaller workspace suffices, and
// the outputs land in the caller's memory.
TEST_F(GpuExecutor, OutputsInCallerMemoryTakeNoWorkspace) {
  const toroid::driver::Specialization& s = module_->current();
  size_t with_outputs = s.workspace_bytes({}, /*outputs_given=*/false), need = s.workspace_bytes({});
  EXPECT_LT(need, with_outputs);
  cuda::DeviceMemory ws = cuda::DeviceAllocator::global().allocate(std::max<size_t>(need, 1));
  std::vector<RtValue> on_device;
  for (const RtValue& v : inputs_) on_device.push_back(cuda::to_device(v));
  toroid::runtime::RunOptions o;
  o.workspace = ws->ptr;
  o.workspace_bytes = need;
  std::vector<cuda::DeviceMemory> keep;
  for (const RtValue& w : want_) {
    keep.push_back(cuda::DeviceAllocator::global().allocate(w.tensor().storage()->nbytes()));
    o.outputs.push_back(std::make_shared<toroid::ops::HostStorage>(static_cast<std::byte*>(keep.back()->ptr),
                                                                   w.tensor().storage()->nbytes(),
                                                                   std::make_shared<NotOwnedStorage>()));
  }
  std::vector<RtValue> out = module_->current().executor->run(on_device, {}, nullptr, o);
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(static_cast<const void*>(out[i].tensor().storage()->data()), keep[i]->ptr) << "output " << i;
  expect_close(out, want_);
}

// run_device does not wait for the GPU: an out of range gather position is reported by a later
// run once the GPU has finished the faulty one (before it queues anything), or by
// check_device_errors, once, at the indexing op.
TEST(GpuDeferredChecks, AnOutOfRangeGatherIsReportedByTheNextRun) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  auto m = compile_cuda(R"(graph @g functional {
  %x = input : f32[4, 8]
  %i = input : i64[4, 1]
  %y = aten.gather.default(%x, 1, %i) : f32[4, 1]
  output %y
})",
                        "gather.tir");
  toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {4, 8});
  toroid::ops::HostTensor good = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {4, 1});
  toroid::ops::HostTensor bad = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {4, 1});
  bad.set_double(2, 9);
  std::vector<RtValue> ok{cuda::to_device(RtValue(x)), cuda::to_device(RtValue(good))};
  std::vector<RtValue> wrong{cuda::to_device(RtValue(x)), cuda::to_device(RtValue(bad))};
  m->run_device(ok);
  m->check_device_errors();
  m->run_device(wrong);  // queued; no error yet
  cuda::synchronize();   // the GPU has finished it: the next run finds the error before queuing
  try {
    m->run_device(ok);
    FAIL() << "expected the earlier run's error";
  } catch (const toroid::UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("index 9 is out of bounds for dimension 1 with size 8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("earlier run"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gather.tir:4:3"), std::string::npos) << msg;
  }
  m->check_device_errors();  // reported once
  m->run_device(wrong);
  EXPECT_THROW(m->check_device_errors(), toroid::UserError);
  // The host path (run) waits and reports from the same call.
  std::vector<RtValue> host_wrong{RtValue(x), RtValue(bad)};
  EXPECT_THROW(m->run(host_wrong), toroid::UserError);
  m->run({RtValue(x), RtValue(good)});
}

// Kernels that check positions keep their records side by side in one array the executor reads
// with one copy: an error of either kernel is reported at its own op, on both paths.
TEST(GpuDeferredChecks, EachKernelsRecordIsItsOwn) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  auto m = compile_cuda(R"(graph @g functional {
  %x = input : f32[4, 8]
  %i = input : i64[4, 1]
  %z = input : f32[3, 5]
  %j = input : i64[3, 2]
  %y = aten.gather.default(%x, 1, %i) : f32[4, 1]
  %w = aten.gather.default(%z, 1, %j) : f32[3, 2]
  output %y, %w
})",
                        "two.tir");
  size_t checking = 0;
  for (const auto& k : m->current().wrapper.cuda_kernels) checking += k.index_sites.empty() ? 0 : 1;
  ASSERT_EQ(checking, 2u) << "two kernels, each with its own record";
  toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {4, 8});
  toroid::ops::HostTensor i = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {4, 1});
  toroid::ops::HostTensor z = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {3, 5});
  toroid::ops::HostTensor j = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {3, 2});
  toroid::ops::HostTensor bad_i = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {4, 1});
  toroid::ops::HostTensor bad_j = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {3, 2});
  bad_i.set_double(1, 8);
  bad_j.set_double(5, 7);
  m->run({RtValue(x), RtValue(i), RtValue(z), RtValue(j)});
  std::string first = interptest::user_error_of([&] { m->run({RtValue(x), RtValue(bad_i), RtValue(z), RtValue(j)}); });
  EXPECT_NE(first.find("index 8 is out of bounds for dimension 1 with size 8"), std::string::npos) << first;
  EXPECT_NE(first.find("two.tir:6:3"), std::string::npos) << first;
  std::string second = interptest::user_error_of([&] { m->run({RtValue(x), RtValue(i), RtValue(z), RtValue(bad_j)}); });
  EXPECT_NE(second.find("index 7 is out of bounds for dimension 1 with size 5"), std::string::npos) << second;
  EXPECT_NE(second.find("two.tir:7:3"), std::string::npos) << second;
  m->run({RtValue(x), RtValue(i), RtValue(z), RtValue(j)});  // cleared: reported once
  std::vector<RtValue> wrong{cuda::to_device(RtValue(x)), cuda::to_device(RtValue(i)), cuda::to_device(RtValue(z)),
                             cuda::to_device(RtValue(bad_j))};
  m->run_device(wrong);
  try {
    m->check_device_errors();
    FAIL() << "expected the second gather's error";
  } catch (const toroid::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("two.tir:7:3"), std::string::npos) << e.what();
  }
}

// A launch whose values do not fit 31 bits takes the 64-bit entry point, which is compiled only
// then (modules load with the 32-bit ones): a size symbol of 2^35 reaches the kernel.
TEST(GpuWideIndex, The64BitEntryIsCompiledWhenALaunchNeedsIt) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  auto m = compile_cuda(R"(graph @wide functional {
  sym s1 : hint=5, range=[0, inf]
  %x = input : i64[16]
  %n = input : int{value=s1}
  %y = aten.add.Tensor(%x, %n) : i64[16]
  output %y
})",
                        "wide.tir");
  toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Int64, {16});
  for (int64_t i = 0; i < 16; ++i) x.set_double(i, static_cast<double>(i));
  for (int64_t n : {int64_t{7}, int64_t{1} << 35, int64_t{9}}) {
    std::vector<RtValue> out = m->run({RtValue(x), RtValue::integer(n)});
    const toroid::ops::HostTensor& y = out.at(0).tensor();
    for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(static_cast<int64_t>(y.get_double(i)), i + n) << "n = " << n;
  }
}

// Dependent launches: on sm_90+ each generated kernel is scheduled during the previous one's
// tail and waits for it itself. A chain of 17 small kernels, each reading the one before and
// several writing buffers freed by earlier ones (reuse lines), matches the reference on every
// call: a kernel that started before its predecessor finished would read stale values or
// overwrite ones still being read.
TEST_F(GpuExecutor, DependentLaunchesKeepAChainOfReusedBuffersInOrder) {
  if (!std::getenv("TOROID_CUDA_DEPENDENT_LAUNCH")) {
    EXPECT_EQ(cuda::dependent_launches(), cuda::device().arch() >= 90) << "on by default from sm_90";
  }
  std::string text = "graph @chain functional {\n  %x0 = input : f32[256, 256]\n";
  for (int i = 0; i < 8; ++i) {
    const std::string n = std::to_string(i), x = "%x" + n;
    text += "  %r" + n + " = aten.mean.dim(" + x + ", [1], true) : f32[256, 1]\n";
    text += "  %a" + n + " = aten.sub.Tensor(" + x + ", %r" + n + ") : f32[256, 256]\n";
    text += "  %c" + n + " = aten.mean.dim(%a" + n + ", [0], true) : f32[1, 256]\n";
    text += "  %b" + n + " = aten.sub.Tensor(%a" + n + ", %c" + n + ") : f32[256, 256]\n";
    text += "  %x" + std::to_string(i + 1) + " = aten.add.Tensor(%b" + n + ", %x0) : f32[256, 256]\n";
  }
  text += "  output %x8\n}\n";
  auto m = compile_cuda(text.c_str(), "chain.tir");
  std::vector<RtValue> inputs = toroid::bind::random_inputs(m->graph(), 3);
  std::vector<RtValue> want = toroid::interp::interpret(m->graph(), inputs);
  std::vector<RtValue> on_device;
  for (const RtValue& v : inputs) on_device.push_back(cuda::to_device(v));
  for (int call = 0; call < 20; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    expect_close(m->run_device(on_device), want);
  }
}

// Combo kernels: five independent updates are one launch, each part on blocks of its own sized
// by this call's sizes: a part empty in a call gets none, a large one many; bf16 and 0-dim parts
// too. Every call matches the reference.
TEST(GpuComboKernels, PartsMatchTheReferenceEmptyOrLarge) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  auto m = compile_cuda(R"(graph @combo functional {
  sym s0 : hint=8, range=[0, inf]
  sym s1 : hint=8, range=[0, inf]
  %a = input : f32[s0]
  %b = input : f32[s1]
  %c = input : f32[300000]
  %d = input : bf16[7, 5]
  %e = input : f32[]
  %ya = aten.mul.Tensor(%a, 2.0) : f32[s0]
  %yb = aten.exp.default(%b) : f32[s1]
  %yc = aten.add.Tensor(%c, 1.0) : f32[300000]
  %yd = aten.mul.Tensor(%d, 3.0) : bf16[7, 5]
  %ye = aten.sub.Tensor(%e, 0.5) : f32[]
  output %ya, %yb, %yc, %yd, %ye
})",
                        "combo.tir");
  auto filled = [](toroid::DType t, std::vector<int64_t> sizes, int seed) {
    toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(t, sizes);
    for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(0.37 * static_cast<double>(i + 101 * seed)));
    return RtValue(x);
  };
  for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, 3}, {1000, 0}, {5, 70000}}) {
    std::vector<RtValue> in = {filled(toroid::DType::Float32, {n0}, 1), filled(toroid::DType::Float32, {n1}, 2),
                               filled(toroid::DType::Float32, {300000}, 3), filled(toroid::DType::BFloat16, {7, 5}, 4),
                               filled(toroid::DType::Float32, {}, 5)};
    std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
    std::vector<RtValue> got = m->run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const toroid::ops::HostTensor &g = got[i].tensor(), &w = want[i].tensor();
      ASSERT_EQ(g.sizes(), w.sizes()) << "output " << i;
      for (int64_t k = 0; k < g.numel(); ++k)
        ASSERT_NEAR(g.get_double(k), w.get_double(k), 1e-2 * (1 + std::abs(w.get_double(k))))
            << "output " << i << " element " << k << " sizes " << n0 << ", " << n1;
    }
  }
  size_t launches = 0, parts = 0;
  const toroid::codegen::wrapper::WrapperProgram& w = m->current().wrapper;
  for (const toroid::codegen::wrapper::Line& l : w.lines)
    if (l.kind == toroid::codegen::wrapper::Line::Kind::KernelCall) {
      ++launches;
      parts += w.cuda_kernels.at(static_cast<size_t>(l.kernel)).parts.size();
    }
  EXPECT_EQ(launches, 1u);
  EXPECT_EQ(parts, 5u);
}

}  // namespace

// A user's CUDA C++ kernels inside a compiled graph: `add` writes an empty tensor in place,
// `scale` writes a clone of %t (read again after it) and then %u in place; the results match
// the same arithmetic done on the host.
TEST(GpuUserKernels, ClonesOnlyWhatIsReadLater) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const char* scale = R"(source="extern \"C\" __global__ void scale(float* v, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) v[i] *= a; }")";
  std::string text = std::string(R"(graph @g functional {
  sym s0 : hint=1000, range=[1, inf]
  %x = input : f32[s0]
  %y = input : f32[s0]
  %out = aten.empty.memory_format([s0], dtype=torch.float32) : f32[s0]
  %sum = higher_order.user_kernel_functional("add", [%x, %y, %out], [s0], kind="cuda", source="extern \"C\" __global__ void add(const float* x, const float* y, float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = x[i] + y[i]; }", grid=[(s0 + 255)//256], block=[256], writes=[2], tensors_to_clone=[2]) : f32[s0]
  %t = aten.mul.Tensor(%sum, 2.0) : f32[s0]
  %t2 = higher_order.user_kernel_functional("scale", [%t], [3.0, s0], kind="cuda", )") + scale + R"(, grid=[(s0 + 255)//256], block=[256], writes=[0], tensors_to_clone=[0]) : f32[s0]
  %keep = aten.add.Tensor(%t, %t2) : f32[s0]
  %u2 = higher_order.user_kernel_functional("scale", [%keep], [0.5, s0], kind="cuda", )" + scale + R"(, grid=[(s0 + 255)//256], block=[256], writes=[0], tensors_to_clone=[0]) : f32[s0]
  output %u2, %t
})";
  toroid::driver::CompileOptions o;
  o.target = toroid::Target::cuda();
  o.dynamic = true;
  auto module = toroid::driver::CompiledModule::compile(text, "user.tir", o);
  for (int64_t n : {1000, 1, 4097}) {
    toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {n});
    toroid::ops::HostTensor y = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {n});
    for (int64_t i = 0; i < n; ++i) {
      x.set_double(i, 0.25 * static_cast<double>(i % 17));
      y.set_double(i, 1.0 - 0.5 * static_cast<double>(i % 5));
    }
    std::vector<RtValue> got = module->run({RtValue(x), RtValue(y)});
    ASSERT_EQ(got.size(), 2u);
    for (int64_t i = 0; i < n; ++i) {
      double t = 2.0 * (x.get_double(i) + y.get_double(i));
      ASSERT_NEAR(got[1].tensor().get_double(i), t, 1e-5) << "n=" << n << " element " << i;
      ASSERT_NEAR(got[0].tensor().get_double(i), 0.5 * (t + 3.0 * t), 1e-5) << "n=" << n << " element " << i;
    }
  }
}

// A kernel in Triton's PTX form (LLVM's parameter qualifiers, inline-assembly loads and stores,
// two trailing scratch pointers passed 0) with its TTIR, as the Python frontend hands it over
// (tests/lit/kernels/Inputs/triton-add*.tir, read from the repository root or the source dir):
// without a cubin, with the sm_90a cubin ptxas made of it (loaded where the device is sm_90, no
// JIT), and with bytes that are no cubin (the PTX is loaded instead, logged).
TEST(GpuUserKernels, TritonFormPtxLaunches) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (const char* file : {"triton-add.tir", "triton-add-cubin.tir", "triton-add-bad-cubin.tir"}) {
    std::string text;
    for (std::string dir : {std::string("."), std::string(TOROID_SOURCE_DIR)}) {
      std::ifstream f(dir + "/tests/lit/kernels/Inputs/" + file);
      if (f) {
        text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        break;
      }
    }
    if (text.empty()) GTEST_SKIP() << "tests/lit/kernels/Inputs/" << file << " not found from the working directory";
    toroid::driver::CompileOptions o;
    o.target = toroid::Target::cuda();
    toroid::set_log_topics("cuda");
    testing::internal::CaptureStderr();
    auto module = toroid::driver::CompiledModule::compile(text, file, o);
    for (int64_t n : {1000, 7, 128}) {
      toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {n});
      toroid::ops::HostTensor y = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {n});
      for (int64_t i = 0; i < n; ++i) {
        x.set_double(i, static_cast<double>(i));
        y.set_double(i, 0.5);
      }
      std::vector<RtValue> got = module->run({RtValue(x), RtValue(y)});
      ASSERT_EQ(got.size(), 1u);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[0].tensor().get_double(i), static_cast<double>(i) + 0.5) << file << " n=" << n;
    }
    std::string log = testing::internal::GetCapturedStderr();
    toroid::set_log_topics("");
    bool fell_back = log.find("its cubin does not load on this device") != std::string::npos;
    bool sm90 = cuda::device().cc_major == 9;
    if (std::string(file) == "triton-add-bad-cubin.tir") {
      EXPECT_TRUE(fell_back) << log;
    } else if (std::string(file) == "triton-add-cubin.tir" && sm90) {
      EXPECT_FALSE(fell_back) << log;
    }
  }
}

// CUDA graphs over a static module's partition, through run_specialized in workspace mode: a
// call key's first call runs as usual, its second captures (and runs) the partition, later ones
// replay it, each with this call's input data; a call at other addresses starts its own key.
TEST(GpuCudaGraphs, ReplaysWithEachCallsData) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  toroid::driver::CompileOptions o;
  o.target = toroid::Target::cuda();
  o.dynamic = false;
  auto module = toroid::driver::CompiledModule::compile(R"(graph @g functional {
  %x = input : f32[64, 32]
  %w = input : f32[32, 16]
  %h = aten.mm.default(%x, %w) : f32[64, 16]
  %r = aten.relu.default(%h) : f32[64, 16]
  %s = aten.sum.dim_IntList(%r, [1], true) : f32[64, 1]
  %d = aten.add.Tensor(%s, 1.0) : f32[64, 1]
  %y = aten.div.Tensor(%r, %d) : f32[64, 16]
  output %y
})", "graphs.tir", o);
  toroid::ops::HostTensor w = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {32, 16});
  for (int64_t i = 0; i < w.numel(); ++i) w.set_double(i, 0.01 * static_cast<double>((i * 7) % 23) - 0.05);
  RtValue dw = cuda::to_device(RtValue(w));
  toroid::ops::HostTensor x0 = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {64, 32});
  RtValue dx = cuda::to_device(RtValue(x0));
  auto* x_ptr = const_cast<std::byte*>(dx.tensor().storage()->data());
  toroid::set_log_topics("cuda");
  testing::internal::CaptureStderr();
  for (int call = 0; call < 5; ++call) {
    toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {64, 32});
    for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(0.1 * static_cast<double>(i + 31 * call)));
    cuda::copy_to_device(x_ptr, x.storage()->data(), x.storage()->nbytes());
    std::vector<RtValue> want = toroid::interp::interpret(module->graph(), {RtValue(x), RtValue(w)});
    toroid::sym::Binding b;
    toroid::driver::Specialization& s = module->specialize({dx, dw}, &b);
    size_t need = s.workspace_bytes(b, /*outputs_given=*/false);
    static cuda::DeviceMemory ws = cuda::DeviceAllocator::global().allocate(1 << 20);
    ASSERT_LE(need, size_t(1) << 20);
    toroid::runtime::RunOptions ro;
    ro.workspace = ws->ptr;
    ro.workspace_bytes = need;
    std::vector<RtValue> got = module->run_specialized(s, {dx, dw}, b, ro);
    RtValue host = cuda::to_host(got.at(0));
    for (int64_t i = 0; i < host.tensor().numel(); ++i)
      ASSERT_NEAR(host.tensor().get_double(i), want[0].tensor().get_double(i), 1e-4) << "call " << call << " element " << i;
  }
  std::string log = testing::internal::GetCapturedStderr();
  toroid::set_log_topics("");
  size_t captures = 0;
  for (size_t at = log.find("captured partition"); at != std::string::npos; at = log.find("captured partition", at + 1))
    ++captures;
  EXPECT_EQ(captures, 1u) << log;
}

struct NotOwned : toroid::ops::HostStorage::Releaser {
  void release(std::byte*, size_t) noexcept override {}
};

// A program whose every allocation is one of its outputs needs no workspace: called with the
// outputs in caller memory and none, it still captures its partition (a training step's forward,
// whose results are all saved for the backward).
TEST(GpuCudaGraphs, OutputsAloneNeedNoWorkspace) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  toroid::driver::CompileOptions o;
  o.target = toroid::Target::cuda();
  o.dynamic = false;
  auto module = toroid::driver::CompiledModule::compile(R"(graph @saved functional {
  %x = input : f32[64, 32]
  %w = input : f32[32, 16]
  %h = aten.mm.default(%x, %w) : f32[64, 16]
  %y = aten.tanh.default(%h) : f32[64, 16]
  output %h, %y
})", "saved.tir", o);
  toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {64, 32});
  toroid::ops::HostTensor w = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {32, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::sin(0.05 * static_cast<double>(i)));
  for (int64_t i = 0; i < w.numel(); ++i) w.set_double(i, 0.03 * static_cast<double>((i * 3) % 11) - 0.15);
  RtValue dx = cuda::to_device(RtValue(x)), dw = cuda::to_device(RtValue(w));
  std::vector<RtValue> want = toroid::interp::interpret(module->graph(), {RtValue(x), RtValue(w)});
  std::vector<cuda::DeviceMemory> outs{cuda::DeviceAllocator::global().allocate(64 * 16 * 4),
                                       cuda::DeviceAllocator::global().allocate(64 * 16 * 4)};
  toroid::set_log_topics("cuda");
  testing::internal::CaptureStderr();
  for (int call = 0; call < 4; ++call) {
    toroid::sym::Binding b;
    toroid::driver::Specialization& s = module->specialize({dx, dw}, &b);
    ASSERT_EQ(s.workspace_bytes(b), 0u);
    toroid::runtime::RunOptions ro;  // no workspace
    for (const cuda::DeviceMemory& m : outs)
      ro.outputs.push_back(std::make_shared<toroid::ops::HostStorage>(static_cast<std::byte*>(m->ptr), 64 * 16 * 4,
                                                                      std::make_shared<NotOwned>()));
    module->run_specialized(s, {dx, dw}, b, ro);
    for (size_t k = 0; k < outs.size(); ++k) {
      std::vector<float> got(64 * 16);
      cuda::copy_to_host(got.data(), outs[k]->ptr, got.size() * 4);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[k].tensor().get_double(static_cast<int64_t>(i)), 1e-4) << "call " << call << " output " << k;
    }
  }
  std::string log = testing::internal::GetCapturedStderr();
  toroid::set_log_topics("");
  EXPECT_EQ(log.find("no workspace"), std::string::npos) << log;
  EXPECT_NE(log.find("captured partition"), std::string::npos) << log;
}

// Addresses that move every call (a training step's activations): after a few keys that never
// repeat, the program's keys leave the moving inputs and the outputs out, copy them through
// buffers of their own, and capture once; each call still gets its own data and its own output.
TEST(GpuCudaGraphs, MovingAddressesArePooled) {
  std::string why;
  if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  toroid::driver::CompileOptions o;
  o.target = toroid::Target::cuda();
  o.dynamic = false;
  auto module = toroid::driver::CompiledModule::compile(R"(graph @moving functional {
  %x = input : f32[64, 32]
  %w = input : f32[32, 16]
  %h = aten.mm.default(%x, %w) : f32[64, 16]
  %y = aten.tanh.default(%h) : f32[64, 16]
  output %y
})", "moving.tir", o);
  toroid::ops::HostTensor w = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {32, 16});
  for (int64_t i = 0; i < w.numel(); ++i) w.set_double(i, 0.02 * static_cast<double>((i * 5) % 17) - 0.1);
  RtValue dw = cuda::to_device(RtValue(w));
  cuda::DeviceMemory ws = cuda::DeviceAllocator::global().allocate(1 << 20);
  toroid::set_log_topics("cuda");
  testing::internal::CaptureStderr();
  std::vector<RtValue> kept;  // every call's input and output stay alive: no address repeats
  std::vector<cuda::DeviceMemory> outs;
  for (int call = 0; call < 8; ++call) {
    toroid::ops::HostTensor x = toroid::ops::HostTensor::zeros(toroid::DType::Float32, {64, 32});
    for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::cos(0.07 * static_cast<double>(i + 13 * call)));
    RtValue dx = cuda::to_device(RtValue(x));
    kept.push_back(dx);
    std::vector<RtValue> want = toroid::interp::interpret(module->graph(), {RtValue(x), RtValue(w)});
    toroid::sym::Binding b;
    toroid::driver::Specialization& s = module->specialize({dx, dw}, &b);
    size_t need = s.workspace_bytes(b, /*outputs_given=*/false);
    ASSERT_LE(need, size_t(1) << 20);
    outs.push_back(cuda::DeviceAllocator::global().allocate(64 * 16 * 4));
    toroid::runtime::RunOptions ro;
    ro.workspace = ws->ptr;
    ro.workspace_bytes = need;
    ro.outputs = {std::make_shared<toroid::ops::HostStorage>(static_cast<std::byte*>(outs.back()->ptr), 64 * 16 * 4,
                                                             std::make_shared<NotOwned>())};
    module->run_specialized(s, {dx, dw}, b, ro);
    std::vector<float> got(64 * 16);
    cuda::copy_to_host(got.data(), outs.back()->ptr, got.size() * 4);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[0].tensor().get_double(static_cast<int64_t>(i)), 1e-4) << "call " << call << " element " << i;
  }
  std::string log = testing::internal::GetCapturedStderr();
  toroid::set_log_topics("");
  EXPECT_NE(log.find("addresses move every call"), std::string::npos) << log;
  EXPECT_NE(log.find("captured partition"), std::string::npos) << log;
}
