// Reference kernels: sort (stable, both directions) and topk. NaN orders above every number
// (+inf included), as PyTorch: last when ascending, first when descending. Equal values keep
// their input order in both directions. topk returns its k values in sorted order (also for
// sorted=False, where PyTorch leaves the order unspecified), ties broken by the lower index.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

// Whether a sorts strictly before b in ascending order (NaN largest; NaNs are equal).
bool less_nan_last(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

// Per line along dim: the stable order of the first k positions, descending or ascending.
// Returns (values, indices) tensors of the input's dtype and int64.
std::pair<HostTensor, HostTensor> sorted_lines(const std::string& op, const HostTensor& x, int64_t dim_arg, bool descending,
                                              int64_t k_arg, bool use_k) {
  int64_t dim = wrap_dim(op, dim_arg, x.dim());
  std::vector<int64_t> sizes = x.sizes();
  int64_t n = x.dim() == 0 ? 1 : sizes[static_cast<size_t>(dim)];
  int64_t k = use_k ? k_arg : n;
  if (use_k && (k < 0 || k > n)) kernel_error(op, "selected index k out of range");
  std::vector<int64_t> out_sizes = sizes;
  if (x.dim() > 0) out_sizes[static_cast<size_t>(dim)] = k;
  // sort's results are laid out like x (preserve), topk's contiguous, as their meta functions say.
  HostTensor vals = use_k ? HostTensor::zeros(x.dtype(), out_sizes) : empty_like(x, x.dtype());
  HostTensor idx = use_k ? HostTensor::zeros(DType::Int64, out_sizes) : empty_like(x, DType::Int64);
  if (x.dim() == 0) {
    if (k == 1) {
      copy_into(op, vals, x);
      idx.set_int(0, 0);
    }
    return {vals, idx};
  }
  // Iterate over the lines: every index with the dim fixed at 0.
  std::vector<int64_t> line_sizes = sizes;
  line_sizes[static_cast<size_t>(dim)] = 1;
  bool fl = is_floating(x.dtype());
  size_t es = static_cast<size_t>(x.element_size());
  ref_for_each_index(line_sizes, [&](const std::vector<int64_t>& base) {
    std::vector<int64_t> pos = base;
    std::vector<double> dv(static_cast<size_t>(n));
    std::vector<int64_t> iv(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      pos[static_cast<size_t>(dim)] = j;
      if (fl) dv[static_cast<size_t>(j)] = load_double(x.dtype(), x.element_ptr(pos));
      else iv[static_cast<size_t>(j)] = load_int(x.dtype(), x.element_ptr(pos));
    }
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
      size_t up = static_cast<size_t>(p), uq = static_cast<size_t>(q);
      if (fl) return descending ? less_nan_last(dv[uq], dv[up]) : less_nan_last(dv[up], dv[uq]);
      return descending ? iv[uq] < iv[up] : iv[up] < iv[uq];
    });
    std::vector<int64_t> dst = base;
    for (int64_t j = 0; j < k; ++j) {
      pos[static_cast<size_t>(dim)] = order[static_cast<size_t>(j)];
      dst[static_cast<size_t>(dim)] = j;
      std::memcpy(vals.element_ptr(dst), x.element_ptr(pos), es);
      store_int(DType::Int64, idx.element_ptr(dst), order[static_cast<size_t>(j)]);
    }
  });
  return {vals, idx};
}

Out k_sort(const RtArgs& a, KernelContext&) {
  auto [v, i] = sorted_lines(op_of(a), a.tensor("self"), a.to_int("dim"), a.to_bool("descending"), 0, false);
  return {v, i};
}

Out k_topk(const RtArgs& a, KernelContext&) {
  auto [v, i] = sorted_lines(op_of(a), a.tensor("self"), a.to_int("dim"), a.to_bool("largest"), a.to_int("k"), true);
  return {v, i};
}

}  // namespace

std::vector<KernelImpl> sort_kernel_impls() {
  return {
      {"aten.sort.default", k_sort},
      {"aten.topk.default", k_topk},
  };
}

}  // namespace toroid::ops
