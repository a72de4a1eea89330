// Reference kernels: reductions. Floating sums and means accumulate in double, integer sums
// and products in int64 (wrapping), each output element in the row-major order of its reduced
// elements. max/min/argmax/argmin propagate NaN (the first NaN wins) and take the first
// occurrence on ties, as PyTorch.
#include <cmath>
#include <limits>
#include <optional>

#include "ref_families.h"
#include "toroid/ops/ref_util.h"

namespace toroid::ops {

namespace {

using Out = std::vector<RtValue>;

std::string opname(const RtArgs& a) { return a.schema().qualified_name(); }

// A reduction over some dims: the input viewed with the kept dims first and the reduced dims
// last, so its row-major walk visits output element i's inputs as a contiguous run.
struct Plan {
  std::vector<int64_t> out_sizes;  // with or without the kept 1s, per keepdim
  HostTensor view;
  int64_t outer = 1, inner = 1;
  std::vector<bool> reduced;
};

// dims empty (or absent) reduces every dim.
Plan plan(const std::string& op, const HostTensor& x, const std::optional<std::vector<int64_t>>& dims_opt, bool keepdim) {
  Plan p;
  int64_t nd = x.dim();
  p.reduced.assign(static_cast<size_t>(nd), false);
  bool all = !dims_opt || dims_opt->empty();
  if (!all) {
    for (int64_t d : *dims_opt) {
      int64_t w = wrap_dim(op, d, nd);
      if (nd == 0) continue;
      if (p.reduced[static_cast<size_t>(w)]) kernel_error(op, "dim " + std::to_string(w) + " appears multiple times in the list of dims");
      p.reduced[static_cast<size_t>(w)] = true;
    }
  } else {
    p.reduced.assign(static_cast<size_t>(nd), true);
  }
  std::vector<int64_t> vs, vt;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t d = 0; d < nd; ++d) {
      size_t u = static_cast<size_t>(d);
      if (p.reduced[u] != (pass == 1)) continue;
      vs.push_back(x.sizes()[u]);
      vt.push_back(x.strides()[u]);
      if (pass == 0) p.outer *= x.sizes()[u];
      else p.inner *= x.sizes()[u];
    }
  for (int64_t d = 0; d < nd; ++d) {
    size_t u = static_cast<size_t>(d);
    if (!p.reduced[u]) p.out_sizes.push_back(x.sizes()[u]);
    else if (keepdim) p.out_sizes.push_back(1);
  }
  p.view = x.as_strided(vs, vt, x.offset());
  return p;
}

// fn(out_index, k_within_run, element pointer) for every input element.
template <class F>
void visit(const Plan& p, F&& fn) {
  int64_t i = 0;
  for_each_element<1>(p.view.sizes(), {&p.view}, [&](const std::array<std::byte*, 1>& ptr) {
    int64_t o = p.inner ? i / p.inner : 0;
    fn(o, i - o * p.inner, ptr[0]);
    ++i;
  });
}

void require_nonempty(const std::string& op, const HostTensor& x, const Plan& p) {
  for (int64_t d = 0; d < x.dim(); ++d)
    if (p.reduced[static_cast<size_t>(d)] && x.sizes()[static_cast<size_t>(d)] == 0)
      kernel_error(op, "Expected reduction dim " + std::to_string(d) + " to have non-zero size.");
  if (x.numel() == 0 && x.dim() == 0) kernel_error(op, "Expected a non-empty tensor");
}

DType sum_dtype(const HostTensor& x, std::optional<DType> d) {
  if (d) return *d;
  return is_floating(x.dtype()) ? x.dtype() : DType::Int64;
}

// Sum or product into a new tensor of dtype `out`.
HostTensor accumulate(const std::string& op, const HostTensor& x, const Plan& p, DType out, bool product) {
  HostTensor r = HostTensor::zeros(out, p.out_sizes);
  DType src = x.dtype();
  if (is_floating(out)) {
    std::vector<double> acc(static_cast<size_t>(p.outer), product ? 1.0 : 0.0);
    visit(p, [&](int64_t o, int64_t, const std::byte* e) {
      double v = round_to(out, load_double(src, e));  // the input converted to the result dtype first
      acc[static_cast<size_t>(o)] = product ? acc[static_cast<size_t>(o)] * v : acc[static_cast<size_t>(o)] + v;
    });
    for (int64_t o = 0; o < p.outer; ++o) r.set_double(o, acc[static_cast<size_t>(o)]);
  } else {
    std::vector<int64_t> acc(static_cast<size_t>(p.outer), product ? 1 : 0);
    visit(p, [&](int64_t o, int64_t, const std::byte* e) {
      int64_t v = wrap_to(out, load_int(src, e));
      int64_t& a = acc[static_cast<size_t>(o)];
      a = product ? wrap_mul(a, v) : wrap_add(a, v);
    });
    for (int64_t o = 0; o < p.outer; ++o) r.set_int(o, acc[static_cast<size_t>(o)]);
  }
  (void)op;
  return r;
}

std::optional<std::vector<int64_t>> dims_arg(const RtArgs& a, const char* name = "dim") {
  if (!a.schema().argument_index(name)) return std::nullopt;
  return a.opt_int_list(name);
}
bool keepdim_arg(const RtArgs& a) { return a.schema().argument_index("keepdim") ? a.to_bool("keepdim") : false; }
std::optional<DType> dtype_arg(const RtArgs& a) {
  return a.schema().argument_index("dtype") ? a.dtype("dtype") : std::nullopt;
}

Out k_sum(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  Plan p = plan(opname(a), x, dims_arg(a), keepdim_arg(a));
  return {accumulate(opname(a), x, p, sum_dtype(x, dtype_arg(a)), false)};
}

Out k_prod(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  std::optional<std::vector<int64_t>> dims;
  if (a.schema().argument_index("dim")) dims = std::vector<int64_t>{a.to_int("dim")};
  Plan p = plan(opname(a), x, dims, keepdim_arg(a));
  return {accumulate(opname(a), x, p, sum_dtype(x, dtype_arg(a)), true)};
}

Out k_mean(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::optional<DType> d = dtype_arg(a);
  DType out = d.value_or(x.dtype());
  if (!is_floating(out))
    kernel_error(op, std::string("mean(): could not infer output dtype. ") +
                         (d ? "Optional dtype" : "Input dtype") + " must be either a floating point or complex dtype. Got: " +
                         dtype_aten_name(out));
  Plan p = plan(op, x, dims_arg(a), keepdim_arg(a));
  HostTensor s = accumulate(op, x, p, DType::Float64, false);
  HostTensor r = HostTensor::zeros(out, p.out_sizes);
  for (int64_t o = 0; o < p.outer; ++o) r.set_double(o, s.get_double(o) / static_cast<double>(p.inner));
  return {r};
}

// ---- max / min family ---------------------------------------------------------------------

// Whether candidate value c replaces the current best b (NaN wins and stays; ties keep the first).
template <bool Max>
bool better(double c, double b) {
  if (std::isnan(b)) return false;
  if (std::isnan(c)) return true;
  return Max ? c > b : c < b;
}
template <bool Max>
bool better_i(int64_t c, int64_t b) {
  return Max ? c > b : c < b;
}

// Values and indices (position within the reduced run) of the max or min.
template <bool Max>
std::pair<HostTensor, HostTensor> extreme(const std::string& op, const HostTensor& x, const Plan& p, DType vdtype) {
  require_nonempty(op, x, p);
  HostTensor vals = HostTensor::zeros(vdtype, p.out_sizes);
  HostTensor idx = HostTensor::zeros(DType::Int64, p.out_sizes);
  DType src = x.dtype();
  if (is_floating(src)) {
    std::vector<double> best(static_cast<size_t>(p.outer));
    std::vector<int64_t> at(static_cast<size_t>(p.outer));
    visit(p, [&](int64_t o, int64_t k, const std::byte* e) {
      double v = load_double(src, e);
      size_t u = static_cast<size_t>(o);
      if (k == 0 || better<Max>(v, best[u])) {
        best[u] = v;
        at[u] = k;
      }
    });
    for (int64_t o = 0; o < p.outer; ++o) {
      vals.set_double(o, best[static_cast<size_t>(o)]);
      idx.set_int(o, at[static_cast<size_t>(o)]);
    }
  } else {
    std::vector<int64_t> best(static_cast<size_t>(p.outer)), at(static_cast<size_t>(p.outer));
    visit(p, [&](int64_t o, int64_t k, const std::byte* e) {
      int64_t v = load_int(src, e);
      size_t u = static_cast<size_t>(o);
      if (k == 0 || better_i<Max>(v, best[u])) {
        best[u] = v;
        at[u] = k;
      }
    });
    for (int64_t o = 0; o < p.outer; ++o) {
      vals.set_int(o, best[static_cast<size_t>(o)]);
      idx.set_int(o, at[static_cast<size_t>(o)]);
    }
  }
  return {vals, idx};
}

template <bool Max>
Out k_amax(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  Plan p = plan(opname(a), x, a.int_list("dim"), a.to_bool("keepdim"));
  return {extreme<Max>(opname(a), x, p, x.dtype()).first};
}

template <bool Max>
Out k_max_all(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  if (x.numel() == 0)
    kernel_error(opname(a), std::string(Max ? "max" : "min") +
                                "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  Plan p = plan(opname(a), x, std::nullopt, false);
  return {extreme<Max>(opname(a), x, p, x.dtype()).first};
}

template <bool Max>
Out k_max_dim(const RtArgs& a, KernelContext&) {
  const HostTensor& x = a.tensor("self");
  Plan p = plan(opname(a), x, std::vector<int64_t>{a.to_int("dim")}, a.to_bool("keepdim"));
  auto [v, i] = extreme<Max>(opname(a), x, p, x.dtype());
  return {v, i};
}

template <bool Max>
Out k_argmax(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::optional<int64_t> dim = a.opt_int("dim");
  bool keepdim = a.to_bool("keepdim");
  if (!dim) {
    if (x.numel() == 0)
      kernel_error(op, std::string(Max ? "argmax" : "argmin") + "(): Expected reduction dim to be specified for input.numel() == 0.");
    HostTensor flat = x.clone();
    flat = flat.as_strided({flat.numel()}, {1}, 0);
    Plan p = plan(op, flat, std::nullopt, false);
    HostTensor i = extreme<Max>(op, flat, p, flat.dtype()).second;
    if (keepdim) i = i.as_strided(std::vector<int64_t>(static_cast<size_t>(x.dim()), 1), std::vector<int64_t>(static_cast<size_t>(x.dim()), 1), 0);
    return {i};
  }
  Plan p = plan(op, x, std::vector<int64_t>{*dim}, keepdim);
  return {extreme<Max>(op, x, p, x.dtype()).second};
}

// ---- any ----------------------------------------------------------------------------------

Out k_any(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  std::optional<std::vector<int64_t>> dims;
  bool keepdim = false;
  if (a.schema().argument_index("dim")) {
    const RtValue& d = a.get("dim");
    if (d.kind() == RtValue::Kind::Int) dims = std::vector<int64_t>{d.to_int()};
    else dims = a.opt_int_list("dim");
    keepdim = a.to_bool("keepdim");
  }
  Plan p = plan(op, x, dims, keepdim);
  DType out = x.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
  HostTensor r = HostTensor::zeros(out, p.out_sizes);
  std::vector<uint8_t> acc(static_cast<size_t>(p.outer), 0);
  DType src = x.dtype();
  visit(p, [&](int64_t o, int64_t, const std::byte* e) {
    if (load_bool(src, e)) acc[static_cast<size_t>(o)] = 1;
  });
  for (int64_t o = 0; o < p.outer; ++o) r.set_int(o, acc[static_cast<size_t>(o)]);
  return {r};
}

// ---- variance -----------------------------------------------------------------------------

std::pair<HostTensor, HostTensor> var_mean_impl(const std::string& op, const HostTensor& x,
                                                const std::optional<std::vector<int64_t>>& dims, double correction,
                                                bool keepdim) {
  if (!is_floating(x.dtype()))
    kernel_error(op, std::string("std and var only support floating point and complex dtypes, got ") + dtype_aten_name(x.dtype()));
  Plan p = plan(op, x, dims, keepdim);
  std::vector<double> sum(static_cast<size_t>(p.outer), 0.0), m2(static_cast<size_t>(p.outer), 0.0);
  DType src = x.dtype();
  visit(p, [&](int64_t o, int64_t, const std::byte* e) { sum[static_cast<size_t>(o)] += load_double(src, e); });
  double n = static_cast<double>(p.inner);
  visit(p, [&](int64_t o, int64_t, const std::byte* e) {
    double d = load_double(src, e) - sum[static_cast<size_t>(o)] / n;
    m2[static_cast<size_t>(o)] += d * d;
  });
  HostTensor var = HostTensor::zeros(x.dtype(), p.out_sizes);
  HostTensor mean = HostTensor::zeros(x.dtype(), p.out_sizes);
  double denom = std::max(0.0, n - correction);
  for (int64_t o = 0; o < p.outer; ++o) {
    var.set_double(o, m2[static_cast<size_t>(o)] / denom);  // 0/0 = nan, x/0 = inf, as PyTorch
    mean.set_double(o, sum[static_cast<size_t>(o)] / n);
  }
  return {var, mean};
}

double correction_arg(const RtArgs& a) {
  if (a.schema().argument_index("unbiased")) return a.to_bool("unbiased") ? 1.0 : 0.0;
  return a.is_none("correction") ? 1.0 : a.to_double("correction");
}

Out k_var(const RtArgs& a, KernelContext&) {
  return {var_mean_impl(opname(a), a.tensor("self"), a.opt_int_list("dim"), correction_arg(a), a.to_bool("keepdim")).first};
}
Out k_var_mean(const RtArgs& a, KernelContext&) {
  auto [v, m] = var_mean_impl(opname(a), a.tensor("self"), a.opt_int_list("dim"), correction_arg(a), a.to_bool("keepdim"));
  return {v, m};
}

// ---- cumsum, cumprod ----------------------------------------------------------------------

template <bool Prod>
Out k_scan(const RtArgs& a, KernelContext&) {
  std::string op = opname(a);
  const HostTensor& x = a.tensor("self");
  DType out = sum_dtype(x, a.dtype("dtype"));
  int64_t dim = wrap_dim(op, a.to_int("dim"), x.dim());
  HostTensor r = HostTensor::zeros(out, x.sizes());
  if (x.dim() == 0) {
    copy_into(op, r, x);
    return {r};
  }
  // Move `dim` last in both, then scan each row.
  std::vector<int64_t> order;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim) order.push_back(d);
  order.push_back(dim);
  auto perm = [&](const HostTensor& t) {
    std::vector<int64_t> s, st;
    for (int64_t d : order) {
      s.push_back(t.sizes()[static_cast<size_t>(d)]);
      st.push_back(t.strides()[static_cast<size_t>(d)]);
    }
    return t.as_strided(s, st, t.offset());
  };
  HostTensor xv = perm(x), rv = perm(r);
  int64_t len = x.sizes()[static_cast<size_t>(dim)];
  double facc = 0;
  int64_t iacc = 0, k = 0;
  DType src = x.dtype();
  for_each_element<2>(xv.sizes(), {&rv, &xv}, [&](const std::array<std::byte*, 2>& p) {
    if (k == 0) {
      facc = Prod ? 1 : 0;
      iacc = Prod ? 1 : 0;
    }
    if (is_floating(out)) {
      double v = round_to(out, load_double(src, p[1]));
      facc = Prod ? facc * v : facc + v;
      store_double(out, p[0], facc);
    } else {
      int64_t v = wrap_to(out, load_int(src, p[1]));
      iacc = Prod ? wrap_mul(iacc, v) : wrap_add(iacc, v);
      store_int(out, p[0], iacc);
    }
    if (++k == len) k = 0;
  });
  return {r};
}

}  // namespace

std::vector<KernelImpl> reduction_kernel_impls() {
  return {
      {"aten.sum.dim_IntList", k_sum},
      {"aten.sum.default", k_sum},
      {"aten.prod.default", k_prod},
      {"aten.prod.dim_int", k_prod},
      {"aten.mean.default", k_mean},
      {"aten.mean.dim", k_mean},
      {"aten.amax.default", k_amax<true>},
      {"aten.amin.default", k_amax<false>},
      {"aten.max.default", k_max_all<true>},
      {"aten.min.default", k_max_all<false>},
      {"aten.max.dim", k_max_dim<true>},
      {"aten.min.dim", k_max_dim<false>},
      {"aten.argmax.default", k_argmax<true>},
      {"aten.argmin.default", k_argmax<false>},
      {"aten.any.default", k_any},
      {"aten.any.dim", k_any},
      {"aten.any.dims", k_any},
      {"aten.var.correction", k_var},
      {"aten.var.dim", k_var},
      {"aten.var_mean.correction", k_var_mean},
      {"aten.cumsum.default", k_scan<false>},
      {"aten.cumprod.default", k_scan<true>},
  };
}

}  // namespace toroid::ops
