#include "toroid/ops/host_tensor.h"

#include <cstring>
#include <new>
#include <sstream>

#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"

namespace toroid::ops {

namespace {
constexpr size_t kAlign = 64;

// Overflow-checked a * b + c for sizes; UserError on overflow.
int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) user_error(std::string("tensor too large: ") + what + " overflows int64");
  return r;
}
int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) user_error(std::string("tensor too large: ") + what + " overflows int64");
  return r;
}

void check_sizes(const std::vector<int64_t>& sizes) {
  for (int64_t s : sizes)
    if (s < 0) user_error("negative dimension " + std::to_string(s) + " in sizes " + shape_str(sizes));
}

// The highest element offset addressed (0 for empty tensors); checks overflow.
int64_t max_offset(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset) {
  int64_t hi = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return offset;
    hi = checked_add(hi, checked_mul(sizes[d] - 1, strides[d], "storage extent"), "storage extent");
  }
  return hi;
}
}  // namespace

HostStorage::HostStorage(size_t nbytes, bool zero_fill) : nbytes_(nbytes) {
  size_t n = (nbytes + kAlign - 1) / kAlign * kAlign;
  if (n == 0) n = kAlign;
  try {
    data_ = static_cast<std::byte*>(::operator new(n, std::align_val_t(kAlign)));
  } catch (const std::bad_alloc&) {
    user_error("out of memory allocating a tensor of " + std::to_string(nbytes) + " bytes");
  }
  if (zero_fill) std::memset(data_, 0, n);
}

HostStorage::HostStorage(std::byte* data, size_t nbytes, std::shared_ptr<Releaser> releaser)
    : data_(data), nbytes_(nbytes), releaser_(std::move(releaser)) {}

HostStorage::~HostStorage() {
  if (releaser_)
    releaser_->release(data_, nbytes_);
  else
    ::operator delete(data_, std::align_val_t(kAlign));
}

void HostStorage::grow(size_t nbytes) {
  if (nbytes <= nbytes_) return;
  HostStorage bigger(nbytes);
  std::memcpy(bigger.data_, data_, nbytes_);
  std::swap(data_, bigger.data_);
  std::swap(nbytes_, bigger.nbytes_);
  std::swap(releaser_, bigger.releaser_);  // the old block goes back where it came from
}

HostTensor HostTensor::zeros(DType dtype, std::vector<int64_t> sizes) {
  std::vector<int64_t> strides = contiguous_strides(sizes);
  return empty_strided(dtype, std::move(sizes), std::move(strides));
}

HostTensor HostTensor::empty_strided(DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  check_sizes(sizes);
  if (strides.size() != sizes.size())
    user_error("empty_strided: " + std::to_string(sizes.size()) + " sizes but " + std::to_string(strides.size()) +
               " strides");
  for (int64_t s : strides)
    if (s < 0) user_error("empty_strided: negative stride " + std::to_string(s));
  int64_t n = numel_of(sizes);
  int64_t elems = n == 0 ? 0 : checked_add(max_offset(sizes, strides, 0), 1, "storage size");
  int64_t bytes = checked_mul(elems, dtype_size(dtype), "storage bytes");
  HostTensor t;
  t.dtype_ = dtype;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.offset_ = 0;
  t.storage_ = std::make_shared<HostStorage>(static_cast<size_t>(bytes));
  return t;
}

void HostStorage::repoint(std::byte* data) {
  if (!releaser_) TOROID_INTERNAL_ERROR("repoint of a storage that owns its memory");
  data_ = data;
}

HostTensor HostTensor::from_storage(std::shared_ptr<HostStorage> storage, DType dtype, std::vector<int64_t> sizes,
                                    std::vector<int64_t> strides, int64_t offset) {
  HostTensor base;
  base.dtype_ = dtype;
  base.storage_ = std::move(storage);
  return base.as_strided(std::move(sizes), std::move(strides), offset);
}

HostTensor HostTensor::zeros_like(const HostTensor& like) { return zeros(like.dtype(), like.sizes()); }

int64_t HostTensor::size(int64_t dim) const { return sizes_.at(static_cast<size_t>(wrap_dim("size", dim, this->dim()))); }

int64_t HostTensor::numel() const { return numel_of(sizes_); }

bool HostTensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t d = sizes_.size(); d-- > 0;) {
    if (sizes_[d] == 0) return true;
    if (sizes_[d] != 1 && strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

HostTensor HostTensor::as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) const {
  if (!defined()) TOROID_INTERNAL_ERROR("as_strided of an undefined tensor");
  check_sizes(sizes);
  if (strides.size() != sizes.size())
    user_error("as_strided: mismatch in length of strides and shape (" + std::to_string(sizes.size()) +
               " sizes, " + std::to_string(strides.size()) + " strides)");
  for (int64_t s : strides)
    if (s < 0) user_error("as_strided: Negative strides are not supported at the moment, got strides: " + shape_str(strides));
  if (offset < 0) user_error("as_strided: Tensor: invalid storage offset " + std::to_string(offset));
  if (numel_of(sizes) > 0) {
    int64_t hi = max_offset(sizes, strides, offset);
    int64_t need = checked_mul(checked_add(hi, 1, "storage size"), element_size(), "storage bytes");
    if (need > static_cast<int64_t>(storage_->nbytes()))
      user_error("as_strided: setStorage: sizes " + shape_str(sizes) + ", strides " + shape_str(strides) +
                 ", storage offset " + std::to_string(offset) + ", and itemsize " + std::to_string(element_size()) +
                 " requiring a storage size of " + std::to_string(need) + " are out of bounds for storage of size " +
                 std::to_string(storage_->nbytes()));
  }
  HostTensor t = *this;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

HostTensor HostTensor::clone() const { return contiguous_as(*this, dtype_); }

HostTensor HostTensor::to(DType dtype) const { return contiguous_as(*this, dtype); }

std::byte* HostTensor::data() const {
  if (!defined()) TOROID_INTERNAL_ERROR("data() of an undefined tensor");
  return storage_->data() + offset_ * element_size();
}

std::byte* HostTensor::element_ptr(const std::vector<int64_t>& index) const {
  if (index.size() != sizes_.size())
    TOROID_INTERNAL_ERROR("element_ptr: index of rank " + std::to_string(index.size()) + " for " + describe());
  int64_t off = offset_;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= sizes_[d])
      TOROID_INTERNAL_ERROR("element_ptr: index out of range for " + describe());
    off += index[d] * strides_[d];
  }
  return storage_->data() + off * element_size();
}

namespace {
std::byte* linear_ptr(const HostTensor& t, int64_t linear) {
  if (linear < 0 || linear >= t.numel())
    TOROID_INTERNAL_ERROR("linear index " + std::to_string(linear) + " out of range for " + t.describe());
  int64_t off = t.offset();
  for (size_t d = t.sizes().size(); d-- > 0;) {
    int64_t s = t.sizes()[d];
    off += (linear % s) * t.strides()[d];
    linear /= s;
  }
  return t.storage()->data() + off * t.element_size();
}
}  // namespace

double HostTensor::get_double(int64_t linear) const { return load_double(dtype_, linear_ptr(*this, linear)); }
int64_t HostTensor::get_int(int64_t linear) const { return load_int(dtype_, linear_ptr(*this, linear)); }
void HostTensor::set_double(int64_t linear, double v) const { store_double(dtype_, linear_ptr(*this, linear), v); }
void HostTensor::set_int(int64_t linear, int64_t v) const { store_int(dtype_, linear_ptr(*this, linear), v); }

std::string HostTensor::describe() const {
  if (!defined()) return "undefined";
  std::ostringstream os;
  os << dtype_short_name(dtype_) << shape_str(sizes_);
  if (!is_contiguous() || offset_ != 0) {
    os << "{strides=" << shape_str(strides_);
    if (offset_ != 0) os << ", offset=" << offset_;
    os << "}";
  }
  return os.str();
}

}  // namespace toroid::ops
