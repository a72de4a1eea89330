// The CUDA driver layer where there may be no GPU: availability is reported, not thrown, and
// every entry point that needs a device says why there is none. Size classes of the device
// allocator need no device either.
#include <gtest/gtest.h>

#include <string>

#include "toroid/runtime/cuda/device_allocator.h"
#include "toroid/runtime/cuda/driver.h"
#include "toroid/support/error.h"

namespace {

namespace cuda = toroid::runtime::cuda;
using cuda::DeviceAllocator;

TEST(CudaDriver, AvailableNeverThrowsAndGivesAReason) {
  std::string why = "unset";
  bool ok = false;
  EXPECT_NO_THROW(ok = cuda::available(&why));
  if (ok)
    EXPECT_TRUE(why.empty()) << why;
  else
    EXPECT_FALSE(why.empty());
  // The answer is cached: asking again gives the same, with or without a reason.
  EXPECT_EQ(cuda::available(), ok);
  std::string again;
  cuda::available(&again);
  EXPECT_EQ(again, why);
}

// Expects `f` to throw a UserError that carries `why`.
template <class F>
void expect_unavailable(F f, const std::string& why) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const toroid::UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA is not available"), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
}

TEST(CudaDriver, EntryPointsNameTheReasonWhenUnavailable) {
  std::string why;
  if (cuda::available(&why)) {
    EXPECT_GT(cuda::device().sm_count, 0);
    EXPECT_NE(cuda::default_stream(), nullptr);
    return;
  }
  expect_unavailable([] { cuda::device(); }, why);
  expect_unavailable([] { cuda::default_stream(); }, why);
  expect_unavailable([] { cuda::raw_alloc(16); }, why);
  expect_unavailable([] { cuda::Event e; }, why);
  expect_unavailable([] { cuda::Module m("", "a module"); }, why);
  expect_unavailable([] { DeviceAllocator::global().allocate(16); }, why);
  // Asking twice fails the same way (a failed start is not remembered as started).
  expect_unavailable([] { cuda::device(); }, why);
}

TEST(CudaDriver, EmptyCacheNeedsNoDevice) {
  EXPECT_NO_THROW(DeviceAllocator::global().empty_cache());
  EXPECT_EQ(DeviceAllocator::global().stats().cached_blocks, 0);
}

TEST(DeviceAllocator, SizeClasses) {
  constexpr size_t kMiB = size_t(1) << 20;
  EXPECT_EQ(DeviceAllocator::class_size(0), 512u);
  EXPECT_EQ(DeviceAllocator::class_size(1), 512u);
  EXPECT_EQ(DeviceAllocator::class_size(512), 512u);
  EXPECT_EQ(DeviceAllocator::class_size(513), 1024u);
  EXPECT_EQ(DeviceAllocator::class_size(5000), 5120u);
  EXPECT_EQ(DeviceAllocator::class_size(kMiB - 1), kMiB);
  EXPECT_EQ(DeviceAllocator::class_size(kMiB), kMiB);
  // Above 1 MiB: multiples of 2 MiB.
  EXPECT_EQ(DeviceAllocator::class_size(kMiB + 1), 2 * kMiB);
  EXPECT_EQ(DeviceAllocator::class_size(2 * kMiB), 2 * kMiB);
  EXPECT_EQ(DeviceAllocator::class_size(2 * kMiB + 1), 4 * kMiB);
  EXPECT_EQ(DeviceAllocator::class_size(5 * kMiB), 6 * kMiB);
  EXPECT_EQ(DeviceAllocator::class_size(size_t(1) << 50), size_t(1) << 50);
  // Beyond any device: reported by allocate() as out of memory.
  EXPECT_EQ(DeviceAllocator::class_size(SIZE_MAX - 1), SIZE_MAX);
  for (size_t n : {size_t(1), size_t(700), size_t(123456), 3 * kMiB + 17}) {
    EXPECT_GE(DeviceAllocator::class_size(n), n);
    EXPECT_EQ(DeviceAllocator::class_size(n) % 512, 0u);
  }
}

}  // namespace
