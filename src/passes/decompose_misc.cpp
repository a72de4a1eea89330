// Decompositions of reduction forms into var.correction / mean.dim, and of zeros/ones into full.
#include "decompositions.h"

namespace toroid::passes {
namespace {

Kwarg kw(const char* name, const Argument& a) { return Kwarg{name, a}; }

// Keeps the kwargs that are not None (None is every one of these optional kwargs' default).
std::vector<Kwarg> given(std::vector<Kwarg> kwargs) {
  std::erase_if(kwargs, [](const Kwarg& k) { return k.value.is_none(); });
  return kwargs;
}

bool var_dim(Rewriter& rw) {
  Value* x = rw.in("self");
  bool unbiased = rw.flag("unbiased", true);
  return rw.commit({rw.call("aten.var.correction", {Argument(x), rw.args().get("dim")},
                            {kw("correction", Argument::integer(unbiased ? 1 : 0)), kw("keepdim", rw.args().get("keepdim"))})});
}

bool var_mean(Rewriter& rw) {
  Value* x = rw.in("self");
  const Argument& dim = rw.args().get("dim");
  const Argument& keepdim = rw.args().get("keepdim");
  Value* var = rw.call("aten.var.correction", {Argument(x), dim},
                       {kw("correction", rw.args().get("correction")), kw("keepdim", keepdim)});
  Value* mean = rw.call("aten.mean.dim", {Argument(x), dim, keepdim});
  return rw.commit({var, mean});
}

bool mean_default(Rewriter& rw) {
  Value* x = rw.in("self");
  Argument::List dims;
  for (int64_t i = 0; i < x->meta().rank(); ++i) dims.push_back(Argument::integer(i));
  return rw.commit({rw.call("aten.mean.dim", {Argument(x), Argument(std::move(dims)), Argument::boolean(false)},
                            given({kw("dtype", rw.args().get("dtype"))}))});
}

// zeros/ones(size, dtype, ...) = full(size, 0/1, dtype=<the result's dtype>, ...): full would
// infer int64 from the fill value where zeros uses the default dtype.
bool fill(Rewriter& rw, double value) {
  const TensorMeta& m = rw.node()->result()->meta();
  return rw.commit({rw.call("aten.full.default", {rw.args().get("size"), Argument::floating(value)},
                            given({kw("dtype", Argument(m.dtype)), kw("layout", rw.args().get("layout")),
                                   kw("device", Argument(m.device)), kw("pin_memory", rw.args().get("pin_memory"))}))});
}

bool fill_like(Rewriter& rw, double value) {
  Value* x = rw.in("self");
  return rw.commit({rw.call("aten.full_like.default", {Argument(x), Argument::floating(value)},
                            given({kw("dtype", rw.args().get("dtype")), kw("layout", rw.args().get("layout")),
                                   kw("device", rw.args().get("device")), kw("pin_memory", rw.args().get("pin_memory")),
                                   kw("memory_format", rw.args().get("memory_format"))}))});
}

// A cast keeping the layout, as _to_copy without a memory format; a new tensor even when the
// dtype is already right (a clone), never the input itself.
bool convert_element_type(Rewriter& rw) {
  Value* x = rw.in("a");
  DType d = rw.node()->result()->meta().dtype;
  return rw.commit({x->meta().dtype == d ? rw.call("aten.clone.default", {Argument(x)}, {}) : rw.cast(x, d)});
}

// x[mask] with a bool (or uint8) mask over x's leading dims: the mask's nonzero positions, one
// index per masked dim. The count keeps the graph's unbacked symbol for the result's rows.
bool index_with_mask(Rewriter& rw) {
  std::vector<Value*> list = rw.args().tensor_list("indices");
  if (list.size() != 1 || !list[0]) return false;
  DType t = list[0]->meta().dtype;
  if (t != DType::Bool && t != DType::UInt8) return false;
  Value* x = rw.in("self");
  Value* mask = rw.map(list[0]);
  size_t k = mask->meta().sizes.size();
  if (k == 0 || k > x->meta().sizes.size()) return false;
  SymExpr rows = rw.node()->result()->meta().sizes.at(0);
  Value* nz = rw.call("aten.nonzero.default", {Argument(mask)});
  nz->meta().sizes[0] = rows;
  nz->meta().strides = {SymExpr::integer(1), rows};
  Argument::List idx;
  for (size_t d = 0; d < k; ++d)
    idx.push_back(Argument(rw.call("aten.select.int", {Argument(nz), Argument::integer(1),
                                                        Argument::integer(static_cast<int64_t>(d))})));
  return rw.commit({rw.call("aten.index.Tensor", {Argument(x), Argument(std::move(idx))})});
}

}  // namespace

std::vector<Decomposition> misc_decompositions() {
  return {
      {"aten.var.dim", var_dim},
      {"aten.var_mean.correction", var_mean},
      {"aten.mean.default", mean_default},
      {"aten.zeros.default", [](Rewriter& rw) { return fill(rw, 0.0); }},
      {"aten.ones.default", [](Rewriter& rw) { return fill(rw, 1.0); }},
      {"aten.zeros_like.default", [](Rewriter& rw) { return fill_like(rw, 0.0); }},
      {"aten.ones_like.default", [](Rewriter& rw) { return fill_like(rw, 1.0); }},
      {"prims.convert_element_type.default", convert_element_type},
      {"aten.index.Tensor", index_with_mask},
  };
}

}  // namespace toroid::passes
