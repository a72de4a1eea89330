// Reference kernels: embedding, embedding_dense_backward, _embedding_bag, nll_loss_forward and
// nll_loss_backward.
//
// _embedding_bag follows PyTorch's CPU kernel: bag b covers indices [offsets[b], offsets[b+1])
// (the last bag ends at the end of indices, or at the last offset with include_last_offset);
// indices equal to padding_idx (>= 0) contribute nothing and are not counted. Outputs:
//   output      [num_bags, D]: sum / mean / max per bag (an empty bag gives zeros);
//   offset2bag  [numel] with the bag of each index for mean/max and for the slow sum path
//               (padding_idx >= 0, per_sample_weights, or a non-float weight), [0] otherwise;
//   bag_size    [num_bags]: counted (non-padding) indices for mean and max, zeros for sum;
//   max_indices [num_bags, D] for max (the chosen row; 0 for empty bags), else a copy of
//               bag_size (what PyTorch 2.11 CPU returns for sum and mean).
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

void index_dtype(const std::string& op, const HostTensor& t, const char* what) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    kernel_error(op, std::string("Expected tensor for argument '") + what + "' to have one of the following scalar types: Long, Int; but got " +
                         dtype_aten_name(t.dtype()) + " instead");
}

Out k_embedding(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& w = a.tensor("weight");
  const HostTensor& idx = a.tensor("indices");
  if (w.dim() != 2) kernel_error(op, "'weight' must be 2-D");
  index_dtype(op, idx, "indices");
  int64_t V = w.sizes()[0], D = w.sizes()[1];
  std::vector<int64_t> sizes = idx.sizes();
  sizes.push_back(D);
  HostTensor out = HostTensor::zeros(w.dtype(), sizes);
  std::vector<int64_t> iv = to_int64_vec(idx);
  size_t es = static_cast<size_t>(w.element_size());
  for (size_t i = 0; i < iv.size(); ++i) {
    if (iv[i] < 0 || iv[i] >= V) kernel_error(op, "index out of range in self (index " + std::to_string(iv[i]) + ", " + std::to_string(V) + " rows)");
    for (int64_t d = 0; d < D; ++d)
      std::memcpy(out.data() + (static_cast<int64_t>(i) * D + d) * w.element_size(), w.element_ptr({iv[i], d}), es);
  }
  return {out};
}

Out k_embedding_dense_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& idx = a.tensor("indices");
  index_dtype(op, idx, "indices");
  int64_t V = a.to_int("num_weights"), pad = a.to_int("padding_idx");
  bool scale = a.to_bool("scale_grad_by_freq");
  if (!is_floating(go.dtype())) kernel_error(op, std::string("\"embedding_backward\" not implemented for '") + dtype_aten_name(go.dtype()) + "'");
  if (go.dim() != idx.dim() + 1 || !std::equal(idx.sizes().begin(), idx.sizes().end(), go.sizes().begin()))
    kernel_error(op, "Expected grad_output of shape indices.shape + [D], got " + shape_str(go.sizes()) + " for indices " + shape_str(idx.sizes()));
  int64_t D = go.sizes().back();
  if (V < 0) kernel_error(op, "num_weights must be non-negative, got " + std::to_string(V));
  numel_of({V, D});  // UserError when too large
  std::vector<int64_t> iv = to_int64_vec(idx);
  std::vector<double> gv = to_double_vec(go), gw(static_cast<size_t>(V * D), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(std::max<int64_t>(V, 0)), 0);
  for (int64_t i : iv) {
    if (i < 0 || i >= V) kernel_error(op, "index " + std::to_string(i) + " is out of bounds for " + std::to_string(V) + " weights");
    ++count[static_cast<size_t>(i)];
  }
  for (size_t i = 0; i < iv.size(); ++i) {
    if (pad >= 0 && iv[i] == pad) continue;
    double f = scale ? 1.0 / static_cast<double>(count[static_cast<size_t>(iv[i])]) : 1.0;
    for (int64_t d = 0; d < D; ++d) gw[static_cast<size_t>(iv[i] * D + d)] += gv[i * static_cast<size_t>(D) + static_cast<size_t>(d)] * f;
  }
  return {from_double_vec(go.dtype(), {V, D}, gw)};
}

Out k_embedding_bag(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& w = a.tensor("weight");
  const HostTensor& idx = a.tensor("indices");
  const HostTensor& offs = a.tensor("offsets");
  int64_t mode = a.to_int("mode"), pad = a.to_int("padding_idx");
  bool include_last = a.to_bool("include_last_offset");
  const HostTensor* psw = a.opt_tensor("per_sample_weights");
  if (w.dim() != 2) kernel_error(op, "'weight' must be 2-D");
  index_dtype(op, idx, "indices");
  index_dtype(op, offs, "offsets");
  if (idx.dim() != 1) kernel_error(op, "input has to be a 1D or 2D Tensor, but got Tensor of dimension " + std::to_string(idx.dim()));
  if (offs.dim() != 1) kernel_error(op, "offsets has to be a 1D Tensor, but got Tensor of dimension " + std::to_string(offs.dim()));
  if (mode < 0 || mode > 2) kernel_error(op, "mode has to be one of sum (0), mean (1) or max (2), got " + std::to_string(mode));
  static const char* names[] = {"sum", "mean", "max"};
  if (psw && mode != 0)
    kernel_error(op, std::string("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='") +
                         names[mode] + "'). Please open a feature request on the Pytorch GitHub.");
  if (psw && psw->sizes() != idx.sizes())
    kernel_error(op, "embedding_bag: If per_sample_weights (" + shape_str(psw->sizes()) + ") is not None, then it must have the same shape as the input (" +
                         shape_str(idx.sizes()) + ")");
  if (psw && psw->dtype() != w.dtype())
    kernel_error(op, std::string("Expected per_sample_weights of dtype ") + dtype_aten_name(w.dtype()) + ", got " + dtype_aten_name(psw->dtype()));
  int64_t V = w.sizes()[0], D = w.sizes()[1], n = idx.numel();
  std::vector<int64_t> iv = to_int64_vec(idx), ov = to_int64_vec(offs);
  int64_t nb = static_cast<int64_t>(ov.size()) - (include_last ? 1 : 0);
  if (nb < 0) kernel_error(op, "include_last_offset: number of offsets should be at least 1");
  if (!ov.empty() && ov[0] != 0)
    kernel_error(op, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got " +
                         std::to_string(ov[0]));
  for (size_t b = 0; b < ov.size(); ++b) {
    if (ov[b] > n) kernel_error(op, "offsets[-1] can not be greater than input's length " + std::to_string(n) + " but got " + std::to_string(ov[b]));
    if (b > 0 && ov[b] < ov[b - 1]) kernel_error(op, "offsets must be non-decreasing, got " + shape_str(ov));
  }
  for (int64_t i : iv)
    if (i < 0 || i >= V) kernel_error(op, "index out of range in self (index " + std::to_string(i) + ", " + std::to_string(V) + " rows)");
  std::vector<double> wv = to_double_vec(w), pv = psw ? to_double_vec(*psw) : std::vector<double>();
  std::vector<double> out(static_cast<size_t>(nb * D), 0.0);
  std::vector<int64_t> o2b(static_cast<size_t>(n), 0), bag_size(static_cast<size_t>(nb), 0);
  std::vector<int64_t> maxi(static_cast<size_t>(mode == 2 ? nb * D : nb), 0);
  for (int64_t b = 0; b < nb; ++b) {
    int64_t lo = ov[static_cast<size_t>(b)];
    int64_t hi = b + 1 < static_cast<int64_t>(ov.size()) ? ov[static_cast<size_t>(b + 1)] : n;
    if (!include_last && b + 1 == nb) hi = n;
    int64_t cnt = 0;
    for (int64_t j = lo; j < hi; ++j) {
      o2b[static_cast<size_t>(j)] = b;
      int64_t r = iv[static_cast<size_t>(j)];
      if (pad >= 0 && r == pad) continue;
      for (int64_t d = 0; d < D; ++d) {
        double v = wv[static_cast<size_t>(r * D + d)];
        size_t u = static_cast<size_t>(b * D + d);
        if (mode == 2) {
          if (cnt == 0 || v > out[u]) {
            out[u] = v;
            maxi[u] = r;
          }
        } else {
          out[u] += psw ? v * pv[static_cast<size_t>(j)] : v;
        }
      }
      ++cnt;
    }
    if (mode == 1 && cnt > 0)
      for (int64_t d = 0; d < D; ++d) out[static_cast<size_t>(b * D + d)] /= static_cast<double>(cnt);
    if (mode != 0) bag_size[static_cast<size_t>(b)] = cnt;
  }
  bool float_weight = w.dtype() == DType::Float32 || w.dtype() == DType::Float16 || w.dtype() == DType::BFloat16;
  bool fast_sum = mode == 0 && float_weight && pad < 0 && (w.strides()[1] == 1 || D <= 1) && (!psw || psw->strides()[0] == 1 || n <= 1);
  if (fast_sum) o2b.clear();
  DType it = offs.dtype();
  if (mode != 2) maxi = bag_size;
  return {from_double_vec(w.dtype(), {nb, D}, out), from_int64_vec(it, {static_cast<int64_t>(o2b.size())}, o2b),
          from_int64_vec(it, {nb}, bag_size),
          from_int64_vec(it, mode == 2 ? std::vector<int64_t>{nb, D} : std::vector<int64_t>{nb}, maxi)};
}

// ---- nll_loss -------------------------------------------------------------------------------------

struct NllSetup {
  int64_t N = 1, C = 0;
  bool batched = true;
  std::vector<double> w;
  std::vector<int64_t> t;
};

NllSetup nll_setup(const std::string& op, const HostTensor& x, const HostTensor& target, const HostTensor* weight) {
  NllSetup s;
  if (x.dim() < 1 || x.dim() > 2) kernel_error(op, "input tensor should be 1D or 2D, got " + shape_str(x.sizes()));
  if (target.dim() > 1) kernel_error(op, "0D or 1D target tensor expected, multi-target not supported");
  if (target.dtype() != DType::Int64 && target.dtype() != DType::UInt8)
    kernel_error(op, std::string("expected scalar type Long but found ") + dtype_aten_name(target.dtype()));
  s.batched = x.dim() == 2;
  s.N = s.batched ? x.sizes()[0] : 1;
  s.C = x.sizes().back();
  bool ok = s.batched ? (target.dim() == 1 && target.sizes()[0] == s.N) : target.dim() == 0;
  if (!ok)
    kernel_error(op, "Expected input batch_size (" + std::to_string(s.N) + ") to match target batch_size (" +
                         (target.dim() ? std::to_string(target.sizes()[0]) : std::string("0-dim")) + ").");
  if (weight && weight->numel() != s.C)
    kernel_error(op, "weight tensor should be defined either for all " + std::to_string(s.C) + " classes or no classes but got weight tensor of shape: " +
                         shape_str(weight->sizes()));
  s.w = weight ? to_double_vec(*weight) : std::vector<double>(static_cast<size_t>(s.C), 1.0);
  s.t = to_int64_vec(target);
  return s;
}

Out k_nll_loss_forward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"nll_loss\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  NllSetup s = nll_setup(op, x, a.tensor("target"), a.opt_tensor("weight"));
  int64_t reduction = a.to_int("reduction"), ignore = a.to_int("ignore_index");
  if (reduction < 0 || reduction > 2) kernel_error(op, std::to_string(reduction) + " is not a valid value for reduction");
  std::vector<double> xv = to_double_vec(x), per(static_cast<size_t>(s.N), 0.0);
  double total = 0, sum = 0;
  for (int64_t n = 0; n < s.N; ++n) {
    int64_t t = s.t[static_cast<size_t>(n)];
    if (t == ignore) continue;
    if (t < 0 || t >= s.C) kernel_error(op, "Target " + std::to_string(t) + " is out of bounds.");
    double wt = s.w[static_cast<size_t>(t)];
    per[static_cast<size_t>(n)] = -wt * xv[static_cast<size_t>(n * s.C + t)];
    total += wt;
    sum += per[static_cast<size_t>(n)];
  }
  // PyTorch's CPU kernel zeroes total_weight only for per-sample (batched, reduction none) losses.
  HostTensor tw = from_double_vec(x.dtype(), {}, {reduction == 0 && s.batched ? 0.0 : total});
  if (reduction == 0) return {from_double_vec(x.dtype(), s.batched ? std::vector<int64_t>{s.N} : std::vector<int64_t>{}, per), tw};
  double v = reduction == 2 ? sum : sum / total;
  return {from_double_vec(x.dtype(), {}, {v}), tw};
}

Out k_nll_loss_backward(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& go = a.tensor("grad_output");
  const HostTensor& x = a.tensor("self");
  if (!is_floating(x.dtype())) kernel_error(op, std::string("\"nll_loss_backward\" not implemented for '") + dtype_aten_name(x.dtype()) + "'");
  NllSetup s = nll_setup(op, x, a.tensor("target"), a.opt_tensor("weight"));
  int64_t reduction = a.to_int("reduction"), ignore = a.to_int("ignore_index");
  const HostTensor& tw = a.tensor("total_weight");
  if (tw.numel() != 1) kernel_error(op, "expected total_weight to be a single element tensor, got: " + shape_str(tw.sizes()));
  bool per_sample = reduction == 0 && s.batched;
  if (per_sample ? (go.dim() != 1 || go.sizes()[0] != s.N) : go.numel() != 1)
    kernel_error(op, "Expected a tensor of dimension 1 and tensor.size[0] == " + std::to_string(s.N) + " (or a single element), but got: " +
                         shape_str(go.sizes()));
  std::vector<double> gv = to_double_vec(go), gi(static_cast<size_t>(x.numel()), 0.0);
  double denom = reduction == 1 ? tw.get_double(0) : 1.0;
  for (int64_t n = 0; n < s.N; ++n) {
    int64_t t = s.t[static_cast<size_t>(n)];
    if (t == ignore) continue;
    if (t < 0 || t >= s.C) kernel_error(op, "Target " + std::to_string(t) + " is out of bounds.");
    double g = gv[per_sample ? static_cast<size_t>(n) : 0];
    gi[static_cast<size_t>(n * s.C + t)] = -s.w[static_cast<size_t>(t)] * g / denom;
  }
  return {from_double_vec(x.dtype(), x.sizes(), gi)};
}

}  // namespace

std::vector<KernelImpl> embedding_kernel_impls() {
  return {
      {"aten.embedding.default", k_embedding},
      {"aten.embedding_dense_backward.default", k_embedding_dense_backward},
      {"aten._embedding_bag.default", k_embedding_bag},
      {"aten.nll_loss_forward.default", k_nll_loss_forward},
      {"aten.nll_loss_backward.default", k_nll_loss_backward},
  };
}

}  // namespace toroid::ops
