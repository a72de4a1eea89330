// The caching host allocator: size classes, reuse, the cap, lifetime and threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "toroid/runtime/host_allocator.h"

namespace {

using toroid::ops::HostStorage;
using toroid::runtime::HostAllocator;
constexpr size_t kG = HostAllocator::kGranule;

TEST(HostAllocator, SizeClasses) {
  EXPECT_EQ(HostAllocator::class_size(0), 64u);
  EXPECT_EQ(HostAllocator::class_size(64), 64u);
  EXPECT_EQ(HostAllocator::class_size(65), 128u);
  EXPECT_EQ(HostAllocator::class_size(1000), 1024u);
  EXPECT_EQ(HostAllocator::class_size(kG), kG);
  EXPECT_EQ(HostAllocator::class_size(kG + 1), 2 * kG);
  EXPECT_EQ(HostAllocator::class_size(3 * kG + 5), 4 * kG);
  EXPECT_EQ(HostAllocator::class_size(128u << 20), 128u << 20);
}

TEST(HostAllocator, ReusesAFreedBlockOfTheSameClass) {
  HostAllocator a(1 << 20);
  std::shared_ptr<HostStorage> s = a.allocate(1000);
  EXPECT_EQ(s->nbytes(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 64, 0u);
  std::memset(s->data(), 7, 1000);
  std::byte* p = s->data();
  s.reset();
  EXPECT_EQ(a.stats().cached_blocks, 1);
  EXPECT_EQ(a.stats().cached_bytes, 1024);
  std::shared_ptr<HostStorage> t = a.allocate(600);  // same class (1024)
  EXPECT_EQ(t->data(), p);
  EXPECT_EQ(t->nbytes(), 600u);
  EXPECT_EQ(a.stats().fresh_blocks, 1);
  EXPECT_EQ(a.stats().reused_blocks, 1);
  EXPECT_EQ(a.stats().cached_blocks, 0);
  EXPECT_EQ(a.stats().lent_bytes, 1024);
}

TEST(HostAllocator, AnotherClassGetsAFreshBlock) {
  HostAllocator a(1 << 20);
  a.allocate(1000).reset();
  std::shared_ptr<HostStorage> t = a.allocate(3000);
  EXPECT_EQ(a.stats().fresh_blocks, 2);
  EXPECT_EQ(a.stats().reused_blocks, 0);
  EXPECT_EQ(a.stats().cached_blocks, 1);
}

TEST(HostAllocator, NoReuseWhileHeld) {
  HostAllocator a(1 << 20);
  std::shared_ptr<HostStorage> s = a.allocate(5 * kG);
  std::shared_ptr<HostStorage> alias = s;  // a second owner (a view) keeps it lent
  s.reset();
  std::shared_ptr<HostStorage> t = a.allocate(5 * kG);
  EXPECT_NE(t->data(), alias->data());
  EXPECT_EQ(a.stats().fresh_blocks, 2);
  EXPECT_EQ(a.stats().reused_blocks, 0);
}

TEST(HostAllocator, CapTrimsTheLeastRecentlyReturned) {
  HostAllocator a(3 * kG);
  std::vector<std::shared_ptr<HostStorage>> held;
  for (int i = 0; i < 4; ++i) held.push_back(a.allocate(kG));
  std::vector<std::byte*> ptrs;
  for (auto& s : held) ptrs.push_back(s->data());
  for (auto& s : held) s.reset();  // returned in order 0, 1, 2, 3: block 0 goes
  EXPECT_EQ(a.stats().cached_bytes, static_cast<int64_t>(3 * kG));
  EXPECT_EQ(a.stats().freed_blocks, 1);
  // The most recently returned come back first.
  for (int i = 3; i >= 1; --i) {
    held[static_cast<size_t>(i)] = a.allocate(kG);
    EXPECT_EQ(held[static_cast<size_t>(i)]->data(), ptrs[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(a.stats().reused_blocks, 3);
  EXPECT_EQ(a.stats().cached_blocks, 0);
}

TEST(HostAllocator, BlockOverTheCapIsNotCached) {
  HostAllocator a(2 * kG);
  a.allocate(kG).reset();
  a.allocate(3 * kG).reset();
  EXPECT_EQ(a.stats().cached_blocks, 1);  // the small one stays
  EXPECT_EQ(a.stats().cached_bytes, static_cast<int64_t>(kG));
  EXPECT_EQ(a.stats().freed_blocks, 1);
  HostAllocator none(0);
  none.allocate(100).reset();
  EXPECT_EQ(none.stats().cached_blocks, 0);
  EXPECT_EQ(none.stats().freed_blocks, 1);
}

TEST(HostAllocator, EmptyCacheAndSetCap) {
  HostAllocator a(1 << 20);
  std::vector<std::shared_ptr<HostStorage>> held;
  for (size_t n : {100, 1000, 10000, 100000}) held.push_back(a.allocate(n));
  held.clear();
  EXPECT_EQ(a.stats().cached_blocks, 4);
  a.set_cap(1024 + 128);  // trims, least recently returned first, until within the cap
  EXPECT_EQ(a.cap(), 1024u + 128u);
  EXPECT_LE(a.stats().cached_bytes, 1024 + 128);
  a.empty_cache();
  EXPECT_EQ(a.stats().cached_blocks, 0);
  EXPECT_EQ(a.stats().cached_bytes, 0);
  EXPECT_EQ(a.stats().freed_blocks, 4);
}

TEST(HostAllocator, StorageMayOutliveTheAllocator) {
  std::shared_ptr<HostStorage> s;
  {
    HostAllocator a(1 << 20);
    s = a.allocate(4096);
    a.allocate(4096).reset();  // cached, freed with the allocator
  }
  std::memset(s->data(), 1, 4096);
  s.reset();  // returns to the orphaned state, which then frees it (ASan checks both)
}

TEST(HostAllocator, GrowGivesTheOldBlockBack) {
  HostAllocator a(1 << 20);
  std::shared_ptr<HostStorage> s = a.allocate(100);
  std::memset(s->data(), 3, 100);
  s->grow(10000);
  EXPECT_EQ(s->nbytes(), 10000u);
  EXPECT_EQ(s->data()[99], std::byte{3});
  EXPECT_EQ(s->data()[5000], std::byte{0});
  EXPECT_EQ(a.stats().cached_blocks, 1);
  EXPECT_EQ(a.stats().lent_bytes, 0);
  s.reset();  // the grown memory is the storage's own
  EXPECT_EQ(a.stats().cached_blocks, 1);
}

TEST(HostAllocator, ThreadSafetySmoke) {
  HostAllocator a(8 * kG);
  constexpr int kThreads = 4, kIters = 3000;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&a, &bad, t] {
      std::vector<std::shared_ptr<HostStorage>> held(3);
      uint32_t r = 12345u + static_cast<uint32_t>(t);
      for (int i = 0; i < kIters; ++i) {
        r = r * 1664525u + 1013904223u;
        size_t n = size_t(1) << (6 + (r >> 28) % 12);  // 64 B .. 128 KiB
        auto& slot = held[(r >> 8) % held.size()];
        slot = a.allocate(n);
        std::memset(slot->data(), t + 1, n);
        std::this_thread::yield();
        for (size_t k = 0; k < n; k += 61) bad[static_cast<size_t>(t)] += slot->data()[k] != std::byte(t + 1);
      }
    });
  for (auto& th : threads) th.join();
  for (int b : bad) EXPECT_EQ(b, 0);
  toroid::runtime::HostCacheStats s = a.stats();
  EXPECT_EQ(s.fresh_blocks + s.reused_blocks, kThreads * kIters);
  EXPECT_EQ(s.lent_bytes, 0);
  EXPECT_LE(s.cached_bytes, static_cast<int64_t>(8 * kG));
  EXPECT_EQ(s.fresh_blocks - s.freed_blocks, s.cached_blocks);
}

}  // namespace
