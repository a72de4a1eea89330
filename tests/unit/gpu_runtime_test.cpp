// The CUDA runtime on a GPU: device info, copies, the caching allocator (reuse, streams, out of
// memory), events, and modules with hand-written PTX (the driver JIT-compiles it, so these
// tests need no NVRTC). Each test skips where there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/runtime/cuda/device_kernels.h"
#include "toroid/runtime/cuda/driver.h"
#include "toroid/support/error.h"

namespace {

namespace cuda = toroid::runtime::cuda;
using cuda::DeviceAllocator;
using cuda::DeviceMemory;

#define SKIP_WITHOUT_GPU()                                         \
  do {                                                             \
    std::string why;                                               \
    if (!cuda::available(&why)) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

// add_one(x, n): x[i] += 1 for i < n. spin(ns): one thread busy for `ns` nanoseconds.
// answer: a global holding 42. sm_70 PTX runs on every newer GPU through the driver's JIT.
const char* const kPtx = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .global .align 4 .u32 answer = 42;

.visible .entry add_one(.param .u64 x, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [x];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.u32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}

.visible .entry spin(.param .u64 ns)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
LOOP:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra LOOP;
  ret;
}
)";

void spin(const cuda::Module& m, uint64_t ns, cuda::Stream s) {
  void* args[] = {&ns};
  cuda::launch(m.function("spin"), cuda::LaunchDims{}, args, s, "spin");
}

template <class F>
std::string user_error_of(F f) {
  try {
    f();
  } catch (const toroid::UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

TEST(GpuRuntime, DeviceInfo) {
  SKIP_WITHOUT_GPU();
  const cuda::DeviceInfo& d = cuda::device();
  EXPECT_EQ(d.ordinal, 0);
  EXPECT_FALSE(d.name.empty());
  EXPECT_GE(d.arch(), 70);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GE(d.max_threads_per_block, 1024);
  EXPECT_GE(d.shared_bytes_per_block, size_t(48) << 10);
  EXPECT_GT(d.total_bytes, size_t(1) << 30);
  EXPECT_GE(d.driver_version, 12000);
  EXPECT_NE(cuda::default_stream(), nullptr);
  EXPECT_EQ(&cuda::device(), &d);  // one device, opened once
}

TEST(GpuRuntime, CopiesRoundTrip) {
  SKIP_WITHOUT_GPU();
  constexpr size_t n = 10000;
  std::vector<float> in(n), out(n, -1.0f), out2(n, -1.0f);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.5f;
  void* a = cuda::raw_alloc(n * sizeof(float));
  void* b = cuda::raw_alloc(n * sizeof(float));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  cuda::copy_to_device(a, in.data(), n * sizeof(float));
  cuda::copy_to_host(out.data(), a, n * sizeof(float));
  EXPECT_EQ(out, in);
  cuda::copy_device_to_device(b, a, n * sizeof(float));
  cuda::copy_to_host(out2.data(), b, n * sizeof(float));
  EXPECT_EQ(out2, in);
  cuda::raw_free(a);
  cuda::raw_free(b);
}

TEST(GpuRuntime, MemsetZero) {
  SKIP_WITHOUT_GPU();
  constexpr size_t n = 4096;
  std::vector<uint8_t> ones(n, 1), out(n, 7);
  DeviceMemory m = DeviceAllocator::global().allocate(n);
  cuda::copy_to_device(m->ptr, ones.data(), n);
  cuda::memset_zero(static_cast<char*>(m->ptr) + 100, 1000);
  cuda::copy_to_host(out.data(), m->ptr, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], (i >= 100 && i < 1100) ? 0 : 1) << i;
}

TEST(GpuRuntime, OtherThreadsGetTheContext) {
  SKIP_WITHOUT_GPU();
  DeviceMemory m = DeviceAllocator::global().allocate(sizeof(int));
  int in = 1234, out = 0;
  cuda::copy_to_device(m->ptr, &in, sizeof in);
  cuda::synchronize();
  std::string error;
  std::thread t([&] {
    try {
      cuda::copy_to_host(&out, m->ptr, sizeof out);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  t.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(out, 1234);
}

TEST(GpuAllocator, ReusesAFreedBlockOnTheSameStream) {
  SKIP_WITHOUT_GPU();
  DeviceAllocator& a = DeviceAllocator::global();
  DeviceMemory m = a.allocate(5000);
  EXPECT_EQ(m->nbytes, 5000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->ptr) % 256, 0u);
  void* p = m->ptr;
  cuda::memset_zero(p, 5000);
  cuda::DeviceCacheStats before = a.stats();
  m.reset();
  cuda::DeviceCacheStats freed = a.stats();
  EXPECT_EQ(freed.cached_blocks, before.cached_blocks + 1);
  EXPECT_EQ(freed.cached_bytes, before.cached_bytes + 5120);
  EXPECT_EQ(freed.lent_bytes, before.lent_bytes - 5120);
  DeviceMemory again = a.allocate(4700);  // the same class: 5120 bytes
  cuda::DeviceCacheStats after = a.stats();
  EXPECT_EQ(again->ptr, p);
  EXPECT_EQ(again->nbytes, 4700u);
  EXPECT_EQ(after.reused_blocks, before.reused_blocks + 1);
  EXPECT_EQ(after.fresh_blocks, before.fresh_blocks);
  EXPECT_EQ(after.lent_bytes, before.lent_bytes);
  EXPECT_GE(after.peak_lent_bytes, after.lent_bytes);
}

TEST(GpuAllocator, CrossStreamReuseWaitsForTheStream) {
  SKIP_WITHOUT_GPU();
  DeviceAllocator& a = DeviceAllocator::global();
  a.empty_cache();  // no 6 MiB blocks left by an earlier run (--gtest_repeat)
  // Events are recorded once the allocator has seen two streams: the default one, then s2.
  DeviceMemory first = a.allocate(1);
  cuda::Stream s2 = cuda::create_stream();
  cuda::Module m(kPtx, "test kernels");
  constexpr size_t kBytes = size_t(5) << 20;  // class 6 MiB, used by no other test

  DeviceMemory x = a.allocate(kBytes, s2);
  void* p = x->ptr;
  spin(m, 300'000'000, s2);  // s2 is busy for 300 ms
  x.reset();                  // returned while s2 may still be using it
  cuda::DeviceCacheStats before = a.stats();
  DeviceMemory y = a.allocate(kBytes);  // the default stream must not get it yet
  EXPECT_NE(y->ptr, p);
  EXPECT_EQ(a.stats().fresh_blocks, before.fresh_blocks + 1);

  cuda::synchronize(s2);
  DeviceMemory z = a.allocate(kBytes);  // now it may
  EXPECT_EQ(z->ptr, p);
  EXPECT_EQ(a.stats().reused_blocks, before.reused_blocks + 1);
  // On its own stream a block is taken back at once, busy or not.
  DeviceMemory w = a.allocate(kBytes, s2);
  void* q = w->ptr;
  spin(m, 100'000'000, s2);
  w.reset();
  DeviceMemory v = a.allocate(kBytes, s2);
  EXPECT_EQ(v->ptr, q);
  v.reset();
  cuda::destroy_stream(s2);
}

TEST(GpuAllocator, OutOfMemory) {
  SKIP_WITHOUT_GPU();
  const size_t huge = size_t(1) << 50;
  std::string msg = user_error_of([&] { DeviceAllocator::global().allocate(huge); });
  EXPECT_NE(msg.find("out of device memory allocating 1125899906842624 bytes ("), std::string::npos)
      << msg;
  EXPECT_NE(msg.find(" bytes cached, "), std::string::npos) << msg;
  msg = user_error_of([&] { cuda::raw_alloc(huge); });
  EXPECT_NE(msg.find("out of device memory allocating 1125899906842624 bytes"), std::string::npos)
      << msg;
  // Still usable afterwards.
  DeviceMemory m = DeviceAllocator::global().allocate(1000);
  EXPECT_NE(m->ptr, nullptr);
  cuda::synchronize();
}

TEST(GpuRuntime, EventsTime) {
  SKIP_WITHOUT_GPU();
  cuda::Module m(kPtx, "test kernels");
  cuda::Event start, stop;
  start.record();
  spin(m, 2'000'000, nullptr);  // 2 ms
  stop.record();
  stop.synchronize();
  float ms = stop.elapsed_ms_since(start);
  EXPECT_GE(ms, 0.0f);
  EXPECT_GE(ms, 1.0f);
  EXPECT_LT(ms, 10'000.0f);
}

TEST(GpuRuntime, ModuleLaunch) {
  SKIP_WITHOUT_GPU();
  cuda::Module m(kPtx, "test kernels");
  constexpr uint32_t n = 1000;
  std::vector<float> host(n);
  for (uint32_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  DeviceMemory x = DeviceAllocator::global().allocate(n * sizeof(float));
  cuda::copy_to_device(x->ptr, host.data(), n * sizeof(float));
  void* ptr = x->ptr;
  uint32_t count = n;
  void* args[] = {&ptr, &count};
  cuda::LaunchDims dims;
  dims.grid_x = (n + 255) / 256;
  dims.block_x = 256;
  cuda::launch(m.function("add_one"), dims, args, nullptr, "add_one");
  std::vector<float> out(n);
  cuda::copy_to_host(out.data(), x->ptr, n * sizeof(float));
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<float>(i) + 1.0f) << i;

  size_t nbytes = 0;
  void* g = m.global("answer", &nbytes);
  EXPECT_EQ(nbytes, 4u);
  uint32_t answer = 0;
  cuda::copy_to_host(&answer, g, sizeof answer);
  EXPECT_EQ(answer, 42u);
}

// nonzero on the device against a host loop: f32 with -0.0 (zero) and NaN (nonzero), over
// more elements than one scan chunk, in 2 dims; and an all-zero input.
TEST(GpuDeviceKernels, NonzeroMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  const int64_t rows = 37, cols = 53, n = rows * cols;
  std::vector<float> host(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (i % 7 == 0) host[i] = -0.0f;
    else if (i % 5 == 0) host[i] = 1.5f;
    else if (i % 11 == 0) host[i] = std::nanf("");
  }
  DeviceMemory x = DeviceAllocator::global().allocate(n * sizeof(float));
  cuda::copy_to_device(x->ptr, host.data(), n * sizeof(float));
  cuda::NonzeroInput in;
  in.data = x->ptr;
  in.numel = n;
  in.esize = 4;
  in.sign_mask = uint64_t(1) << 31;
  in.sizes = {rows, cols};
  std::vector<int64_t> want;  // [count, 2] with strides [1, count]
  for (int64_t i = 0; i < n; ++i)
    if (!(host[i] == 0.0f)) want.push_back(i);  // NaN is nonzero, -0.0 is not
  int64_t count = cuda::count_nonzero(in, nullptr);
  ASSERT_EQ(count, static_cast<int64_t>(want.size()));
  DeviceMemory out = DeviceAllocator::global().allocate(2 * count * sizeof(int64_t));
  cuda::nonzero_coordinates(in, count, static_cast<int64_t*>(out->ptr), nullptr);
  std::vector<int64_t> got(2 * count);
  cuda::copy_to_host(got.data(), out->ptr, got.size() * sizeof(int64_t));
  for (int64_t k = 0; k < count; ++k) {
    ASSERT_EQ(got[k], want[k] / cols) << k;
    ASSERT_EQ(got[count + k], want[k] % cols) << k;
  }
  std::vector<float> zeros(n, 0.0f);
  cuda::copy_to_device(x->ptr, zeros.data(), n * sizeof(float));
  EXPECT_EQ(cuda::count_nonzero(in, nullptr), 0);
}

// Lines of lengths around the bitonic network's block (2048) and powers of two, with ties, NaN
// and -inf: values and positions match a host stable sort (NaN largest) in both directions.
TEST(GpuDeviceKernels, SortMatchesAStableHostSort) {
  SKIP_WITHOUT_GPU();
  for (int64_t len : {1, 5, 64, 2047, 2048, 2049, 5000}) {
    for (bool descending : {false, true}) {
      const int64_t lines = 3;
      std::vector<float> host(static_cast<size_t>(lines * len));
      for (size_t i = 0; i < host.size(); ++i)
        host[i] = i % 13 == 0 ? std::nanf("") : i % 17 == 0 ? -INFINITY : static_cast<float>((i * 7919) % 101) - 50.0f;
      DeviceMemory x = DeviceAllocator::global().allocate(host.size() * sizeof(float));
      cuda::copy_to_device(x->ptr, host.data(), host.size() * sizeof(float));
      int64_t k = std::min<int64_t>(len, 9);
      for (int64_t want_k : {len, k}) {
        DeviceMemory vals = DeviceAllocator::global().allocate(lines * want_k * sizeof(float));
        DeviceMemory idx = DeviceAllocator::global().allocate(lines * want_k * sizeof(int64_t));
        cuda::sort_lines(x->ptr, toroid::DType::Float32, lines, len, 1, want_k, descending, vals->ptr,
                         static_cast<int64_t*>(idx->ptr), nullptr);
        std::vector<float> got_v(static_cast<size_t>(lines * want_k));
        std::vector<int64_t> got_i(static_cast<size_t>(lines * want_k));
        cuda::copy_to_host(got_v.data(), vals->ptr, got_v.size() * sizeof(float));
        cuda::copy_to_host(got_i.data(), idx->ptr, got_i.size() * sizeof(int64_t));
        for (int64_t line = 0; line < lines; ++line) {
          const float* row = host.data() + line * len;
          std::vector<int64_t> order(static_cast<size_t>(len));
          for (int64_t j = 0; j < len; ++j) order[static_cast<size_t>(j)] = j;
          auto less = [](float a, float b) { return std::isnan(a) ? false : std::isnan(b) ? true : a < b; };
          std::stable_sort(order.begin(), order.end(),
                           [&](int64_t p, int64_t q) { return descending ? less(row[q], row[p]) : less(row[p], row[q]); });
          for (int64_t j = 0; j < want_k; ++j) {
            size_t at = static_cast<size_t>(line * want_k + j);
            ASSERT_EQ(got_i[at], order[static_cast<size_t>(j)]) << "len " << len << " desc " << descending << " k " << want_k;
            float w = row[order[static_cast<size_t>(j)]];
            ASSERT_TRUE(std::isnan(w) ? std::isnan(got_v[at]) : got_v[at] == w);
          }
        }
      }
    }
  }
}

TEST(GpuRuntime, ModuleErrorsNameWhatWasAsked) {
  SKIP_WITHOUT_GPU();
  cuda::Module m(kPtx, "test kernels");
  std::string msg = user_error_of([&] { m.function("no_such_kernel"); });
  EXPECT_NE(msg.find("cuModuleGetFunction"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_such_kernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test kernels"), std::string::npos) << msg;
  msg = user_error_of([&] { m.global("no_such_global"); });
  EXPECT_NE(msg.find("no_such_global"), std::string::npos) << msg;
  // PTX that does not compile: the JIT's log comes with the error.
  msg = user_error_of([] { cuda::Module bad(".version 7.0\n.target sm_70\nnonsense", "bad ptx"); });
  EXPECT_NE(msg.find("cuModuleLoadDataEx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad ptx"), std::string::npos) << msg;
}

TEST(GpuRuntime, LaunchChecksDims) {
  SKIP_WITHOUT_GPU();
  cuda::Module m(kPtx, "test kernels");
  cuda::Function f = m.function("add_one");
  void* ptr = nullptr;
  uint32_t count = 0;
  void* args[] = {&ptr, &count};
  cuda::LaunchDims empty;
  empty.grid_x = 0;
  EXPECT_THROW(cuda::launch(f, empty, args, nullptr, "add_one"), toroid::InternalError);
  cuda::LaunchDims big;
  big.block_x = 2048;
  EXPECT_THROW(cuda::launch(f, big, args, nullptr, "add_one"), toroid::InternalError);
  // A launch error from the driver names the kernel: too much dynamic shared memory.
  cuda::LaunchDims shared;
  shared.shared_bytes = 1u << 30;
  std::string msg = user_error_of([&] { cuda::launch(f, shared, args, nullptr, "add_one"); });
  EXPECT_NE(msg.find("cuLaunchKernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("add_one"), std::string::npos) << msg;
  cuda::synchronize();
}

}  // namespace
