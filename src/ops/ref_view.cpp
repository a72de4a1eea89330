// Reference kernels: views. Each returns a tensor sharing its input's storage (reshape copies
// only when no view can express the new shape; _unsafe_view, though its schema promises a
// fresh tensor, is a view in PyTorch too). Also the size/stride queries (sym_size and friends).
#include <algorithm>
#include <optional>

#include "ref_families.h"
#include "toroid/ops/meta_util.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

// Resolves one -1 entry; checks the element count.
std::vector<int64_t> infer_size(const std::string& op, std::vector<int64_t> shape, int64_t numel) {
  std::optional<size_t> infer;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer) kernel_error(op, "only one dimension can be inferred");
      infer = i;
    } else if (shape[i] < 0) {
      kernel_error(op, "invalid shape dimension " + std::to_string(shape[i]));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      kernel_error(op, "shape '" + shape_str(shape) + "' is too large");
    }
  }
  auto invalid = [&] { kernel_error(op, "shape '" + shape_str(shape) + "' is invalid for input of size " + std::to_string(numel)); };
  if (infer) {
    if (known == 0)
      kernel_error(op, "cannot reshape tensor of 0 elements into shape " + shape_str(shape) +
                           " because the unspecified dimension size -1 can be any value and is ambiguous");
    if (numel % known != 0) invalid();
    shape[*infer] = numel / known;
  } else if (known != numel) {
    invalid();
  }
  return shape;
}

// Strides for viewing (sizes, strides) as `shape` without copying, or nullopt when the old
// layout splits a new dimension across non-adjacent memory. Walks old dims from the innermost,
// grouping them into chunks that are contiguous with each other, and requires each chunk to map
// onto whole new dims.
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& shape) {
  std::vector<int64_t> out(shape.size(), 1);
  if (numel_of(sizes) == 0) {
    if (sizes == shape) return strides;
    return contiguous_strides(shape);
  }
  int64_t vd = static_cast<int64_t>(shape.size()) - 1;
  if (sizes.empty()) {
    for (; vd >= 0; --vd)
      if (shape[static_cast<size_t>(vd)] != 1) return std::nullopt;
    return out;
  }
  int64_t base = strides.back();
  int64_t tensor_n = 1, view_n = 1;
  for (int64_t td = static_cast<int64_t>(sizes.size()) - 1; td >= 0; --td) {
    size_t t = static_cast<size_t>(td);
    tensor_n *= sizes[t];
    bool chunk_end = td == 0 || (sizes[t - 1] != 1 && strides[t - 1] != tensor_n * base);
    if (!chunk_end) continue;
    while (vd >= 0 && (view_n < tensor_n || shape[static_cast<size_t>(vd)] == 1)) {
      out[static_cast<size_t>(vd)] = view_n * base;
      view_n *= shape[static_cast<size_t>(vd)];
      --vd;
    }
    if (view_n != tensor_n) return std::nullopt;
    if (td > 0) {
      base = strides[t - 1];
      tensor_n = 1;
      view_n = 1;
    }
  }
  if (vd != -1) return std::nullopt;
  return out;
}

Out k_view(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> shape = infer_size(op, a.int_list("size"), x.numel());
  auto st = view_strides(x.sizes(), x.strides(), shape);
  if (!st)
    kernel_error(op, "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                     "across two contiguous subspaces). Use .reshape(...) instead.");
  return {x.as_strided(shape, *st, x.offset())};
}

Out k_reshape(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> shape = infer_size(op, a.int_list("shape"), x.numel());
  if (auto st = view_strides(x.sizes(), x.strides(), shape)) return {x.as_strided(shape, *st, x.offset())};
  HostTensor c = x.clone();
  return {c.as_strided(shape, contiguous_strides(shape), 0)};
}

Out k_expand(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> size = a.int_list("size");
  if (static_cast<int64_t>(size.size()) < x.dim())
    kernel_error(op, "the number of sizes provided (" + std::to_string(size.size()) +
                         ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(x.dim()) + ")");
  size_t lead = size.size() - static_cast<size_t>(x.dim());
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] != -1) {
      if (size[i] < 0) kernel_error(op, "invalid expanded size " + std::to_string(size[i]));
      continue;
    }
    if (i < lead)
      kernel_error(op, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension " + std::to_string(i));
    size[i] = x.sizes()[i - lead];
  }
  return {broadcast_to(op, x, size)};
}

Out k_permute(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> dims = a.int_list("dims");
  if (static_cast<int64_t>(dims.size()) != x.dim())
    kernel_error(op, "number of dimensions in the tensor input does not match the length of the desired ordering of "
                     "dimensions i.e. input.dim() = " + std::to_string(x.dim()) + " is not equal to len(dims) = " +
                         std::to_string(dims.size()));
  std::vector<bool> seen(dims.size(), false);
  std::vector<int64_t> s, st;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op, d, x.dim());
    if (seen[static_cast<size_t>(w)]) kernel_error(op, "repeated dim in permute");
    seen[static_cast<size_t>(w)] = true;
    s.push_back(x.sizes()[static_cast<size_t>(w)]);
    st.push_back(x.strides()[static_cast<size_t>(w)]);
  }
  return {x.as_strided(s, st, x.offset())};
}

HostTensor transpose(const std::string& op, const HostTensor& x, int64_t d0, int64_t d1) {
  if (x.dim() == 0) {
    wrap_dim(op, d0, 0);
    wrap_dim(op, d1, 0);
    return x.as_strided({}, {}, x.offset());
  }
  size_t a0 = static_cast<size_t>(wrap_dim(op, d0, x.dim())), a1 = static_cast<size_t>(wrap_dim(op, d1, x.dim()));
  std::vector<int64_t> s = x.sizes(), st = x.strides();
  std::swap(s[a0], s[a1]);
  std::swap(st[a0], st[a1]);
  return x.as_strided(s, st, x.offset());
}

Out k_transpose(const RtArgs& a, KernelContext&) {
  return {transpose(opname(a), a.tensor("self"), a.to_int("dim0"), a.to_int("dim1"))};
}

Out k_t(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  if (x.dim() > 2)
    kernel_error(opname(a), "t() expects a tensor with <= 2 dimensions, but self is " + std::to_string(x.dim()) + "D");
  return {x.dim() < 2 ? x.as_strided(x.sizes(), x.strides(), x.offset()) : transpose(opname(a), x, 0, 1)};
}

HostTensor squeeze(const HostTensor& x, const std::vector<bool>& drop) {
  std::vector<int64_t> s, st;
  for (size_t d = 0; d < x.sizes().size(); ++d) {
    if (drop[d] && x.sizes()[d] == 1) continue;
    s.push_back(x.sizes()[d]);
    st.push_back(x.strides()[d]);
  }
  return x.as_strided(s, st, x.offset());
}

Out k_squeeze(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  std::vector<int64_t> dims;
  if (!a.schema().argument_index("dim")) {
    std::fill(drop.begin(), drop.end(), true);
  } else {
    dims = a.int_list("dim");
    for (int64_t d : dims) {
      int64_t w = wrap_dim(op, d, x.dim());
      if (x.dim() > 0) drop[static_cast<size_t>(w)] = true;
    }
  }
  return {squeeze(x, drop)};
}

Out k_unsqueeze(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  size_t d = static_cast<size_t>(wrap_dim(op, a.to_int("dim"), x.dim() + 1));
  std::vector<int64_t> s = x.sizes(), st = x.strides();
  int64_t stride = d >= s.size() ? 1 : s[d] * st[d];
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(d), 1);
  st.insert(st.begin() + static_cast<std::ptrdiff_t>(d), stride);
  return {x.as_strided(s, st, x.offset())};
}

HostTensor select(const std::string& op, const HostTensor& x, int64_t dim, int64_t index) {
  if (x.dim() == 0) kernel_error(op, "select() cannot be applied to a 0-dim tensor.");
  size_t d = static_cast<size_t>(wrap_dim(op, dim, x.dim()));
  int64_t n = x.sizes()[d];
  if (index < -n || index >= n)
    kernel_error(op, "select(): index " + std::to_string(index) + " out of range for tensor of size " +
                         shape_str(x.sizes()) + " at dimension " + std::to_string(d));
  if (index < 0) index += n;
  std::vector<int64_t> s = x.sizes(), st = x.strides();
  int64_t off = x.offset() + index * st[d];
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
  st.erase(st.begin() + static_cast<std::ptrdiff_t>(d));
  return x.as_strided(s, st, off);
}

Out k_select(const RtArgs& a, KernelContext&) {
  return {select(opname(a), a.tensor("self"), a.to_int("dim"), a.to_int("index"))};
}

Out k_slice(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  if (x.dim() == 0) kernel_error(op, "slice() cannot be applied to a 0-dim tensor.");
  size_t d = static_cast<size_t>(wrap_dim(op, a.to_int("dim"), x.dim()));
  int64_t n = x.sizes()[d];
  int64_t step = a.to_int("step");
  if (step <= 0) kernel_error(op, "slice step must be positive");
  int64_t start = a.opt_int("start").value_or(0);
  int64_t end = a.opt_int("end").value_or(n);
  auto clampi = [&](int64_t v) {
    if (v < 0) v = v < -n ? 0 : v + n;  // no overflow: |v| is compared before adding
    return std::min(v, n);
  };
  start = clampi(start);
  end = clampi(end);
  if (end < start) end = start;
  std::vector<int64_t> s = x.sizes(), st = x.strides();
  s[d] = end == start ? 0 : (end - start - 1) / step + 1;
  int64_t off = x.offset() + start * st[d];
  if (s[d] > 1 && __builtin_mul_overflow(st[d], step, &st[d])) kernel_error(op, "slice step " + std::to_string(step) + " is too large");
  return {x.as_strided(s, st, off)};
}

Out k_diagonal(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  if (x.dim() < 2) kernel_error(op, "diagonal requires a tensor of at least 2 dimensions");
  size_t d1 = static_cast<size_t>(wrap_dim(op, a.to_int("dim1"), x.dim()));
  size_t d2 = static_cast<size_t>(wrap_dim(op, a.to_int("dim2"), x.dim()));
  if (d1 == d2) kernel_error(op, "diagonal dimensions cannot be identical " + std::to_string(d1) + ", " + std::to_string(d2));
  int64_t offset = a.to_int("offset");
  int64_t n1 = x.sizes()[d1], n2 = x.sizes()[d2];
  int64_t len, off = x.offset();
  if (offset >= 0) len = std::max<int64_t>(std::min(n1, n2 - std::min(offset, n2)), 0);
  else len = std::max<int64_t>(std::min(n1 - std::min(-offset, n1), n2), 0);
  if (len > 0) off += offset >= 0 ? offset * x.strides()[d2] : -offset * x.strides()[d1];
  std::vector<int64_t> s, st;
  for (size_t d = 0; d < x.sizes().size(); ++d) {
    if (d == d1 || d == d2) continue;
    s.push_back(x.sizes()[d]);
    st.push_back(x.strides()[d]);
  }
  s.push_back(len);
  st.push_back(x.strides()[d1] + x.strides()[d2]);
  return {x.as_strided(s, st, off)};
}

Out k_alias(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  return {x.as_strided(x.sizes(), x.strides(), x.offset())};
}

Out k_as_strided(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  int64_t off = a.opt_int("storage_offset").value_or(x.offset());
  return {x.as_strided(a.int_list("size"), a.int_list("stride"), off)};
}

Out split_by(const std::string& op, const HostTensor& x, int64_t dim, const std::vector<int64_t>& sizes) {
  size_t d = static_cast<size_t>(wrap_dim(op, dim, x.dim()));
  if (x.dim() == 0) kernel_error(op, "split expects at least a 1-dimensional tensor");
  Out out;
  int64_t start = 0;
  for (int64_t len : sizes) {
    std::vector<int64_t> s = x.sizes();
    s[d] = len;
    out.emplace_back(x.as_strided(s, x.strides(), x.offset() + start * x.strides()[d]));
    start += len;
  }
  return out;
}

Out k_split_with_sizes(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::vector<int64_t> sizes = a.int_list("split_sizes");
  int64_t dim = a.to_int("dim");
  if (x.dim() == 0) kernel_error(op, "split_with_sizes expects at least a 1-dimensional tensor");
  int64_t n = x.sizes()[static_cast<size_t>(wrap_dim(op, dim, x.dim()))];
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) kernel_error(op, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=" + shape_str(sizes));
    total += s;
  }
  if (total != n)
    kernel_error(op, "split_with_sizes expects split_sizes to sum exactly to " + std::to_string(n) +
                         " (input tensor's size at dimension " + std::to_string(dim) + "), but got split_sizes=" + shape_str(sizes));
  return split_by(op, x, dim, sizes);
}

Out k_split(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  int64_t dim = a.to_int("dim");
  if (x.dim() == 0) kernel_error(op, "split expects at least a 1-dimensional tensor");
  int64_t n = x.sizes()[static_cast<size_t>(wrap_dim(op, dim, x.dim()))];
  int64_t k = a.to_int("split_size");
  if (k < 0) kernel_error(op, "split expects split_size be non-negative, but got split_size=" + std::to_string(k));
  if (k == 0 && n != 0)
    kernel_error(op, "split_size can only be 0 if dimension size is 0, but got dimension size of " + std::to_string(n));
  std::vector<int64_t> sizes;
  if (k == 0) sizes.push_back(0);
  for (int64_t s = 0; k > 0 && s < n; s += std::min(k, n - s)) sizes.push_back(std::min(k, n - s));
  if (sizes.empty()) sizes.push_back(0);
  return split_by(op, x, dim, sizes);
}

Out k_unbind(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  if (x.dim() == 0) kernel_error(op, "Dimension specified as 0 but tensor has no dimensions");
  int64_t d = wrap_dim(op, a.to_int("dim"), x.dim());
  Out out;
  for (int64_t i = 0; i < x.sizes()[static_cast<size_t>(d)]; ++i) out.emplace_back(select(op, x, d, i));
  return out;
}

// ---- size queries -------------------------------------------------------------------------

Out k_sym_size(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  return {RtValue::integer(x.sizes()[static_cast<size_t>(wrap_dim(opname(a), a.to_int("dim"), x.dim()))])};
}
Out k_sym_stride(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  return {RtValue::integer(x.strides()[static_cast<size_t>(wrap_dim(opname(a), a.to_int("dim"), x.dim()))])};
}
Out k_sym_numel(const RtArgs& a, KernelContext&) { return {RtValue::integer(a.tensor("self").numel())}; }
Out k_sym_storage_offset(const RtArgs& a, KernelContext&) { return {RtValue::integer(a.tensor("self").offset())}; }
Out k_sym_is_contiguous(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  MemoryFormat f = a.memory_format("memory_format").value_or(MemoryFormat::Contiguous);
  return {RtValue::boolean(meta::is_contiguous_as(x.sizes(), x.strides(), f))};
}

}  // namespace

std::vector<KernelImpl> view_kernel_impls() {
  return {
      {"aten.view.default", k_view},
      {"aten.reshape.default", k_reshape},
      {"aten._unsafe_view.default", k_view},  // an alias, as in PyTorch (only autograd differs)
      {"aten.expand.default", k_expand},
      {"aten.permute.default", k_permute},
      {"aten.transpose.int", k_transpose},
      {"aten.t.default", k_t},
      {"aten.squeeze.default", k_squeeze},
      {"aten.squeeze.dim", k_squeeze},
      {"aten.squeeze.dims", k_squeeze},
      {"aten.unsqueeze.default", k_unsqueeze},
      {"aten.select.int", k_select},
      {"aten.slice.Tensor", k_slice},
      {"aten.diagonal.default", k_diagonal},
      {"aten.alias.default", k_alias},
      {"aten.detach.default", k_alias},
      {"aten.as_strided.default", k_as_strided},
      {"aten.split_with_sizes.default", k_split_with_sizes},
      {"aten.split.Tensor", k_split},
      {"aten.unbind.int", k_unbind},
      {"aten.sym_size.int", k_sym_size},
      {"aten.sym_stride.int", k_sym_stride},
      {"aten.sym_numel.default", k_sym_numel},
      {"aten.sym_storage_offset.default", k_sym_storage_offset},
      {"aten.sym_is_contiguous.default", k_sym_is_contiguous},
  };
}

}  // namespace toroid::ops
