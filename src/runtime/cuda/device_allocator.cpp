#include "toroid/runtime/cuda/device_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver_internal.h"
#include "toroid/support/error.h"

namespace toroid::runtime::cuda {

namespace {
constexpr size_t kSmallStep = 512;
constexpr size_t kSmallMax = size_t(1) << 20;
constexpr size_t kLargeStep = size_t(2) << 20;

size_t cap_from_env() {
  const char* s = std::getenv("TOROID_CUDA_CACHE_MB");
  if (!s || !*s) return SIZE_MAX;
  char* end = nullptr;
  unsigned long long mb = std::strtoull(s, &end, 10);
  if (*end || *s == '-' || mb > (SIZE_MAX >> 20))
    user_error(std::string("TOROID_CUDA_CACHE_MB must be a number of megabytes, got '") + s + "'");
  return static_cast<size_t>(mb) << 20;
}
}  // namespace

// The free lists. Every lent block's deleter holds it, so it outlives the allocator when they do.
struct DeviceAllocator::State {
  struct Block {
    void* ptr;
    size_t size;    // its size class
    Stream stream;  // the stream it was lent on: reusable there at once
    void* event;    // recorded on `stream` when it came back; null: reusable only on `stream`
  };
  using Lru = std::list<Block>;  // every cached block, most recently returned first

  mutable std::mutex mu;
  size_t cap;
  // Set at exit: blocks are no longer cached or freed (see ~DeviceAllocator).
  bool closed = false;
  // Events cost a driver call per free, so they are recorded only once a second stream has
  // asked for memory: with one stream, no block is ever wanted elsewhere.
  Stream first_stream = nullptr;
  bool multi_stream = false;
  Lru lru;
  std::unordered_map<size_t, std::vector<Lru::iterator>> by_class;  // oldest first
  std::vector<void*> spare_events;
  DeviceCacheStats counts;

  explicit State(size_t c) : cap(c) {}

  // A cached block of class `size` that stream `s` may use now; null when there is none.
  void* take(size_t size, Stream s) {
    std::lock_guard<std::mutex> lock(mu);
    if (!first_stream) first_stream = s;
    if (s != first_stream) multi_stream = true;
    auto it = by_class.find(size);
    if (it == by_class.end() || it->second.empty()) return nullptr;
    std::vector<Lru::iterator>& q = it->second;
    // The most recently returned first (its memory is likeliest in the L2); a block of the same
    // stream needs no wait: stream order puts its old work before the new.
    size_t pick = q.size();
    for (size_t i = q.size(); i-- > 0;)
      if (q[i]->stream == s) {
        pick = i;
        break;
      }
    if (pick == q.size())
      for (size_t i = q.size(); i-- > 0;)
        if (q[i]->event && detail::event_done(q[i]->event)) {
          pick = i;
          break;
        }
    if (pick == q.size()) return nullptr;
    Lru::iterator b = q[pick];
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(pick));
    void* ptr = b->ptr;
    if (b->event) recycle_event(b->event);
    lru.erase(b);
    counts.cached_blocks--;
    counts.cached_bytes -= static_cast<int64_t>(size);
    counts.reused_blocks++;
    lend_locked(size);
    return ptr;
  }

  void lent_fresh(size_t size) {
    std::lock_guard<std::mutex> lock(mu);
    counts.fresh_blocks++;
    lend_locked(size);
  }

  void lend_locked(size_t size) {
    counts.lent_bytes += static_cast<int64_t>(size);
    counts.peak_lent_bytes = std::max(counts.peak_lent_bytes, counts.lent_bytes);
  }

  void release(void* ptr, size_t size, Stream s) noexcept {
    std::lock_guard<std::mutex> lock(mu);
    counts.lent_bytes -= static_cast<int64_t>(size);
    if (closed) return;
    if (size > cap) {
      detail::free_quietly(ptr);
      return;
    }
    void* event = nullptr;
    try {
      if (multi_stream) {
        // Completes once the work queued on `s` so far (the block's last uses) is done.
        if (spare_events.empty()) {
          event = detail::create_event();
        } else {
          event = spare_events.back();
          spare_events.pop_back();
        }
        detail::record_event(event, s);
      }
      lru.push_front(Block{ptr, size, s, event});
      try {
        by_class[size].push_back(lru.begin());
      } catch (...) {
        lru.pop_front();
        throw;
      }
    } catch (...) {  // a driver error or no memory for the bookkeeping: give the block back
      detail::destroy_event_quietly(event);
      detail::free_quietly(ptr);
      return;
    }
    counts.cached_blocks++;
    counts.cached_bytes += static_cast<int64_t>(size);
    trim_locked(cap);
  }

  void recycle_event(void* event) noexcept {
    try {
      spare_events.push_back(event);
    } catch (...) {
      detail::destroy_event_quietly(event);
    }
  }

  // Frees the least recently returned blocks until at most `limit` bytes are cached. cuMemFree
  // waits for work still using the memory, so freeing a block is safe whatever its stream.
  void trim_locked(size_t limit) noexcept {
    while (static_cast<size_t>(counts.cached_bytes) > limit && !lru.empty()) {
      Lru::iterator oldest = std::prev(lru.end());
      // Within a class, blocks are in return order, so the oldest overall is its class's first.
      std::vector<Lru::iterator>& q = by_class[oldest->size];
      q.erase(q.begin());
      counts.cached_blocks--;
      counts.cached_bytes -= static_cast<int64_t>(oldest->size);
      detail::destroy_event_quietly(oldest->event);
      detail::free_quietly(oldest->ptr);
      lru.erase(oldest);
    }
  }

  // The deleter of a lent block: hands it back to the free lists.
  struct GiveBack {
    std::shared_ptr<State> state;
    size_t size;
    Stream stream;
    void operator()(DeviceBlock* b) const noexcept {
      state->release(b->ptr, size, stream);
      delete b;
    }
  };

  bool has_cached() const {
    std::lock_guard<std::mutex> lock(mu);
    return !lru.empty() || !spare_events.empty();
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu);
    trim_locked(0);
    by_class.clear();
    for (void* e : spare_events) detail::destroy_event_quietly(e);
    spare_events.clear();
  }
};

DeviceAllocator::DeviceAllocator() : state_(std::make_shared<State>(cap_from_env())) {}

// Runs at exit, in an order unrelated to the driver's own shutdown: calling cuMemFree then
// could meet a driver that is already gone. The process is ending and the driver reclaims the
// context's memory, so the cached blocks, and those lent still, are left as they are.
DeviceAllocator::~DeviceAllocator() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->closed = true;
}

DeviceAllocator& DeviceAllocator::global() {
  static DeviceAllocator allocator;
  return allocator;
}

size_t DeviceAllocator::class_size(size_t nbytes) {
  if (nbytes <= kSmallStep) return kSmallStep;
  if (nbytes <= kSmallMax) return (nbytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  if (nbytes > SIZE_MAX - kLargeStep) return SIZE_MAX;  // allocate() reports it as out of memory
  return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

DeviceMemory DeviceAllocator::allocate(size_t nbytes, Stream s) {
  Stream stream = detail::resolve(s);  // UserError when there is no device
  size_t size = class_size(nbytes);
  auto block = std::make_unique<DeviceBlock>();
  block->nbytes = nbytes;
  block->ptr = state_->take(size, stream);
  if (!block->ptr) {
    if (size != SIZE_MAX) {
      block->ptr = detail::try_alloc(size);
      if (!block->ptr) {  // the cache may hold what the driver lacks
        empty_cache();
        block->ptr = detail::try_alloc(size);
      }
    }
    if (!block->ptr) {
      DeviceCacheStats st = stats();
      user_error("out of device memory allocating " + std::to_string(nbytes) + " bytes (" +
                 std::to_string(st.cached_bytes) + " bytes cached, " +
                 std::to_string(st.lent_bytes) + " lent)");
    }
    state_->lent_fresh(size);
  }
  // cuMemAlloc aligns to at least 256 bytes, and class sizes are multiples of 512. Should the
  // shared_ptr fail to allocate its count, it runs GiveBack itself.
  return DeviceMemory(block.release(), State::GiveBack{state_, size, stream});
}

void DeviceAllocator::empty_cache() {
  if (!state_->has_cached()) return;  // needs no device (nor a driver) then
  detail::synchronize_device();
  state_->clear();
}

DeviceCacheStats DeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->counts;
}

void DeviceAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->counts.peak_lent_bytes = state_->counts.lent_bytes;
}

}  // namespace toroid::runtime::cuda
