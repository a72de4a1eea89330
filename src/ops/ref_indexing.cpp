// Reference kernels: indexing (a first part): index_select, gather, scatter (src, value, add),
// nonzero and _local_scalar_dense. Indices are bounds-checked; an index out of range is a
// UserError naming the op, as PyTorch raises.
#include <cstring>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

// Visits every multi-index of `sizes` in row-major order.
template <class F>
void for_each_index(const std::vector<int64_t>& sizes, F&& fn) {
  if (numel_of(sizes) == 0) return;
  std::vector<int64_t> idx(sizes.size(), 0);
  while (true) {
    fn(idx);
    size_t d = sizes.size();
    while (true) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

void copy_element(const HostTensor& dst, std::byte* dp, const HostTensor& src, const std::byte* sp) {
  if (dst.dtype() == src.dtype()) std::memcpy(dp, sp, static_cast<size_t>(dst.element_size()));
  else if (is_floating(src.dtype())) store_double(dst.dtype(), dp, load_double(src.dtype(), sp));
  else store_int(dst.dtype(), dp, load_int(src.dtype(), sp));
}

void require_long_index(const std::string& op, const HostTensor& index, const char* what) {
  if (index.dtype() != DType::Int64)
    kernel_error(op, std::string(what) + "(): Expected dtype int64 for index, got " + dtype_aten_name(index.dtype()));
}

Out k_local_scalar_dense(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  if (x.numel() != 1)
    kernel_error(opname(a), "a Tensor with " + std::to_string(x.numel()) + " elements cannot be converted to Scalar");
  if (is_floating(x.dtype())) return {RtValue::floating(x.get_double(0))};
  if (x.dtype() == DType::Bool) return {RtValue::boolean(x.get_int(0) != 0)};
  return {RtValue::integer(x.get_int(0))};
}

// The asserts check their scalar: a false condition is the user's error, with their message.
Out k_assert_scalar(const RtArgs& a, KernelContext&) {
  if (!a.to_bool("self")) kernel_error(opname(a), a.str("assert_msg"));
  return {};
}

Out k_sym_constrain_range(const RtArgs& a, KernelContext&) {
  int64_t v = a.to_int("size");
  std::optional<int64_t> lo = a.opt_int("min"), hi = a.opt_int("max");
  if (!lo && opname(a).find("for_size") != std::string::npos) lo = 0;
  if ((lo && v < *lo) || (hi && v > *hi))
    kernel_error(opname(a), "value " + std::to_string(v) + " is outside [" + (lo ? std::to_string(*lo) : "-inf") + ", " +
                                (hi ? std::to_string(*hi) : "inf") + "]");
  return {};
}

Out k_nonzero(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  std::vector<std::vector<int64_t>> hits;
  for_each_index(x.sizes(), [&](const std::vector<int64_t>& idx) {
    if (load_bool(x.dtype(), x.element_ptr(idx))) hits.push_back(idx);
  });
  // Column-major, as PyTorch (the transpose of a [ndim, n] buffer).
  int64_t n = static_cast<int64_t>(hits.size());
  HostTensor out = HostTensor::empty_strided(DType::Int64, {n, x.dim()}, {1, n});
  int64_t k = 0;
  for (const auto& h : hits)
    for (int64_t v : h) out.set_int(k++, v);
  return {out};
}

Out k_index_select(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  const HostTensor& index = a.tensor("index");
  if (index.dim() > 1) kernel_error(op, "index_select(): Index is supposed to be a vector");
  if (index.dtype() != DType::Int64 && index.dtype() != DType::Int32)
    kernel_error(op, std::string("index_select(): Expected dtype int32 or int64 for index, got ") + dtype_aten_name(index.dtype()));
  int64_t dim = wrap_dim(op, a.to_int("dim"), x.dim());
  std::vector<int64_t> sizes = x.sizes();
  int64_t n = x.dim() == 0 ? 1 : sizes[static_cast<size_t>(dim)];
  if (x.dim() > 0) sizes[static_cast<size_t>(dim)] = index.numel();
  else if (index.numel() != 1) kernel_error(op, "index_select(): Index to scalar can have only 1 value, got " + std::to_string(index.numel()));
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t v = index.get_int(i);
    if (v < 0 || v >= n) kernel_error(op, "index out of range in self (index " + std::to_string(v) + ", size " + std::to_string(n) + ")");
    picks.push_back(v);
  }
  HostTensor out = HostTensor::zeros(x.dtype(), sizes);
  for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    if (x.dim() > 0) src[static_cast<size_t>(dim)] = picks[static_cast<size_t>(idx[static_cast<size_t>(dim)])];
    copy_element(out, out.element_ptr(idx), x, x.element_ptr(src));
  });
  return {out};
}

// Checks gather/scatter shapes: index no larger than self (and src) except along dim.
void check_scatter_shapes(const std::string& op, const HostTensor& self, int64_t dim, const HostTensor& index,
                          const HostTensor* src) {
  if (index.numel() == 0) return;
  if (index.dim() != self.dim() && !(index.dim() <= 1 && self.dim() <= 1))
    kernel_error(op, "Index tensor must have the same number of dimensions as self tensor");
  for (int64_t d = 0; d < index.dim(); ++d) {
    size_t u = static_cast<size_t>(d);
    int64_t is = index.sizes()[u];
    if (d != dim && self.dim() > 0 && is > self.sizes()[u])
      kernel_error(op, "Size does not match at dimension " + std::to_string(d) + " expected index " + shape_str(index.sizes()) +
                           " to be no larger than self " + shape_str(self.sizes()) + " apart from dimension " + std::to_string(dim));
    if (src && src->dim() > 0 && is > src->sizes()[u])
      kernel_error(op, "Expected index " + shape_str(index.sizes()) + " to be no larger than src " + shape_str(src->sizes()));
  }
}

std::vector<int64_t> pad_index(const std::vector<int64_t>& idx, int64_t rank) {
  std::vector<int64_t> r = idx;
  r.resize(static_cast<size_t>(rank), 0);
  return r;
}

Out k_gather(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  const HostTensor& index = a.tensor("index");
  require_long_index(op, index, "gather");
  int64_t dim = wrap_dim(op, a.to_int("dim"), x.dim());
  check_scatter_shapes(op, x, dim, index, nullptr);
  HostTensor out = HostTensor::zeros(x.dtype(), index.sizes());
  int64_t n = x.dim() == 0 ? 1 : x.sizes()[static_cast<size_t>(dim)];
  for_each_index(index.sizes(), [&](const std::vector<int64_t>& idx) {
    int64_t i = load_int(DType::Int64, index.element_ptr(idx));
    if (i < 0 || i >= n) kernel_error(op, "index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(n));
    std::vector<int64_t> src = pad_index(idx, x.dim());
    if (x.dim() > 0) src[static_cast<size_t>(dim)] = i;
    copy_element(out, out.element_ptr(idx), x, x.element_ptr(src));
  });
  return {out};
}

enum class ScatterMode { Src, Value, Add };

HostTensor scatter_impl(const RtArgs& a, ScatterMode mode) {
  std::string op = opname(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& index = a.tensor("index");
  require_long_index(op, index, "scatter");
  int64_t dim = wrap_dim(op, a.to_int("dim"), self.dim());
  HostTensor src;
  if (mode == ScatterMode::Value) src = scalar_to_tensor(a.get("value"));
  else src = a.tensor("src");
  if (mode != ScatterMode::Value && src.dtype() != self.dtype())
    kernel_error(op, std::string("Expected self.dtype to be equal to src.dtype (got ") + dtype_aten_name(self.dtype()) +
                         " and " + dtype_aten_name(src.dtype()) + ")");
  check_scatter_shapes(op, self, dim, index, mode == ScatterMode::Value ? nullptr : &src);
  HostTensor out = self.clone();
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[static_cast<size_t>(dim)];
  for_each_index(index.sizes(), [&](const std::vector<int64_t>& idx) {
    int64_t i = load_int(DType::Int64, index.element_ptr(idx));
    if (i < 0 || i >= n) kernel_error(op, "index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(n));
    std::vector<int64_t> dst = pad_index(idx, self.dim());
    if (self.dim() > 0) dst[static_cast<size_t>(dim)] = i;
    std::byte* dp = out.element_ptr(dst);
    const std::byte* sp = mode == ScatterMode::Value ? src.data() : src.element_ptr(pad_index(idx, src.dim()));
    if (mode != ScatterMode::Add) {
      copy_element(out, dp, src, sp);
    } else if (is_floating(out.dtype())) {
      store_double(out.dtype(), dp, load_double(out.dtype(), dp) + load_double(src.dtype(), sp));
    } else {
      store_int(out.dtype(), dp, wrap_add(load_int(out.dtype(), dp), load_int(src.dtype(), sp)));
    }
  });
  return out;
}

Out k_scatter_src(const RtArgs& a, KernelContext&) { return {scatter_impl(a, ScatterMode::Src)}; }
Out k_scatter_value(const RtArgs& a, KernelContext&) { return {scatter_impl(a, ScatterMode::Value)}; }
Out k_scatter_add(const RtArgs& a, KernelContext&) { return {scatter_impl(a, ScatterMode::Add)}; }

}  // namespace

std::vector<KernelImpl> indexing_kernel_impls() {
  return {
      {"aten._local_scalar_dense.default", k_local_scalar_dense},
      {"aten.nonzero.default", k_nonzero},
      {"aten._assert_scalar.default", k_assert_scalar},
      {"aten.sym_constrain_range.default", k_sym_constrain_range},
      {"aten.sym_constrain_range_for_size.default", k_sym_constrain_range},
      {"aten.index_select.default", k_index_select},
      {"aten.gather.default", k_gather},
      {"aten.scatter.src", k_scatter_src},
      {"aten.scatter.value", k_scatter_value},
      {"aten.scatter_add.default", k_scatter_add},
  };
}

}  // namespace toroid::ops
