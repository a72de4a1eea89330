// HostTensor: a strided tensor in CPU memory, the value type of the reference kernels and the
// reference interpreter. Views share their storage (a shared_ptr), so in-place kernels that
// write through a view are seen by every alias, as in PyTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "toroid/graph/types.h"

namespace toroid::ops {

struct HostStorage {
  // Takes back memory a storage adopted (a caching allocator). Every such storage holds it, so
  // it lives as long as any of them.
  struct Releaser {
    virtual ~Releaser() = default;
    virtual void release(std::byte* data, size_t nbytes) noexcept = 0;
  };

  // 64-byte aligned, zero-initialized bytes (uninitialized when zero_fill is false: compiled
  // code writes every element it allocates before reading it).
  explicit HostStorage(size_t nbytes, bool zero_fill = true);
  // Adopts `data` (64-byte aligned, at least `nbytes` bytes, contents as they are): destruction
  // hands it to `releaser` with `nbytes` instead of freeing it.
  HostStorage(std::byte* data, size_t nbytes, std::shared_ptr<Releaser> releaser);
  ~HostStorage();
  HostStorage(const HostStorage&) = delete;
  HostStorage& operator=(const HostStorage&) = delete;
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  // Enlarges the storage in place, as PyTorch's resize_ does: every tensor on it sees the new
  // bytes (old ones kept, new ones zero). No-op when it is already large enough.
  void grow(size_t nbytes);
  // Points a storage that adopted memory at other memory of the same size: the C ABI reuses the
  // storages wrapping a caller's tensors from one call to the next (their releaser keeps
  // nothing). An internal error for a storage that owns its memory.
  void repoint(std::byte* data);

 private:
  std::byte* data_ = nullptr;
  size_t nbytes_ = 0;
  std::shared_ptr<Releaser> releaser_;  // null: data_ came from operator new
};

class HostTensor {
 public:
  HostTensor() = default;  // undefined

  // Contiguous, zero-filled.
  static HostTensor zeros(DType dtype, std::vector<int64_t> sizes);
  // With the given strides (non-negative); the storage covers every addressed element.
  static HostTensor empty_strided(DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides);
  // A tensor over an existing storage (UserError if it would address outside it).
  static HostTensor from_storage(std::shared_ptr<HostStorage> storage, DType dtype, std::vector<int64_t> sizes,
                                 std::vector<int64_t> strides, int64_t offset);
  // Contiguous tensor of the same dtype and sizes as `like`.
  static HostTensor zeros_like(const HostTensor& like);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t offset() const { return offset_; }  // in elements
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const;
  int64_t element_size() const { return dtype_size(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<HostStorage>& storage() const { return storage_; }
  bool shares_storage(const HostTensor& o) const { return storage_ && storage_ == o.storage_; }

  // A view of the same storage (UserError if it would address outside the storage).
  HostTensor as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) const;
  // A contiguous copy (always a new storage).
  HostTensor clone() const;
  // Converts (a new contiguous tensor) with PyTorch's casting rules: float to int truncates
  // toward zero, to bool is != 0, nan to int is unspecified but never UB.
  HostTensor to(DType dtype) const;

  // Address of the element at `offset()` (the first logical element).
  std::byte* data() const;
  // Address of the element with this multi-index.
  std::byte* element_ptr(const std::vector<int64_t>& index) const;

  // Element access through double / int64 (for tests, npy and simple kernels); `linear` is the
  // row-major logical position (0 <= linear < numel()).
  double get_double(int64_t linear) const;
  int64_t get_int(int64_t linear) const;
  void set_double(int64_t linear, double v) const;  // rounds/casts to the dtype
  void set_int(int64_t linear, int64_t v) const;

  // "f32[2, 3]{strides=[1, 2]}" style, for messages.
  std::string describe() const;

 private:
  DType dtype_ = DType::Float32;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  std::shared_ptr<HostStorage> storage_;
};

// Copies src (broadcast to dst's sizes) into dst with casting; a UserError naming `op` when
// the sizes do not broadcast.
void copy_into(const std::string& op, const HostTensor& dst, const HostTensor& src);

}  // namespace toroid::ops
