// Reference kernels: matrix products. mm, bmm, addmm, baddbmm, linear and matmul (every rank
// case: dot, matrix-vector, vector-matrix, batched with broadcast batch dims), and
// scaled_dot_product_attention. Floating
// products accumulate in double and round once; integer ones accumulate in int64, wrapping.
// Operands must share a dtype, as PyTorch requires; bool is not implemented (as on PyTorch CPU).
#include <cmath>
#include <optional>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string op_of(const RtArgs& a) { return a.schema().qualified_name(); }

void same_dtype(const std::string& op, const HostTensor& x, const HostTensor& y) {
  if (x.dtype() != y.dtype())
    kernel_error(op, std::string("expected m1 and m2 to have the same dtype, but got: ") + dtype_aten_name(x.dtype()) + " != " +
                         dtype_aten_name(y.dtype()));
  if (x.dtype() == DType::Bool) kernel_error(op, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
}

void rank_is(const std::string& op, const HostTensor& t, int64_t r, const char* what) {
  if (t.dim() != r)
    kernel_error(op, std::string(what) + " must be a " + std::to_string(r) + "D tensor, got " + std::to_string(t.dim()) + "D");
}

// The product of x [..., n, k] and y [..., k, m] (batch dims broadcast), as values: doubles
// for floating dtypes, int64 (wrapped) for integers. `out_sizes` receives batch + [n, m].
struct Product {
  std::vector<int64_t> sizes;
  std::vector<double> d;
  std::vector<int64_t> i;
};

Product batched_product(const std::string& op, const HostTensor& x, const HostTensor& y) {
  int64_t n = x.sizes()[static_cast<size_t>(x.dim() - 2)], k = x.sizes().back();
  int64_t k2 = y.sizes()[static_cast<size_t>(y.dim() - 2)], m = y.sizes().back();
  if (k != k2)
    kernel_error(op, "mat1 and mat2 shapes cannot be multiplied (" + std::to_string(n) + "x" + std::to_string(k) + " and " +
                         std::to_string(k2) + "x" + std::to_string(m) + ")");
  std::vector<int64_t> bx(x.sizes().begin(), x.sizes().end() - 2), by(y.sizes().begin(), y.sizes().end() - 2);
  std::vector<int64_t> batch = broadcast_shapes(op, bx, by);
  std::vector<int64_t> xs = batch, ys = batch;
  xs.insert(xs.end(), {n, k});
  ys.insert(ys.end(), {k, m});
  HostTensor xv = broadcast_to(op, x, xs), yv = broadcast_to(op, y, ys);
  Product p;
  p.sizes = batch;
  p.sizes.insert(p.sizes.end(), {n, m});
  int64_t nb = numel_of(batch);
  bool fl = is_floating(x.dtype());
  if (fl) {
    std::vector<double> a = to_double_vec(xv), b = to_double_vec(yv);
    p.d.assign(static_cast<size_t>(nb * n * m), 0.0);
    for (int64_t q = 0; q < nb; ++q)
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < m; ++c) {
          double s = 0;
          for (int64_t t = 0; t < k; ++t) s += a[static_cast<size_t>((q * n + r) * k + t)] * b[static_cast<size_t>((q * k + t) * m + c)];
          p.d[static_cast<size_t>((q * n + r) * m + c)] = s;
        }
  } else {
    std::vector<int64_t> a = to_int64_vec(xv), b = to_int64_vec(yv);
    p.i.assign(static_cast<size_t>(nb * n * m), 0);
    for (int64_t q = 0; q < nb; ++q)
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < m; ++c) {
          int64_t s = 0;
          for (int64_t t = 0; t < k; ++t)
            s = wrap_add(s, wrap_mul(a[static_cast<size_t>((q * n + r) * k + t)], b[static_cast<size_t>((q * k + t) * m + c)]));
          p.i[static_cast<size_t>((q * n + r) * m + c)] = s;
        }
  }
  return p;
}

HostTensor product_tensor(DType d, const Product& p, const std::vector<int64_t>& sizes) {
  return is_floating(d) ? from_double_vec(d, sizes, p.d) : from_int64_vec(d, sizes, p.i);
}

// beta * self + alpha * product, with self broadcast to the product's shape; beta == 0 ignores
// self (NaN included), as PyTorch.
HostTensor add_scaled(const std::string& op, const HostTensor& self, const Product& p, DType d, const RtValue& beta,
                      const RtValue& alpha) {
  if (self.dtype() != d)
    kernel_error(op, std::string("self and mat2 must have the same dtype, but got ") + dtype_aten_name(self.dtype()) + " and " +
                         dtype_aten_name(d));
  HostTensor s;
  try {
    s = broadcast_to(op, self, p.sizes);
  } catch (const UserError&) {
    kernel_error(op, "self of shape " + shape_str(self.sizes()) + " cannot be broadcast to the product's shape " + shape_str(p.sizes));
  }
  if (is_floating(d)) {
    double b = beta.to_double(), al = alpha.to_double();
    std::vector<double> sv = to_double_vec(s), r(p.d.size());
    for (size_t q = 0; q < r.size(); ++q) r[q] = (b == 0 ? 0.0 : b * sv[q]) + al * p.d[q];
    return from_double_vec(d, p.sizes, r);
  }
  for (const auto& [v, name] : {std::pair<const RtValue*, const char*>{&beta, "beta"}, {&alpha, "alpha"}})
    if (v->kind() == RtValue::Kind::Float)
      kernel_error(op, std::string("For integral input tensors, argument ") + name + " must not be a floating point number.");
  int64_t b = beta.to_int(), al = alpha.to_int();
  std::vector<int64_t> sv = to_int64_vec(s), r(p.i.size());
  for (size_t q = 0; q < r.size(); ++q) r[q] = wrap_add(b == 0 ? 0 : wrap_mul(b, sv[q]), wrap_mul(al, p.i[q]));
  return from_int64_vec(d, p.sizes, r);
}

Out k_mm(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  const HostTensor& y = a.tensor("mat2");
  rank_is(op, x, 2, "self");
  rank_is(op, y, 2, "mat2");
  same_dtype(op, x, y);
  Product p = batched_product(op, x, y);
  return {product_tensor(x.dtype(), p, p.sizes)};
}

Out k_bmm(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("self");
  const HostTensor& y = a.tensor("mat2");
  rank_is(op, x, 3, "batch1");
  rank_is(op, y, 3, "batch2");
  same_dtype(op, x, y);
  if (x.sizes()[0] != y.sizes()[0])
    kernel_error(op, "batch1 and batch2 must have same number of batches, got " + std::to_string(x.sizes()[0]) + " and " +
                         std::to_string(y.sizes()[0]));
  Product p = batched_product(op, x, y);
  return {product_tensor(x.dtype(), p, p.sizes)};
}

Out k_addmm(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("mat1");
  const HostTensor& y = a.tensor("mat2");
  rank_is(op, x, 2, "mat1");
  rank_is(op, y, 2, "mat2");
  same_dtype(op, x, y);
  Product p = batched_product(op, x, y);
  return {add_scaled(op, a.tensor("self"), p, x.dtype(), a.get("beta"), a.get("alpha"))};
}

// addmm, then relu or the tanh approximation of gelu, as PyTorch's _addmm_activation (the
// cuBLASLt epilogues). The activation rounds once more, as PyTorch's in-place one does.
Out k_addmm_activation(const RtArgs& a, KernelContext& ctx) {
  Out out = k_addmm(a, ctx);
  const HostTensor& t = out.at(0).tensor();
  if (!is_floating(t.dtype())) kernel_error(op_of(a), "expected a floating dtype, got " + std::string(dtype_aten_name(t.dtype())));
  bool gelu = a.get("use_gelu").to_bool();
  const double kBeta = std::sqrt(2.0 / M_PI), kKappa = 0.044715;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = t.get_double(i);
    t.set_double(i, gelu ? 0.5 * x * (1.0 + std::tanh(kBeta * (x + kKappa * x * x * x))) : (x > 0 || std::isnan(x) ? x : 0.0));
  }
  return out;
}

Out k_baddbmm(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("batch1");
  const HostTensor& y = a.tensor("batch2");
  rank_is(op, x, 3, "batch1");
  rank_is(op, y, 3, "batch2");
  same_dtype(op, x, y);
  if (x.sizes()[0] != y.sizes()[0])
    kernel_error(op, "batch1 and batch2 must have same number of batches, got " + std::to_string(x.sizes()[0]) + " and " +
                         std::to_string(y.sizes()[0]));
  Product p = batched_product(op, x, y);
  return {add_scaled(op, a.tensor("self"), p, x.dtype(), a.get("beta"), a.get("alpha"))};
}

// torch.matmul: a 1-d left operand gains a leading 1 (dropped from the result), a 1-d right
// operand a trailing 1 (dropped too); batch dims broadcast.
HostTensor matmul_impl(const std::string& op, const HostTensor& x, const HostTensor& y) {
  if (x.dim() == 0 || y.dim() == 0)
    kernel_error(op, "both arguments to matmul need to be at least 1D, but they are " + std::to_string(x.dim()) + "D and " +
                         std::to_string(y.dim()) + "D");
  same_dtype(op, x, y);
  HostTensor xm = x, ym = y;
  if (x.dim() == 1) xm = x.as_strided({1, x.sizes()[0]}, {0, x.strides()[0]}, x.offset());
  if (y.dim() == 1) ym = y.as_strided({y.sizes()[0], 1}, {y.strides()[0], 0}, y.offset());
  Product p = batched_product(op, xm, ym);
  std::vector<int64_t> sizes(p.sizes.begin(), p.sizes.end() - 2);
  if (x.dim() >= 2) sizes.push_back(p.sizes[p.sizes.size() - 2]);
  if (y.dim() >= 2) sizes.push_back(p.sizes.back());
  return product_tensor(x.dtype(), p, sizes);
}

Out k_matmul(const RtArgs& a, KernelContext&) { return {matmul_impl(op_of(a), a.tensor("self"), a.tensor("other"))}; }

Out k_linear(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& x = a.tensor("input");
  const HostTensor& w = a.tensor("weight");
  if (w.dim() != 1 && w.dim() != 2) kernel_error(op, "weight must be 1D or 2D, got " + std::to_string(w.dim()) + "D");
  HostTensor wt = w;
  if (w.dim() == 2) wt = w.as_strided({w.sizes()[1], w.sizes()[0]}, {w.strides()[1], w.strides()[0]}, w.offset());
  const HostTensor* b = a.opt_tensor("bias");
  if (!b) return {matmul_impl(op, x, wt)};
  if (x.dim() == 0) kernel_error(op, "both arguments to linear need to be at least 1D, but they are 0D and " + std::to_string(w.dim()) + "D");
  same_dtype(op, x, w);
  // The product and the bias in one double expression, rounded once.
  HostTensor xm = x, wm = wt;
  if (x.dim() == 1) xm = x.as_strided({1, x.sizes()[0]}, {0, x.strides()[0]}, x.offset());
  if (wt.dim() == 1) wm = wt.as_strided({wt.sizes()[0], 1}, {wt.strides()[0], 0}, wt.offset());
  Product full = batched_product(op, xm, wm);
  std::vector<int64_t> sizes(full.sizes.begin(), full.sizes.end() - 2);
  if (x.dim() >= 2) sizes.push_back(full.sizes[full.sizes.size() - 2]);
  if (wt.dim() >= 2) sizes.push_back(full.sizes.back());
  full.sizes = sizes;
  if (b->dtype() != x.dtype())
    kernel_error(op, std::string("expected bias to have the dtype of input, but got ") + dtype_aten_name(b->dtype()) + " != " +
                         dtype_aten_name(x.dtype()));
  return {add_scaled(op, *b, full, x.dtype(), RtValue::integer(1), RtValue::integer(1))};
}

// The element offset of batch position `at` (the output's batch dims) in `t`, whose dims before
// its last two broadcast against them; `group` > 1 maps a query head to its key head (gqa).
int64_t batch_offset(const HostTensor& t, const std::vector<int64_t>& at, int64_t group) {
  int64_t off = 0;
  size_t tb = static_cast<size_t>(t.dim() - 2);
  for (size_t d = 0; d < tb; ++d) {
    int64_t i = at[at.size() - tb + d];
    if (d + 1 == tb) i /= group;
    if (t.sizes()[d] != 1) off += i * t.strides()[d];
  }
  return off;
}

// softmax(q k^T * scale + mask) v for each batch position, in double; a row whose keys are all
// masked gives zeros (PyTorch's _safe_softmax), an is_causal query i attends to keys 0..i.
Out k_attention(const RtArgs& a, KernelContext&) {
  std::string op = op_of(a);
  const HostTensor& q = a.tensor("query");
  const HostTensor& k = a.tensor("key");
  const HostTensor& v = a.tensor("value");
  const HostTensor* mask = a.opt_tensor("attn_mask");
  if (a.to_double("dropout_p") != 0.0) kernel_error(op, "dropout_p must be 0: toroid's attention has no dropout");
  bool causal = a.to_bool("is_causal");
  if (causal && mask) kernel_error(op, "attn_mask and is_causal=True are exclusive");
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2) kernel_error(op, "query, key and value must be at least 2D");
  int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  if (k.size(-1) != E || v.size(-2) != S) kernel_error(op, "query, key and value sizes do not match");
  std::vector<int64_t> qb(q.sizes().begin(), q.sizes().end() - 2), kb(k.sizes().begin(), k.sizes().end() - 2),
      vb(v.sizes().begin(), v.sizes().end() - 2);
  int64_t group = 1;
  if (a.to_bool("enable_gqa")) {
    if (qb.empty() || kb.empty() || vb.empty() || kb.back() <= 0 || qb.back() % kb.back() != 0 || kb.back() != vb.back())
      kernel_error(op, "enable_gqa: query heads must be a multiple of key and value heads");
    group = qb.back() / kb.back();
    kb.back() = vb.back() = qb.back();
  }
  std::vector<int64_t> batch = broadcast_shapes(op, broadcast_shapes(op, qb, kb), vb);
  double scale = a.is_none("scale") ? 1.0 / std::sqrt(static_cast<double>(E)) : a.to_double("scale");
  std::vector<int64_t> out_sizes = batch;
  out_sizes.insert(out_sizes.end(), {L, Ev});
  HostTensor out = HostTensor::zeros(q.dtype(), out_sizes);
  std::vector<int64_t> scores_sizes = batch;
  scores_sizes.insert(scores_sizes.end(), {L, S});
  std::optional<HostTensor> m;
  if (mask) m = broadcast_to(op, *mask, scores_sizes);
  int64_t qs = q.element_size(), ks = k.element_size(), vs = v.element_size();
  std::vector<double> row(static_cast<size_t>(S));
  std::vector<int64_t> at(batch.size(), 0);
  for (int64_t b = 0, nb = numel_of(batch); b < nb; ++b) {
    for (int64_t rest = b, d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      at[static_cast<size_t>(d)] = rest % batch[static_cast<size_t>(d)];
      rest /= batch[static_cast<size_t>(d)];
    }
    const std::byte* qp = q.data() + batch_offset(q, at, 1) * qs;
    const std::byte* kp = k.data() + batch_offset(k, at, group) * ks;
    const std::byte* vp = v.data() + batch_offset(v, at, group) * vs;
    int64_t q0 = q.strides()[static_cast<size_t>(q.dim() - 2)], q1 = q.strides().back();
    int64_t k0 = k.strides()[static_cast<size_t>(k.dim() - 2)], k1 = k.strides().back();
    int64_t v0 = v.strides()[static_cast<size_t>(v.dim() - 2)], v1 = v.strides().back();
    for (int64_t i = 0; i < L; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double sc = 0;
        for (int64_t e = 0; e < E; ++e)
          sc += load_double(q.dtype(), qp + (i * q0 + e * q1) * qs) * load_double(k.dtype(), kp + (j * k0 + e * k1) * ks);
        sc *= scale;
        if (causal && j > i) sc = -INFINITY;
        if (m) {
          int64_t linear = (b * L + i) * S + j;
          if (m->dtype() == DType::Bool) {
            if (m->get_int(linear) == 0) sc = -INFINITY;
          } else {
            sc += m->get_double(linear);
          }
        }
        row[static_cast<size_t>(j)] = sc;
        top = sc > top || sc != sc ? sc : top;  // a NaN score makes the row NaN
      }
      double sum = 0;
      for (double& x : row) sum += (x = top == -INFINITY ? 0.0 : std::exp(x - top));
      for (int64_t c = 0; c < Ev; ++c) {
        double acc = 0;
        if (top != -INFINITY)
          for (int64_t j = 0; j < S; ++j)
            acc += row[static_cast<size_t>(j)] * load_double(v.dtype(), vp + (j * v0 + c * v1) * vs);
        out.set_double((b * L + i) * Ev + c, top == -INFINITY ? 0.0 : acc / sum);
      }
    }
  }
  return {RtValue(out)};
}

}  // namespace

std::vector<KernelImpl> linalg_kernel_impls() {
  return {
      {"aten.mm.default", k_mm},           {"aten.bmm.default", k_bmm},       {"aten.addmm.default", k_addmm},
      {"aten.baddbmm.default", k_baddbmm}, {"aten.matmul.default", k_matmul}, {"aten.linear.default", k_linear},
      {"aten._addmm_activation.default", k_addmm_activation}, {"aten.scaled_dot_product_attention.default", k_attention},
  };
}

}  // namespace toroid::ops
