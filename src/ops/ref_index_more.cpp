// Reference kernels: indexing (the rest) and the shape ops that copy: index.Tensor (advanced
// indexing), index_put, scatter_reduce.two, masked_scatter, select_scatter, slice_scatter, cat,
// flip, repeat, constant_pad_nd and resize_.
//
// Advanced indexing (index.Tensor / index_put): the index list has one entry per leading dim of
// self; None means the whole dim. A bool (or uint8) mask consumes as many dims as it has and is
// replaced by its nonzero() coordinates. The defined index tensors broadcast together to one
// shape B. When they are adjacent, B replaces the indexed dims in place; when a None separates
// two of them, B goes first and the remaining dims follow in order (NumPy's rule).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

// ---- advanced indexing ------------------------------------------------------------------------

struct AdvIndex {
  std::vector<HostTensor> per_dim;   // one per dim of self; undefined = whole dim
  std::vector<int64_t> bshape;       // broadcast shape of the defined indices
  std::vector<HostTensor> bcast;     // per dim: the index broadcast to bshape (undefined = none)
  bool adjacent = true;
  int64_t first = -1;                // first indexed dim
  std::vector<int64_t> out_sizes;
};

AdvIndex plan_index(const std::string& op, const HostTensor& self, const std::vector<HostTensor>& indices) {
  AdvIndex ix;
  int64_t nd = self.dim();
  // Expand masks into their nonzero coordinates.
  std::vector<HostTensor> expanded;
  int64_t consumed = 0;
  for (const HostTensor& t : indices) consumed += (t.defined() && (t.dtype() == DType::Bool || t.dtype() == DType::UInt8)) ? t.dim() : 1;
  if (consumed > nd)
    kernel_error(op, "too many indices for tensor of dimension " + std::to_string(nd) + " (got " + std::to_string(consumed) + ")");
  for (const HostTensor& t : indices) {
    if (!t.defined()) {
      expanded.emplace_back();
      continue;
    }
    if (t.dtype() == DType::Bool || t.dtype() == DType::UInt8) {
      int64_t base = static_cast<int64_t>(expanded.size());
      for (int64_t j = 0; j < t.dim(); ++j)
        if (t.sizes()[static_cast<size_t>(j)] != self.sizes()[static_cast<size_t>(base + j)])
          kernel_error(op, "The shape of the mask " + shape_str(t.sizes()) + " at index " + std::to_string(j) +
                               " does not match the shape of the indexed tensor " + shape_str(self.sizes()) + " at index " +
                               std::to_string(base + j));
      std::vector<std::vector<int64_t>> hits;
      ref_for_each_index(t.sizes(), [&](const std::vector<int64_t>& idx) {
        if (load_bool(t.dtype(), t.element_ptr(idx))) hits.push_back(idx);
      });
      for (int64_t j = 0; j < t.dim(); ++j) {
        HostTensor c = HostTensor::zeros(DType::Int64, {static_cast<int64_t>(hits.size())});
        for (size_t h = 0; h < hits.size(); ++h) c.set_int(static_cast<int64_t>(h), hits[h][static_cast<size_t>(j)]);
        expanded.push_back(c);
      }
      continue;
    }
    if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
      kernel_error(op, std::string("tensors used as indices must be long, int, byte or bool tensors, got ") + dtype_aten_name(t.dtype()));
    expanded.push_back(t);
  }
  expanded.resize(static_cast<size_t>(nd));
  ix.per_dim = expanded;
  bool any = false, gap = false;
  int64_t last = -1;
  for (int64_t d = 0; d < nd; ++d) {
    const HostTensor& t = expanded[static_cast<size_t>(d)];
    if (!t.defined()) continue;
    if (!any) {
      ix.first = d;
      ix.bshape = t.sizes();
    } else {
      if (d != last + 1) gap = true;
      try {
        ix.bshape = broadcast_shapes(op, ix.bshape, t.sizes());
      } catch (const UserError&) {
        kernel_error(op, "shape mismatch: indexing tensors could not be broadcast together with shapes " + shape_str(ix.bshape) +
                             ", " + shape_str(t.sizes()));
      }
    }
    any = true;
    last = d;
  }
  ix.adjacent = !gap;
  ix.bcast.resize(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) {
    const HostTensor& t = expanded[static_cast<size_t>(d)];
    if (!t.defined()) continue;
    int64_t n = self.sizes()[static_cast<size_t>(d)];
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t v = t.get_int(i);
      if (v < -n || v >= n)
        kernel_error(op, "index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(d) + " with size " + std::to_string(n));
    }
    ix.bcast[static_cast<size_t>(d)] = broadcast_to(op, t, ix.bshape);
  }
  if (!any) {
    ix.out_sizes = self.sizes();
    return ix;
  }
  if (ix.adjacent) {
    for (int64_t d = 0; d < ix.first; ++d) ix.out_sizes.push_back(self.sizes()[static_cast<size_t>(d)]);
    ix.out_sizes.insert(ix.out_sizes.end(), ix.bshape.begin(), ix.bshape.end());
    for (int64_t d = last + 1; d < nd; ++d) ix.out_sizes.push_back(self.sizes()[static_cast<size_t>(d)]);
  } else {
    ix.out_sizes = ix.bshape;
    for (int64_t d = 0; d < nd; ++d)
      if (!expanded[static_cast<size_t>(d)].defined()) ix.out_sizes.push_back(self.sizes()[static_cast<size_t>(d)]);
  }
  return ix;
}

// The source multi-index in self of output multi-index `o`.
std::vector<int64_t> index_source(const HostTensor& self, const AdvIndex& ix, const std::vector<int64_t>& o) {
  int64_t nd = self.dim();
  std::vector<int64_t> src(static_cast<size_t>(nd));
  if (ix.first < 0) return o;
  size_t nb = ix.bshape.size();
  std::vector<int64_t> bidx;
  size_t pos = 0;  // next output dim for a non-indexed dim
  if (ix.adjacent) {
    bidx.assign(o.begin() + ix.first, o.begin() + ix.first + static_cast<std::ptrdiff_t>(nb));
    for (int64_t d = 0; d < nd; ++d) {
      if (d == ix.first) pos += nb;
      if (ix.bcast[static_cast<size_t>(d)].defined()) continue;
      src[static_cast<size_t>(d)] = o[pos++];
    }
  } else {
    bidx.assign(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(nb));
    pos = nb;
    for (int64_t d = 0; d < nd; ++d)
      if (!ix.bcast[static_cast<size_t>(d)].defined()) src[static_cast<size_t>(d)] = o[pos++];
  }
  for (int64_t d = 0; d < nd; ++d) {
    const HostTensor& t = ix.bcast[static_cast<size_t>(d)];
    if (!t.defined()) continue;
    int64_t v = load_int(t.dtype(), t.element_ptr(bidx));
    if (v < 0) v += self.sizes()[static_cast<size_t>(d)];
    src[static_cast<size_t>(d)] = v;
  }
  return src;
}

Out k_index(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  AdvIndex ix = plan_index(op, self, a.tensor_list("indices"));
  HostTensor out = HostTensor::zeros(self.dtype(), ix.out_sizes);
  ref_for_each_index(ix.out_sizes, [&](const std::vector<int64_t>& o) {
    std::memcpy(out.element_ptr(o), self.element_ptr(index_source(self, ix, o)), static_cast<size_t>(self.element_size()));
  });
  return {out};
}

Out k_index_put(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& values = a.tensor("values");
  bool accumulate = a.to_bool("accumulate");
  if (values.dtype() != self.dtype())
    kernel_error(op, std::string("Index put requires the source and destination dtypes match, got ") + dtype_aten_name(self.dtype()) +
                         " for the destination and " + dtype_aten_name(values.dtype()) + " for the source.");
  AdvIndex ix = plan_index(op, self, a.tensor_list("indices"));
  HostTensor v;
  try {
    v = broadcast_to(op, values, ix.out_sizes);
  } catch (const UserError&) {
    kernel_error(op, "shape mismatch: value tensor of shape " + shape_str(values.sizes()) +
                         " cannot be broadcast to indexing result of shape " + shape_str(ix.out_sizes));
  }
  // A preserve-format clone of self, as PyTorch (and the meta function).
  HostTensor out = empty_like(self, self.dtype());
  copy_into(op, out, self);
  DType dt = self.dtype();
  ref_for_each_index(ix.out_sizes, [&](const std::vector<int64_t>& o) {
    std::byte* dp = out.element_ptr(index_source(self, ix, o));
    const std::byte* sp = v.element_ptr(o);
    if (!accumulate) std::memcpy(dp, sp, static_cast<size_t>(out.element_size()));
    else if (is_floating(dt)) store_double(dt, dp, load_double(dt, dp) + load_double(dt, sp));
    else if (dt == DType::Bool) store_int(dt, dp, load_int(dt, dp) | load_int(dt, sp));
    else store_int(dt, dp, wrap_add(load_int(dt, dp), load_int(dt, sp)));
  });
  return {out};
}

// ---- scatter_reduce -----------------------------------------------------------------------------

// index_add: a clone of self with alpha * source added along `dim` at the positions `index`
// names (PyTorch's out-of-place form of index_add_).
Out k_index_add(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& index = a.tensor("index");
  const HostTensor& source = a.tensor("source");
  int64_t dim = wrap_dim(op, a.to_int("dim"), self.dim());
  if (index.dtype() != DType::Int64 && index.dtype() != DType::Int32)
    kernel_error(op, std::string("index_add_(): Expected dtype int32/int64 for index, got ") + dtype_aten_name(index.dtype()));
  if (index.dim() > 1) kernel_error(op, "index_add_(): Index is supposed to be a vector");
  if (source.dtype() != self.dtype())
    kernel_error(op, std::string("index_add_(): self (") + dtype_aten_name(self.dtype()) + ") and source (" +
                         dtype_aten_name(source.dtype()) + ") must have the same scalar type");
  if (source.dim() != self.dim() && !(self.dim() <= 1 && source.dim() <= 1))
    kernel_error(op, "index_add_(): self and source must have the same number of dimensions");
  int64_t along = source.dim() == 0 ? 1 : source.sizes()[static_cast<size_t>(dim)];
  if (index.numel() != along)
    kernel_error(op, "index_add_(): Number of indices (" + std::to_string(index.numel()) +
                         ") should be equal to source.size(dim) (" + std::to_string(along) + ")");
  for (int64_t d = 0; d < source.dim() && self.dim() > 0; ++d)
    if (d != dim && source.sizes()[static_cast<size_t>(d)] != self.sizes()[static_cast<size_t>(d)])
      kernel_error(op, "index_add_(): source " + shape_str(source.sizes()) + " and self " + shape_str(self.sizes()) +
                           " differ at dimension " + std::to_string(d));
  HostTensor out = empty_like(self, self.dtype());
  copy_into(op, out, self);
  DType dt = self.dtype();
  double alpha_f = a.to_double("alpha");
  int64_t alpha_i = is_floating(dt) ? 0 : a.to_int("alpha");
  int64_t extent = self.dim() == 0 ? 1 : self.sizes()[static_cast<size_t>(dim)];
  ref_for_each_index(source.sizes(), [&](const std::vector<int64_t>& c) {
    int64_t j = source.dim() == 0 ? 0 : c[static_cast<size_t>(dim)];
    const std::byte* ip = index.dim() == 0 ? index.data() : index.element_ptr({j});
    int64_t r = load_int(index.dtype(), ip);
    if (r < 0 || r >= extent) kernel_error(op, "index out of range in self");
    std::vector<int64_t> o = c;
    if (self.dim() > 0) o[static_cast<size_t>(dim)] = r;
    std::byte* dp = self.dim() == 0 ? out.data() : out.element_ptr(o);
    const std::byte* sp = source.dim() == 0 ? source.data() : source.element_ptr(c);
    if (is_floating(dt)) store_double(dt, dp, load_double(dt, dp) + alpha_f * load_double(dt, sp));
    else if (dt == DType::Bool) store_int(dt, dp, load_int(dt, dp) | load_int(dt, sp));
    else store_int(dt, dp, wrap_add(load_int(dt, dp), wrap_mul(alpha_i, load_int(dt, sp))));
  });
  return {out};
}

Out k_scatter_reduce(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& index = a.tensor("index");
  const HostTensor& src = a.tensor("src");
  std::string reduce = a.str("reduce");
  bool include_self = a.to_bool("include_self");
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
    kernel_error(op, "reduce argument must be either sum, prod, mean, amax or amin, got " + reduce);
  if (index.dtype() != DType::Int64) kernel_error(op, std::string("scatter_reduce(): Expected dtype int64 for index, got ") + dtype_aten_name(index.dtype()));
  if (src.dtype() != self.dtype())
    kernel_error(op, std::string("Expected self.dtype to be equal to src.dtype (got ") + dtype_aten_name(self.dtype()) + " and " +
                         dtype_aten_name(src.dtype()) + ")");
  int64_t dim = wrap_dim(op, a.to_int("dim"), self.dim());
  if (index.numel() > 0) {
    if (index.dim() != self.dim() && !(index.dim() <= 1 && self.dim() <= 1))
      kernel_error(op, "Index tensor must have the same number of dimensions as self tensor");
    if (index.dim() != src.dim() && !(index.dim() <= 1 && src.dim() <= 1))
      kernel_error(op, "Index tensor must have the same number of dimensions as src tensor");
    for (int64_t d = 0; d < index.dim(); ++d) {
      size_t u = static_cast<size_t>(d);
      if (d != dim && self.dim() > 0 && index.sizes()[u] > self.sizes()[u])
        kernel_error(op, "Size does not match at dimension " + std::to_string(d) + " expected index " + shape_str(index.sizes()) +
                             " to be no larger than self " + shape_str(self.sizes()) + " apart from dimension " + std::to_string(dim));
      if (src.dim() > 0 && index.sizes()[u] > src.sizes()[u])
        kernel_error(op, "Expected index " + shape_str(index.sizes()) + " to be no larger than src " + shape_str(src.sizes()));
    }
  }
  DType dt = self.dtype();
  bool fl = is_floating(dt);
  int64_t n = self.numel();
  // Accumulators per element of self (double for floats, int64 for integers).
  std::vector<double> accd(static_cast<size_t>(n));
  std::vector<int64_t> acci(static_cast<size_t>(n));
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  std::vector<bool> touched(static_cast<size_t>(n), false);
  std::vector<int64_t> sstr = contiguous_strides(self.sizes());
  int64_t extent = self.dim() == 0 ? 1 : self.sizes()[static_cast<size_t>(dim)];
  auto lin = [&](const std::vector<int64_t>& idx) {
    int64_t l = 0;
    for (size_t k = 0; k < idx.size(); ++k) l += idx[k] * sstr[k];
    return l;
  };
  ref_for_each_index(self.sizes(), [&](const std::vector<int64_t>& idx) {
    int64_t l = lin(idx);
    accd[static_cast<size_t>(l)] = fl ? load_double(dt, self.element_ptr(idx)) : 0.0;
    acci[static_cast<size_t>(l)] = fl ? 0 : load_int(dt, self.element_ptr(idx));
  });
  ref_for_each_index(index.sizes(), [&](const std::vector<int64_t>& idx) {
    int64_t i = load_int(DType::Int64, index.element_ptr(idx));
    if (i < 0 || i >= extent)
      kernel_error(op, "index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(extent));
    std::vector<int64_t> dst = idx;
    dst.resize(static_cast<size_t>(self.dim()), 0);
    if (self.dim() > 0) dst[static_cast<size_t>(dim)] = i;
    std::vector<int64_t> sidx = idx;
    sidx.resize(static_cast<size_t>(src.dim()), 0);
    size_t l = static_cast<size_t>(self.dim() == 0 ? 0 : lin(dst));
    const std::byte* sp = src.element_ptr(sidx);
    bool first = !include_self && !touched[l];
    touched[l] = true;
    ++count[l];
    if (fl) {
      double v = load_double(dt, sp), &acc = accd[l];
      if (first) acc = v;
      else if (reduce == "sum" || reduce == "mean") acc += v;
      else if (reduce == "prod") acc *= v;
      else if (std::isnan(v) || std::isnan(acc)) acc = std::isnan(acc) ? acc : v;
      else acc = reduce == "amax" ? std::max(acc, v) : std::min(acc, v);
    } else {
      int64_t v = load_int(dt, sp), &acc = acci[l];
      if (first) acc = v;
      else if (reduce == "sum" || reduce == "mean") acc = wrap_add(acc, v);
      else if (reduce == "prod") acc = wrap_mul(acc, v);
      else acc = reduce == "amax" ? std::max(acc, v) : std::min(acc, v);
    }
  });
  if (reduce == "mean") {
    for (int64_t l = 0; l < n; ++l) {
      size_t u = static_cast<size_t>(l);
      int64_t c = count[u] + (include_self ? 1 : 0);
      if (count[u] == 0) continue;
      if (fl) {
        accd[u] /= static_cast<double>(c);
      } else {
        int64_t q = acci[u] / c;  // floor division, as PyTorch divides integer means
        if ((acci[u] % c != 0) && ((acci[u] < 0) != (c < 0))) --q;
        acci[u] = q;
      }
    }
  }
  HostTensor out = fl ? from_double_vec(dt, self.sizes(), accd) : from_int64_vec(dt, self.sizes(), acci);
  return {out};
}

// ---- masked_scatter, select_scatter, slice_scatter -----------------------------------------------

Out k_masked_scatter(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& mask = a.tensor("mask");
  const HostTensor& source = a.tensor("source");
  if (mask.dtype() != DType::Bool)
    kernel_error(op, std::string("masked_scatter_ only supports boolean masks, but got mask with dtype ") + dtype_aten_name(mask.dtype()));
  if (source.dtype() != self.dtype())
    kernel_error(op, std::string("masked_scatter: expected self and source to have same dtypes but got ") + dtype_aten_name(self.dtype()) +
                         " and " + dtype_aten_name(source.dtype()));
  std::vector<int64_t> shape = broadcast_shapes(op, self.sizes(), mask.sizes());
  HostTensor sv = broadcast_to(op, self, shape), mv = broadcast_to(op, mask, shape);
  HostTensor out = HostTensor::zeros(self.dtype(), shape);
  HostTensor src = source.clone();
  int64_t k = 0;
  size_t es = static_cast<size_t>(self.element_size());
  ref_for_each_index(shape, [&](const std::vector<int64_t>& idx) {
    if (load_bool(DType::Bool, mv.element_ptr(idx))) {
      if (k >= src.numel()) kernel_error(op, "Number of elements of source < number of ones in mask");
      std::memcpy(out.element_ptr(idx), src.data() + k * src.element_size(), es);
      ++k;
    } else {
      std::memcpy(out.element_ptr(idx), sv.element_ptr(idx), es);
    }
  });
  return {out};
}

Out k_select_scatter(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& src = a.tensor("src");
  if (self.dim() == 0) kernel_error(op, "select() cannot be applied to a 0-dim tensor.");
  int64_t dim = wrap_dim(op, a.to_int("dim"), self.dim());
  int64_t n = self.sizes()[static_cast<size_t>(dim)];
  int64_t index = a.to_int("index");
  if (index < -n || index >= n)
    kernel_error(op, "select(): index " + std::to_string(index) + " out of range for tensor of size " + shape_str(self.sizes()) +
                         " at dimension " + std::to_string(dim));
  if (index < 0) index += n;
  std::vector<int64_t> ss = self.sizes();
  ss.erase(ss.begin() + dim);
  if (src.sizes() != ss)
    kernel_error(op, "expected src to have a size equal to the slice of self. src size = " + shape_str(src.sizes()) +
                         ", slice size = " + shape_str(ss));
  HostTensor out = clone_preserve_strides(self);
  std::vector<int64_t> ost = out.strides();
  int64_t ooff = out.offset() + index * ost[static_cast<size_t>(dim)];
  ost.erase(ost.begin() + dim);
  copy_into(op, out.as_strided(ss, ost, ooff), src);
  return {out};
}

Out k_slice_scatter(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  const HostTensor& src = a.tensor("src");
  if (self.dim() == 0) kernel_error(op, "slice() cannot be applied to a 0-dim tensor.");
  int64_t dim = wrap_dim(op, a.to_int("dim"), self.dim());
  int64_t n = self.sizes()[static_cast<size_t>(dim)];
  int64_t step = a.to_int("step");
  if (step <= 0) kernel_error(op, "slice step must be positive");
  int64_t start = a.opt_int("start").value_or(0), end = a.opt_int("end").value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, 0, n);
  if (end < start) end = start;
  int64_t len = end == start ? 0 : (end - start - 1) / step + 1;
  HostTensor out = clone_preserve_strides(self);
  std::vector<int64_t> ss = out.sizes(), st = out.strides();
  ss[static_cast<size_t>(dim)] = len;
  int64_t off = out.offset() + start * st[static_cast<size_t>(dim)];
  st[static_cast<size_t>(dim)] *= step;
  if (src.sizes() != ss)
    kernel_error(op, "expected src to have a size equal to the slice of self. src size = " + shape_str(src.sizes()) +
                         ", slice size = " + shape_str(ss));
  if (numel_of(ss) > 0) copy_into(op, out.as_strided(ss, st, off), src);
  return {out};
}

// ---- cat, flip, repeat, constant_pad_nd, resize_ -----------------------------------------------

Out k_cat(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  std::vector<HostTensor> ts = a.tensor_list("tensors");
  if (ts.empty()) kernel_error(op, "torch.cat(): expected a non-empty list of Tensors");
  DType out_dtype = ts[0].dtype();
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i].defined()) kernel_error(op, "torch.cat(): expected a list of Tensors, got None at position " + std::to_string(i));
    if (ts[i].dim() == 0)
      kernel_error(op, "zero-dimensional tensor (at position " + std::to_string(i) + ") cannot be concatenated");
    if (i > 0) out_dtype = promote_types(out_dtype, ts[i].dtype());
  }
  // Legacy behaviour: 1-d empty tensors are skipped.
  auto skipped = [](const HostTensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const HostTensor* ref = nullptr;
  for (const HostTensor& t : ts)
    if (!skipped(t)) {
      ref = &t;
      break;
    }
  if (!ref) return {HostTensor::zeros(out_dtype, {0})};
  int64_t dim = wrap_dim(op, a.to_int("dim"), ref->dim());
  std::vector<int64_t> shape = ref->sizes();
  int64_t total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const HostTensor& t = ts[i];
    if (skipped(t)) continue;
    if (t.dim() != ref->dim())
      kernel_error(op, "Tensors must have same number of dimensions: got " + std::to_string(ref->dim()) + " and " + std::to_string(t.dim()));
    for (int64_t d = 0; d < t.dim(); ++d)
      if (d != dim && t.sizes()[static_cast<size_t>(d)] != shape[static_cast<size_t>(d)])
        kernel_error(op, "Sizes of tensors must match except in dimension " + std::to_string(dim) + ". Expected size " +
                             std::to_string(shape[static_cast<size_t>(d)]) + " but got size " + std::to_string(t.sizes()[static_cast<size_t>(d)]) +
                             " for tensor number " + std::to_string(i) + " in the list.");
    total += t.sizes()[static_cast<size_t>(dim)];
  }
  shape[static_cast<size_t>(dim)] = total;
  HostTensor out = HostTensor::zeros(out_dtype, shape);
  int64_t at = 0;
  for (const HostTensor& t : ts) {
    if (skipped(t)) continue;
    std::vector<int64_t> ss = out.sizes(), st = out.strides();
    ss[static_cast<size_t>(dim)] = t.sizes()[static_cast<size_t>(dim)];
    if (numel_of(ss) > 0) copy_into(op, out.as_strided(ss, st, at * st[static_cast<size_t>(dim)]), t);
    at += t.sizes()[static_cast<size_t>(dim)];
  }
  return {out};
}

Out k_flip(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  std::vector<bool> flip(static_cast<size_t>(self.dim()), false);
  for (int64_t d : a.int_list("dims")) {
    int64_t w = wrap_dim(op, d, self.dim());
    if (self.dim() == 0) continue;
    if (flip[static_cast<size_t>(w)]) kernel_error(op, "dim " + std::to_string(w) + " appears multiple times in the list of dims");
    flip[static_cast<size_t>(w)] = true;
  }
  HostTensor out = empty_like(self, self.dtype());
  if (self.dim() == 0) {
    copy_into(op, out, self);
    return {out};
  }
  ref_for_each_index(self.sizes(), [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> s = idx;
    for (size_t d = 0; d < s.size(); ++d)
      if (flip[d]) s[d] = self.sizes()[d] - 1 - s[d];
    std::memcpy(out.element_ptr(idx), self.element_ptr(s), static_cast<size_t>(self.element_size()));
  });
  return {out};
}

Out k_repeat(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  std::vector<int64_t> reps = a.int_list("repeats");
  if (static_cast<int64_t>(reps.size()) < self.dim())
    kernel_error(op, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  size_t lead = reps.size() - static_cast<size_t>(self.dim());
  std::vector<int64_t> in(lead, 1), out_sizes;
  in.insert(in.end(), self.sizes().begin(), self.sizes().end());
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0) kernel_error(op, "Trying to create tensor with negative dimension " + std::to_string(reps[d]) + ": " + shape_str(reps));
    out_sizes.push_back(checked_mul(op, in[d], reps[d]));
  }
  HostTensor out = HostTensor::zeros(self.dtype(), out_sizes);
  ref_for_each_index(out_sizes, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> s;
    for (size_t d = lead; d < idx.size(); ++d) s.push_back(idx[d] % in[d]);
    std::memcpy(out.element_ptr(idx), self.element_ptr(s), static_cast<size_t>(self.element_size()));
  });
  return {out};
}

Out k_constant_pad_nd(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  std::vector<int64_t> pad = a.int_list("pad");
  int64_t nd = self.dim();
  if (pad.size() % 2 != 0) kernel_error(op, "Length of pad must be even but instead it equals " + std::to_string(pad.size()));
  if (static_cast<int64_t>(pad.size()) > 2 * nd)
    kernel_error(op, "Length of pad should be no more than twice the number of dimensions of the input. Pad length is " +
                         std::to_string(pad.size()) + " while the input has " + std::to_string(nd) + " dimensions.");
  require_int32_params(op, pad, "pad");
  std::vector<int64_t> before(static_cast<size_t>(nd), 0), out_sizes = self.sizes();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    size_t d = static_cast<size_t>(nd) - 1 - i;
    int64_t lo = pad[2 * i], hi = pad[2 * i + 1];
    int64_t ns = self.sizes()[d] + lo + hi;
    if (ns < 0)
      kernel_error(op, "The input size " + std::to_string(self.sizes()[d]) + ", plus negative padding " + std::to_string(lo) + " and " +
                           std::to_string(hi) + " resulted in a negative output size, which is invalid. Check dimension " +
                           std::to_string(d) + " of your input.");
    before[d] = lo;
    out_sizes[d] = ns;
  }
  // Laid out as the meta function says: a pad with no positive entry clones the narrowed
  // input (preserve); otherwise the format self's strides suggest.
  bool all_non_positive = std::all_of(pad.begin(), pad.end(), [](int64_t p) { return p <= 0; });
  std::vector<int64_t> out_strides =
      all_non_positive ? meta::like_strides(out_sizes, self.strides(), std::nullopt)
                       : meta::format_strides(out_sizes, meta::suggest_memory_format(self.sizes(), self.strides()));
  HostTensor out = HostTensor::empty_strided(self.dtype(), out_sizes, out_strides);
  HostTensor fill = HostTensor::zeros(self.dtype(), {});
  copy_into(op, fill, scalar_to_tensor(a.get("value")));
  size_t es = static_cast<size_t>(self.element_size());
  ref_for_each_index(out_sizes, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> s = idx;
    bool inside = true;
    for (size_t d = 0; d < s.size(); ++d) {
      s[d] -= before[d];
      if (s[d] < 0 || s[d] >= self.sizes()[d]) inside = false;
    }
    std::memcpy(out.element_ptr(idx), inside ? self.element_ptr(s) : fill.data(), es);
  });
  return {out};
}

// resize_: restrides self over its storage, which grows in place when too small (its aliases
// see the new bytes, as in PyTorch). New elements are zero.
Out k_resize_(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& self = a.tensor("self");
  std::vector<int64_t> size = a.int_list("size");
  for (int64_t s : size)
    if (s < 0) kernel_error(op, "Trying to create tensor with negative dimension " + std::to_string(s) + ": " + shape_str(size));
  MemoryFormat mf = a.memory_format("memory_format").value_or(MemoryFormat::Contiguous);
  if (mf == MemoryFormat::Preserve) kernel_error(op, "Unsupported memory format Preserve");
  if (mf == MemoryFormat::ChannelsLast || mf == MemoryFormat::ChannelsLast3d) {
    size_t want = mf == MemoryFormat::ChannelsLast ? 4 : 5;
    if (size.size() != want) kernel_error(op, std::string("required rank ") + std::to_string(want) + " tensor to use " + memory_format_torch_name(mf) + " format");
  }
  std::vector<int64_t> strides = meta::format_strides(size, mf);
  int64_t need = 0;  // elements addressed past the offset
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) empty = true;
    need += (size[d] - 1) * strides[d];
  }
  need = empty ? 0 : need + 1;
  int64_t es = self.element_size();
  self.storage()->grow(static_cast<size_t>(checked_mul(op, checked_add(op, self.offset(), need), es)));
  return {self.as_strided(size, strides, self.offset())};
}

}  // namespace

std::vector<KernelImpl> index_more_kernel_impls() {
  return {
      {"aten.index.Tensor", k_index},
      {"aten.index_put.default", k_index_put},
      {"aten.index_add.default", k_index_add},
      {"aten.scatter_reduce.two", k_scatter_reduce},
      {"aten.masked_scatter.default", k_masked_scatter},
      {"aten.select_scatter.default", k_select_scatter},
      {"aten.slice_scatter.default", k_slice_scatter},
      {"aten.cat.default", k_cat},
      {"aten.flip.default", k_flip},
      {"aten.repeat.default", k_repeat},
      {"aten.constant_pad_nd.default", k_constant_pad_nd},
      {"aten.resize_.default", k_resize_},
  };
}

}  // namespace toroid::ops
