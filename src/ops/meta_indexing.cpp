// Meta functions of indexing and of tensor queries: index.Tensor, index_put, index_select,
// gather, scatter*, nonzero (an unbacked row count), _local_scalar_dense (an unbacked value)
// and sym_size/sym_stride/sym_numel/sym_storage_offset/sym_is_contiguous (scalar results).
#include "meta_families.h"
#include "meta_helpers.h"
#include "toroid/ops/meta_util.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

constexpr auto& arg = tensor_arg;

void index_dtype(MetaContext& ctx, const TensorMeta& idx, bool allow_i32) {
  if (idx.dtype != DType::Int64 && !(allow_i32 && idx.dtype == DType::Int32))
    ctx.fail(std::string("expected dtype int64 for index, got ") + dtype_short_name(idx.dtype));
}

Results index_select(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  const TensorMeta& idx = arg(a, ctx, "index");
  index_dtype(ctx, idx, true);
  if (idx.rank() > 1) ctx.fail("index_select(): index must be a vector, got rank " + std::to_string(idx.rank()));
  size_t d = static_cast<size_t>(wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank()));
  std::vector<SymExpr> sizes = x.sizes;
  if (!sizes.empty()) sizes[d] = idx.numel();
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, sizes))};
}

Results gather(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  const TensorMeta& idx = arg(a, ctx, "index");
  index_dtype(ctx, idx, false);
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank());
  if (idx.rank() != x.rank() && idx.rank() != 0 && x.rank() != 0)
    ctx.fail("index tensor must have the same number of dimensions as input tensor");
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, idx.sizes))};
}

// scatter*: a fresh contiguous tensor of self's shape.
Results scatter(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  const TensorMeta& idx = arg(a, ctx, "index");
  index_dtype(ctx, idx, false);
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank());
  if (a.schema().argument_index("src")) {
    const TensorMeta& src = arg(a, ctx, "src");
    if (src.dtype != x.dtype)
      ctx.fail(std::string("expected self.dtype to be equal to src.dtype, got ") + dtype_short_name(x.dtype) +
               " and " + dtype_short_name(src.dtype));
  }
  if (a.schema().argument_index("reduce")) {
    std::string r = a.str("reduce");
    if (r != "sum" && r != "prod" && r != "mean" && r != "amax" && r != "amin")
      ctx.fail("reduce argument must be either sum, prod, mean, amax or amin, got " + r);
  }
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, x.sizes))};
}

// Advanced indexing: the index tensors broadcast together; their result dims replace the
// indexed dims in place when the indices are adjacent, else go first. A bool mask stands for
// the nonzero() of itself (an unbacked count).
Results index(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  std::vector<Value*> idx = a.tensor_list("indices");
  std::vector<std::vector<SymExpr>> shapes;
  std::vector<bool> indexed;  // per self dim
  for (Value* v : idx) {
    if (!v) {
      indexed.push_back(false);
      continue;
    }
    const TensorMeta& m = v->meta();
    if (m.dtype == DType::Bool || m.dtype == DType::UInt8) {
      SymExpr u = ctx.create_unbacked(sym::ValueRange{0, m.numel().as_int().value_or(sym::ValueRange::kPosInf)});
      shapes.push_back({u});
      for (int64_t i = 0; i < std::max<int64_t>(m.rank(), 1); ++i) indexed.push_back(true);
    } else {
      if (!is_integral(m.dtype)) ctx.fail("tensors used as indices must be long, int, byte or bool tensors");
      shapes.push_back(m.sizes);
      indexed.push_back(true);
    }
  }
  if (static_cast<int64_t>(indexed.size()) > x.rank())
    ctx.fail("too many indices for tensor of dimension " + std::to_string(x.rank()) + " (got " +
             std::to_string(indexed.size()) + ")");
  indexed.resize(x.sizes.size(), false);
  std::vector<SymExpr> b = broadcast_shapes(ctx, shapes);
  size_t first = indexed.size(), last = 0;
  for (size_t i = 0; i < indexed.size(); ++i)
    if (indexed[i]) {
      first = std::min(first, i);
      last = i;
    }
  bool adjacent = true;
  for (size_t i = first; i <= last && first < indexed.size(); ++i) adjacent = adjacent && indexed[i];
  std::vector<SymExpr> out;
  if (!adjacent) out = b;
  for (size_t i = 0; i < x.sizes.size(); ++i) {
    if (!indexed[i]) out.push_back(x.sizes[i]);
    else if (adjacent && i == first) out.insert(out.end(), b.begin(), b.end());
  }
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

// index_put: a preserve-format clone of self.
Results index_put(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  const TensorMeta& v = arg(a, ctx, "values");
  if (v.dtype != x.dtype)
    ctx.fail(std::string("index_put requires the source and destination dtypes match, got ") + dtype_short_name(x.dtype) +
             " for the destination and " + dtype_short_name(v.dtype) + " for the source");
  return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, x.sizes, preserve_strides(ctx, x)))};
}

Results index_add(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  const TensorMeta& idx = arg(a, ctx, "index");
  const TensorMeta& src = arg(a, ctx, "source");
  index_dtype(ctx, idx, true);
  if (idx.rank() > 1) ctx.fail("index_add_(): Index is supposed to be a vector");
  wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank());
  if (src.dtype != x.dtype)
    ctx.fail(std::string("index_add_(): self (") + dtype_short_name(x.dtype) + ") and source (" +
             dtype_short_name(src.dtype) + ") must have the same scalar type");
  return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, x.sizes, preserve_strides(ctx, x)))};
}

Results nonzero(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  std::optional<int64_t> n = ctx.shapes.simplify(x.numel()).as_int();
  SymExpr u = ctx.create_unbacked(sym::ValueRange{0, n.value_or(sym::ValueRange::kPosInf)});
  // PyTorch fills a [ndim, n] buffer and returns its transpose: strides [1, n].
  return {ResultSpec::tensor(fresh(ctx, DType::Int64, x.device, {u, SymExpr::integer(x.rank())}, {SymExpr::integer(1), u}))};
}

Results local_scalar_dense(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  SymExpr numel = ctx.shapes.simplify(x.numel());
  if (numel.as_int() != std::optional<int64_t>(1))
    ctx.fail("a Tensor with " + numel.str() + " elements cannot be converted to Scalar");
  if (x.dtype == DType::Bool) return {ResultSpec::scalar(ValueType::Bool)};
  if (is_floating(x.dtype)) return {ResultSpec::scalar(ValueType::Float, ctx.create_unbacked_float())};
  return {ResultSpec::scalar(ValueType::Int, ctx.create_unbacked(sym::ValueRange::all()))};
}

// The asserts on scalars return nothing; what they check runs with the program.
Results no_results(const BoundArgs&, MetaContext&) { return {}; }

Results sym_size(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  int64_t d = wrap_dim(ctx, const_int(ctx, a.scalar("dim"), "dim"), x.rank());
  if (x.rank() == 0) ctx.fail("dimension specified as " + std::to_string(d) + " but tensor has no dimensions");
  bool stride = a.schema().name == "sym_stride";
  return {ResultSpec::scalar(ValueType::Int, (stride ? x.strides : x.sizes)[static_cast<size_t>(d)])};
}

Results sym_numel(const BoundArgs& a, MetaContext& ctx) {
  return {ResultSpec::scalar(ValueType::Int, ctx.shapes.simplify(arg(a, ctx, "self").numel()))};
}

Results sym_storage_offset(const BoundArgs& a, MetaContext& ctx) {
  return {ResultSpec::scalar(ValueType::Int, arg(a, ctx, "self").offset)};
}

// The value is left unknown unless contiguity is decided without guards.
Results sym_is_contiguous(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = arg(a, ctx, "self");
  MemoryFormat f = a.memory_format("memory_format").value_or(MemoryFormat::Contiguous);
  bool has_symbols = false;
  for (const SymExpr& e : x.sizes) has_symbols = has_symbols || e.has_symbols();
  for (const SymExpr& e : x.strides) has_symbols = has_symbols || e.has_symbols();
  if (has_symbols) return {ResultSpec::scalar(ValueType::Bool)};
  return {ResultSpec::scalar(ValueType::Bool, SymExpr::boolean(is_contiguous_as(ctx, x.sizes, x.strides, f)))};
}

}  // namespace

std::vector<MetaImpl> indexing_meta_impls() {
  return {
      {"aten.index_select.default", index_select}, {"aten.gather.default", gather},
      {"aten.scatter.src", scatter}, {"aten.scatter.value", scatter}, {"aten.scatter_add.default", scatter},
      {"aten.scatter_reduce.two", scatter}, {"aten.index.Tensor", index}, {"aten.index_put.default", index_put},
      {"aten.nonzero.default", nonzero}, {"aten._local_scalar_dense.default", local_scalar_dense},
      {"aten.index_add.default", index_add},
      {"aten._assert_scalar.default", no_results}, {"aten.sym_constrain_range.default", no_results},
      {"aten.sym_constrain_range_for_size.default", no_results},
      {"aten.sym_size.int", sym_size}, {"aten.sym_stride.int", sym_size}, {"aten.sym_numel.default", sym_numel},
      {"aten.sym_storage_offset.default", sym_storage_offset}, {"aten.sym_is_contiguous.default", sym_is_contiguous},
  };
}

}  // namespace toroid::ops
