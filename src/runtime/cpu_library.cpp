#include "cpu_library.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "toroid/ops/ref_util.h"
#include "toroid/support/error.h"

namespace toroid::runtime {

using codegen::wrapper::CallArg;
using codegen::wrapper::Line;
using codegen::wrapper::ReferenceCall;
using ops::HostTensor;

namespace {

bool tensor_arg(const CallArg& a) { return a.kind == CallArg::Kind::Tensor && a.tensor.slot >= 0; }

// The kernels read row-major operands: `t` itself, or its contiguous copy.
HostTensor contiguous(const HostTensor& t) { return t.is_contiguous() ? t : t.clone(); }

std::optional<int64_t> wrapped_dim(int64_t d, int64_t rank) {
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) return std::nullopt;
  return d;
}

// Whether a result is laid out row-major contiguous (checked before it is allocated).
bool contiguous_ref(const codegen::wrapper::TensorRef& r, const CpuCallHooks& h) {
  int64_t expect = 1;
  for (size_t d = r.sizes.size(); d-- > 0;) {
    int64_t size = h.eval_int(r.sizes[d]);
    if (size != 1 && h.eval_int(r.strides[d]) != expect) return false;
    expect *= size;
  }
  return true;
}

// A contiguous tensor as [outer, len, inner] around `dim`.
struct Lines {
  int64_t outer = 1, len = 1, inner = 1;
  Lines(const std::vector<int64_t>& sizes, int64_t dim) {
    for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d)
      (d < dim ? outer : d == dim ? len : inner) *= sizes[static_cast<size_t>(d)];
  }
};

// ---- nonzero ------------------------------------------------------------------------------------

// An element is nonzero when a bit outside a float's sign is set (-0.0 is zero; NaN is not).
bool nonzero_at(const std::byte* p, size_t esize, uint64_t sign_mask) {
  uint64_t v = 0;
  std::memcpy(&v, p, esize);
  return (v & ~sign_mask) != 0;
}

bool nonzero(const Line& l, const CpuCallHooks& h) {
  const ReferenceCall& c = l.call;
  if (c.args.empty() || !tensor_arg(c.args[0]) || c.results.size() != 1) return false;
  HostTensor x = contiguous(h.view(c.args[0].tensor));
  const ReferenceCall::Result& r = c.results[0];
  size_t rank = x.sizes().size();
  // PyTorch's layout: [count, rank] with strides [1, count].
  if (is_complex(x.dtype()) || r.ref.sizes.size() != 2 || r.ref.strides[0] != SymExpr::integer(1) ||
      (rank > 1 && r.ref.strides[1] != r.ref.sizes[0]))
    return false;
  auto esize = static_cast<size_t>(x.element_size());
  uint64_t mask = is_floating(x.dtype()) ? uint64_t(1) << (8 * esize - 1) : 0;
  const std::byte* p = x.data();
  int64_t n = x.numel(), count = 0;
  for (int64_t i = 0; i < n; ++i) count += nonzero_at(p + i * static_cast<int64_t>(esize), esize, mask);
  HostTensor out = h.result(r, {count, static_cast<int64_t>(rank)});
  auto* o = reinterpret_cast<int64_t*>(out.data());
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!nonzero_at(p + i * static_cast<int64_t>(esize), esize, mask)) continue;
    int64_t rest = i;
    for (size_t d = rank; d-- > 0;) {
      o[static_cast<int64_t>(d) * count + at] = rest % x.sizes()[d];
      rest /= x.sizes()[d];
    }
    ++at;
  }
  return true;
}

// ---- cumsum, cumprod ----------------------------------------------------------------------------

// Along one dim, floats accumulating in double and integers in int64 (wrapping), as the
// reference kernel.
bool scan(const Line& l, const CpuCallHooks& h) {
  const ReferenceCall& c = l.call;
  if (c.args.size() < 2 || !tensor_arg(c.args[0]) || c.results.size() != 1) return false;
  HostTensor x = contiguous(h.view(c.args[0].tensor));
  auto rank = static_cast<int64_t>(x.sizes().size());
  std::optional<int64_t> dim = rank == 0 ? std::optional<int64_t>(0) : wrapped_dim(h.eval_int(c.args[1].scalar), rank);
  DType ot = c.results[0].ref.dtype;
  if (!dim || is_complex(x.dtype()) || is_complex(ot)) return false;
  if (!contiguous_ref(c.results[0].ref, h)) return false;
  HostTensor out = h.result(c.results[0], x.sizes());
  bool prod = l.library == loop::LibraryCall::Cumprod, real = is_floating(ot);
  Lines s(x.sizes(), *dim);
  const std::byte* xp = x.data();
  std::byte* op = out.data();
  int64_t xe = x.element_size(), oe = out.element_size();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      double acc = prod ? 1.0 : 0.0;
      int64_t iacc = prod ? 1 : 0;
      for (int64_t k = 0; k < s.len; ++k) {
        int64_t at = (o * s.len + k) * s.inner + in;
        if (real) {
          double v = ops::load_double(x.dtype(), xp + at * xe);
          acc = prod ? acc * v : acc + v;
          ops::store_double(ot, op + at * oe, acc);
        } else {
          int64_t v = ops::load_int(x.dtype(), xp + at * xe);
          iacc = prod ? ops::wrap_mul(iacc, v) : ops::wrap_add(iacc, v);
          ops::store_int(ot, op + at * oe, iacc);
        }
      }
    }
  return true;
}

// ---- index_put, scatter, scatter_add, scatter_reduce, index_add ----------------------------------

enum class Combine { Store, Add, Mul, Max, Min };

// One scatter over contiguous `out`: for each element of the index (sizes `isz`, strides `ist`),
// in row-major order, out at its coordinates with coordinate `dim` replaced by the index value
// gets src at its coordinates (strides `sst`) times `alpha`, stored or combined. A negative
// index counts from the end with `wrap`. With `counts`, each position's contributions are counted.
struct Scatter {
  const HostTensor& out;
  const HostTensor& idx;
  std::vector<int64_t> isz, ist;
  const HostTensor& src;
  std::vector<int64_t> sst;
  int64_t dim = 0;
  Combine op = Combine::Store;
  double alpha = 1.0;
  bool wrap = false;
  std::vector<int64_t>* counts = nullptr;

  void run(const ReferenceCall& c) const {
    int64_t n = 1;
    for (int64_t x : isz) n *= x;
    if (n == 0) return;
    DType t = out.dtype();
    bool real = is_floating(t);
    auto ia = static_cast<int64_t>(alpha);
    std::vector<int64_t> ost = ops::contiguous_strides(out.sizes()), coord(isz.size(), 0);
    int64_t es = out.element_size(), extent = out.sizes()[static_cast<size_t>(dim)];
    const auto* ip = reinterpret_cast<const int64_t*>(idx.data());
    for (int64_t e = 0; e < n; ++e) {
      int64_t io = 0, so = 0, oo = 0;
      for (size_t d = 0; d < isz.size(); ++d) {
        io += coord[d] * ist[d];
        so += coord[d] * sst[d];
      }
      int64_t k = ip[io], at = wrap && k < 0 ? k + extent : k;
      if (at < 0 || at >= extent)
        user_error(c.op_name + ": index " + std::to_string(k) + " is out of bounds for a dimension of size " +
                       std::to_string(extent),
                   c.loc);
      for (size_t d = 0; d < coord.size(); ++d) oo += (static_cast<int64_t>(d) == dim ? at : coord[d]) * ost[d];
      std::byte* dst = out.data() + oo * es;
      const std::byte* from = src.data() + so * es;
      if (real) {
        double v = ops::load_double(t, from) * alpha, a = ops::load_double(t, dst);
        ops::store_double(t, dst, combine(a, v));
      } else {
        int64_t v = ops::wrap_mul(ops::load_int(t, from), ia), a = ops::load_int(t, dst);
        ops::store_int(t, dst, combine(a, v));
      }
      if (counts) ++(*counts)[static_cast<size_t>(oo)];
      for (size_t d = coord.size(); d-- > 0;) {  // the next element, row-major
        if (++coord[d] < isz[d]) break;
        coord[d] = 0;
      }
    }
  }

  double combine(double a, double v) const {
    switch (op) {
      case Combine::Store: return v;
      case Combine::Add: return a + v;
      case Combine::Mul: return a * v;
      default:
        if (std::isnan(a) || std::isnan(v)) return std::isnan(a) ? a : v;
        return op == Combine::Max ? std::max(a, v) : std::min(a, v);
    }
  }
  int64_t combine(int64_t a, int64_t v) const {
    switch (op) {
      case Combine::Store: return v;
      case Combine::Add: return ops::wrap_add(a, v);
      case Combine::Mul: return ops::wrap_mul(a, v);
      default: return op == Combine::Max ? std::max(a, v) : std::min(a, v);
    }
  }
};

// The contiguous result holding a copy of self (the scatters' first step); none when the
// result is not contiguous or not self's sizes.
std::optional<HostTensor> copy_of_self(const ReferenceCall& c, const HostTensor& self, const CpuCallHooks& h) {
  if (!contiguous_ref(c.results[0].ref, h)) return std::nullopt;
  HostTensor out = h.result(c.results[0], self.sizes());
  if (out.data() != self.data()) ops::copy_into(c.op_name, out, self);
  return out;
}

bool put_dtype(DType t) { return is_floating(t) || t == DType::Int32 || t == DType::Int64; }

// scatter.src / scatter.value / scatter_add / scatter_reduce.two(self, dim, index, src, ...).
bool scatter(const Line& l, const CpuCallHooks& h) {
  const ReferenceCall& c = l.call;
  bool value = c.args.size() >= 4 && c.args[3].kind == CallArg::Kind::Scalar;
  if (c.args.size() < 4 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[2]) || c.results.size() != 1 ||
      (!value && !tensor_arg(c.args[3])))
    return false;
  HostTensor self = h.view(c.args[0].tensor), idx = h.view(c.args[2].tensor);
  size_t rank = self.sizes().size();
  HostTensor src;
  if (value) {
    src = HostTensor::zeros(self.dtype(), {1});
    SymExpr v = c.args[3].scalar;
    if (is_floating(self.dtype())) src.set_double(0, h.eval_real(v));
    else src.set_int(0, v.is_float() ? static_cast<int64_t>(h.eval_real(v)) : h.eval_int(v));
  } else {
    src = h.view(c.args[3].tensor);
  }
  if (rank == 0 || idx.dtype() != DType::Int64 || src.dtype() != self.dtype() || !put_dtype(self.dtype()) ||
      idx.sizes().size() != rank || (!value && src.sizes().size() != rank))
    return false;
  std::optional<int64_t> dim = wrapped_dim(h.eval_int(c.args[1].scalar), static_cast<int64_t>(rank));
  if (!dim) return false;
  for (size_t d = 0; d < rank; ++d)
    if ((!value && idx.sizes()[d] > src.sizes()[d]) ||
        (static_cast<int64_t>(d) != *dim && idx.sizes()[d] > self.sizes()[d]))
      return false;
  Combine op = l.library == loop::LibraryCall::ScatterAdd ? Combine::Add : Combine::Store;
  bool include_self = true, mean = false;
  if (l.library == loop::LibraryCall::ScatterReduce) {
    if (c.args.size() < 6 || c.args[4].kind != CallArg::Kind::Constant) return false;
    const std::string& reduce = c.args[4].constant.str();
    mean = reduce == "mean";
    op = reduce == "sum" || mean ? Combine::Add
         : reduce == "prod"      ? Combine::Mul
         : reduce == "amax"      ? Combine::Max
         : reduce == "amin"      ? Combine::Min
                                 : Combine::Store;
    if (op == Combine::Store) return false;  // the reference kernel names the bad reduction
    include_self = h.eval_int(c.args[5].scalar) != 0;
  }
  std::optional<HostTensor> out = copy_of_self(c, self, h);
  if (!out) return false;
  std::vector<int64_t> src_strides = value ? std::vector<int64_t>(rank, 0) : src.strides();
  if (!include_self) {
    // The positions the index names start from the reduction's identity.
    HostTensor id = HostTensor::zeros(self.dtype(), {1});
    double inf = std::numeric_limits<double>::infinity();
    bool real = is_floating(self.dtype()), max = op == Combine::Max;
    int64_t lo = self.dtype() == DType::Int32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    int64_t hi = self.dtype() == DType::Int32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    if (op == Combine::Mul) id.set_double(0, 1.0);
    else if (op == Combine::Max || op == Combine::Min) real ? id.set_double(0, max ? -inf : inf) : id.set_int(0, max ? lo : hi);
    Scatter{*out, idx, idx.sizes(), idx.strides(), id, std::vector<int64_t>(rank, 0), *dim}.run(c);
  }
  std::vector<int64_t> counts;
  if (mean) counts.assign(static_cast<size_t>(out->numel()), 0);
  Scatter s{*out, idx, idx.sizes(), idx.strides(), src, src_strides, *dim, op};
  s.counts = mean ? &counts : nullptr;
  s.run(c);
  if (mean) {
    DType t = out->dtype();
    int64_t es = out->element_size();
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] == 0) continue;
      int64_t n = counts[i] + (include_self ? 1 : 0);
      std::byte* p = out->data() + static_cast<int64_t>(i) * es;
      if (is_floating(t)) {
        ops::store_double(t, p, ops::load_double(t, p) / static_cast<double>(n));
      } else {
        int64_t v = ops::load_int(t, p), q = v / n;
        ops::store_int(t, p, (v % n != 0 && (v < 0) != (n < 0)) ? q - 1 : q);  // floor, as PyTorch
      }
    }
  }
  return true;
}

// index_add(self, dim, index, source, alpha): the index read at each source element's
// coordinate along dim (stride 0 along the others).
bool index_add(const Line& l, const CpuCallHooks& h) {
  const ReferenceCall& c = l.call;
  if (c.args.size() < 5 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[2]) || !tensor_arg(c.args[3]) ||
      c.results.size() != 1)
    return false;
  HostTensor self = h.view(c.args[0].tensor), idx = h.view(c.args[2].tensor), src = h.view(c.args[3].tensor);
  auto rank = static_cast<int64_t>(self.sizes().size());
  if (rank == 0 || idx.dtype() != DType::Int64 || idx.sizes().size() > 1 || src.dtype() != self.dtype() ||
      !put_dtype(self.dtype()) || src.sizes().size() != self.sizes().size())
    return false;
  std::optional<int64_t> dim = wrapped_dim(h.eval_int(c.args[1].scalar), rank);
  if (!dim || idx.numel() != src.sizes()[static_cast<size_t>(*dim)]) return false;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *dim && src.sizes()[static_cast<size_t>(d)] != self.sizes()[static_cast<size_t>(d)]) return false;
  double alpha = h.eval_real(c.args[4].scalar);
  if (!is_floating(self.dtype()) && alpha != static_cast<double>(static_cast<int64_t>(alpha))) return false;
  std::optional<HostTensor> out = copy_of_self(c, self, h);
  if (!out) return false;
  std::vector<int64_t> index_strides(static_cast<size_t>(rank), 0);
  index_strides[static_cast<size_t>(*dim)] = idx.sizes().empty() ? 0 : idx.strides()[0];
  Scatter s{*out, idx, src.sizes(), index_strides, src, src.strides(), *dim, Combine::Add};
  s.alpha = alpha;
  s.run(c);
  return true;
}

// index_put(self, [idx], values, accumulate) with one int64 index over dim 0 and values laid
// out as idx's shape followed by a row of self: a scatter along dim 0 of [rows, row] views.
bool index_put(const Line& l, const CpuCallHooks& h) {
  const ReferenceCall& c = l.call;
  if (c.args.size() < 4 || !tensor_arg(c.args[0]) || !tensor_arg(c.args[2]) || c.results.size() != 1) return false;
  const CallArg& list = c.args[1];
  if (list.kind != CallArg::Kind::List || list.list.size() != 1 || !tensor_arg(list.list[0])) return false;
  HostTensor self = h.view(c.args[0].tensor);
  HostTensor idx = contiguous(h.view(list.list[0].tensor)), values = contiguous(h.view(c.args[2].tensor));
  if (self.sizes().empty() || !put_dtype(self.dtype()) || idx.dtype() != DType::Int64 || values.dtype() != self.dtype())
    return false;
  int64_t rows = self.sizes()[0], row = rows ? self.numel() / rows : 0, n = idx.numel();
  if (values.numel() != n * row) return false;  // broadcast values: the reference kernel
  std::optional<HostTensor> out = copy_of_self(c, self, h);
  if (!out) return false;
  HostTensor out2 = out->as_strided({rows, row}, {row, 1}, out->offset());
  HostTensor src2 = values.as_strided({n, row}, {row, 1}, values.offset());
  Scatter s{out2, idx, {n, row}, {1, 0}, src2, {row, 1}, 0,
            h.eval_int(c.args[3].scalar) != 0 ? Combine::Add : Combine::Store};
  s.wrap = true;
  s.run(c);
  return true;
}

// ---- sort, topk ---------------------------------------------------------------------------------

// The first k of each line's stable order (NaN largest), values copied exactly.
bool sort(const Line& l, const CpuCallHooks& h) {
  const ReferenceCall& c = l.call;
  bool topk = l.library == loop::LibraryCall::Topk;
  if (c.args.size() < (topk ? 4u : 3u) || !tensor_arg(c.args[0]) || c.results.size() != 2) return false;
  HostTensor x = contiguous(h.view(c.args[0].tensor));
  if (is_complex(x.dtype()) || x.dtype() == DType::Bool) return false;
  auto rank = static_cast<int64_t>(x.sizes().size());
  std::optional<int64_t> dim = rank == 0 ? std::optional<int64_t>(0) : wrapped_dim(h.eval_int(c.args[topk ? 2 : 1].scalar), rank);
  if (!dim) return false;
  Lines s(x.sizes(), *dim);
  int64_t k = topk ? h.eval_int(c.args[1].scalar) : s.len;
  if (k < 0 || k > s.len) return false;  // the reference kernel reports it
  bool descending = h.eval_int(c.args[topk ? 3 : 2].scalar) != 0;
  std::vector<int64_t> sizes = x.sizes();
  if (rank > 0) sizes[static_cast<size_t>(*dim)] = k;
  // sort's results keep the input's layout (its meta): a strided input goes to the reference.
  if (!contiguous_ref(c.results[0].ref, h) || !contiguous_ref(c.results[1].ref, h)) return false;
  HostTensor values = h.result(c.results[0], sizes), indices = h.result(c.results[1], sizes);
  bool real = is_floating(x.dtype());
  int64_t es = x.element_size();
  std::vector<double> key(static_cast<size_t>(s.len));
  std::vector<int64_t> ikey(static_cast<size_t>(s.len)), order(static_cast<size_t>(s.len));
  auto less = [&](int64_t p, int64_t q) {
    auto up = static_cast<size_t>(p), uq = static_cast<size_t>(q);
    if (!real) return descending ? ikey[uq] < ikey[up] : ikey[up] < ikey[uq];
    double a = key[up], b = key[uq];
    if (descending) std::swap(a, b);
    return std::isnan(a) ? false : std::isnan(b) ? true : a < b;
  };
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      for (int64_t j = 0; j < s.len; ++j) {
        const std::byte* p = x.data() + ((o * s.len + j) * s.inner + in) * es;
        if (real) key[static_cast<size_t>(j)] = ops::load_double(x.dtype(), p);
        else ikey[static_cast<size_t>(j)] = ops::load_int(x.dtype(), p);
      }
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), less);
      for (int64_t j = 0; j < k; ++j) {
        int64_t from = (o * s.len + order[static_cast<size_t>(j)]) * s.inner + in, to = (o * k + j) * s.inner + in;
        std::memcpy(values.data() + to * es, x.data() + from * es, static_cast<size_t>(es));
        reinterpret_cast<int64_t*>(indices.data())[to] = order[static_cast<size_t>(j)];
      }
    }
  return true;
}

}  // namespace

bool run_cpu_library(const Line& l, const CpuCallHooks& h) {
  switch (l.library) {
    case loop::LibraryCall::Nonzero: return nonzero(l, h);
    case loop::LibraryCall::Cumsum:
    case loop::LibraryCall::Cumprod: return scan(l, h);
    case loop::LibraryCall::IndexPut: return index_put(l, h);
    case loop::LibraryCall::Scatter:
    case loop::LibraryCall::ScatterAdd:
    case loop::LibraryCall::ScatterReduce: return scatter(l, h);
    case loop::LibraryCall::IndexAdd: return index_add(l, h);
    case loop::LibraryCall::Sort:
    case loop::LibraryCall::Topk: return sort(l, h);
    default: return false;
  }
}

}  // namespace toroid::runtime
