#include "toroid/runtime/host_allocator.h"

#include <bit>
#include <cstdlib>
#include <deque>
#include <list>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "toroid/support/error.h"

namespace toroid::runtime {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kDefaultCapMb = 1024;

std::byte* system_alloc(size_t size) {
  return static_cast<std::byte*>(::operator new(size, std::align_val_t(kAlign), std::nothrow));
}
void system_free(std::byte* p) { ::operator delete(p, std::align_val_t(kAlign)); }

size_t cap_from_env() {
  const char* s = std::getenv("TOROID_HOST_CACHE_MB");
  if (!s || !*s) return kDefaultCapMb << 20;
  char* end = nullptr;
  unsigned long long mb = std::strtoull(s, &end, 10);
  if (*end || *s == '-' || mb > (SIZE_MAX >> 20))
    user_error(std::string("TOROID_HOST_CACHE_MB must be a number of megabytes, got '") + s + "'");
  return static_cast<size_t>(mb) << 20;
}
}  // namespace

// The free lists. Storages hold it (as their releaser) until they die, so it outlives the
// HostAllocator when they do.
struct HostAllocator::State : ops::HostStorage::Releaser {
  struct Block {
    std::byte* data;
    size_t size;  // its size class
  };
  using Lru = std::list<Block>;  // every cached block, most recently returned first

  mutable std::mutex mu;
  size_t cap;
  Lru lru;
  std::unordered_map<size_t, std::deque<Lru::iterator>> by_class;  // oldest first
  HostCacheStats counts;

  explicit State(size_t c) : cap(c) {}
  ~State() override { clear(); }

  // A cached block of class `size`, the most recently returned one; null when there is none.
  std::byte* take(size_t size) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = by_class.find(size);
    if (it == by_class.end() || it->second.empty()) return nullptr;
    Lru::iterator b = it->second.back();
    it->second.pop_back();
    std::byte* data = b->data;
    lru.erase(b);
    counts.cached_blocks--;
    counts.cached_bytes -= static_cast<int64_t>(size);
    counts.reused_blocks++;
    counts.lent_bytes += static_cast<int64_t>(size);
    return data;
  }

  void lent_fresh(size_t size) {
    std::lock_guard<std::mutex> lock(mu);
    counts.fresh_blocks++;
    counts.lent_bytes += static_cast<int64_t>(size);
  }

  void release(std::byte* data, size_t nbytes) noexcept override {
    size_t size = class_size(nbytes);
    std::lock_guard<std::mutex> lock(mu);
    counts.lent_bytes -= static_cast<int64_t>(size);
    if (size > cap) {
      free_block(data);
      return;
    }
    try {
      lru.push_front(Block{data, size});
      try {
        by_class[size].push_back(lru.begin());
      } catch (...) {
        lru.pop_front();
        throw;
      }
    } catch (...) {  // no memory for the bookkeeping: give the block back instead
      free_block(data);
      return;
    }
    counts.cached_blocks++;
    counts.cached_bytes += static_cast<int64_t>(size);
    trim_locked(cap);
  }

  // Frees the least recently returned blocks until at most `limit` bytes are cached.
  void trim_locked(size_t limit) {
    while (static_cast<size_t>(counts.cached_bytes) > limit && !lru.empty()) {
      Lru::iterator oldest = std::prev(lru.end());
      // Within a class, blocks are in return order, so the oldest overall is its class's first.
      std::deque<Lru::iterator>& q = by_class.at(oldest->size);
      TOROID_CHECK(!q.empty() && q.front() == oldest, "host allocator free lists out of order");
      q.pop_front();
      counts.cached_blocks--;
      counts.cached_bytes -= static_cast<int64_t>(oldest->size);
      free_block(oldest->data);
      lru.erase(oldest);
    }
  }

  void free_block(std::byte* data) {
    system_free(data);
    counts.freed_blocks++;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu);
    trim_locked(0);
    by_class.clear();
  }
};

HostAllocator::HostAllocator(size_t cap_bytes) : state_(std::make_shared<State>(cap_bytes)) {}

HostAllocator::~HostAllocator() { empty_cache(); }

HostAllocator& HostAllocator::global() {
  static HostAllocator allocator(cap_from_env());
  return allocator;
}

size_t HostAllocator::class_size(size_t nbytes) {
  if (nbytes <= kAlign) return kAlign;
  if (nbytes <= kGranule) return std::bit_ceil(nbytes);
  if (nbytes > SIZE_MAX - kGranule) return SIZE_MAX;  // allocate() reports it as out of memory
  return (nbytes + kGranule - 1) / kGranule * kGranule;
}

std::shared_ptr<ops::HostStorage> HostAllocator::allocate(size_t nbytes) {
  size_t size = class_size(nbytes);
  std::byte* data = state_->take(size);
  if (!data) {
    data = size == SIZE_MAX ? nullptr : system_alloc(size);
    if (!data && size != SIZE_MAX) {  // the cache may hold what the system lacks
      empty_cache();
      data = system_alloc(size);
    }
    if (!data) user_error("out of memory allocating a tensor of " + std::to_string(nbytes) + " bytes");
    state_->lent_fresh(size);
  }
  try {
    return std::make_shared<ops::HostStorage>(data, nbytes, state_);
  } catch (...) {
    state_->release(data, nbytes);
    throw;
  }
}

void HostAllocator::empty_cache() { state_->clear(); }

void HostAllocator::set_cap(size_t cap_bytes) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->cap = cap_bytes;
  state_->trim_locked(cap_bytes);
}

size_t HostAllocator::cap() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->cap;
}

HostCacheStats HostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->counts;
}

}  // namespace toroid::runtime
