// Lowerings of creation ops (pointwise constants and ramps), concatenation and constant
// padding (pointwise with clamped reads), and the library calls (Extern: mm, bmm, addmm through
// BLAS, convolutions and their backward through oneDNN).
#include "lowering.h"

namespace toroid::loop {
namespace {

using ops::BoundArgs;

void fill_with(Lowering& L, const Node* n, SymExpr value) {
  const Value* out = n->result(0);
  DType d = out->meta().dtype;
  L.define_pointwise(out, cast(scalar_expr(value, compute_dtype(d)), d));
}

void full(Lowering& L, const Node* n, const BoundArgs& a) { fill_with(L, n, a.scalar("fill_value")); }
void fill_scalar(Lowering& L, const Node* n, const BoundArgs& a) { fill_with(L, n, a.scalar("value")); }
void scalar_tensor(Lowering& L, const Node* n, const BoundArgs& a) { fill_with(L, n, a.scalar("s")); }
void zeros(Lowering& L, const Node* n, const BoundArgs&) { fill_with(L, n, SymExpr::integer(0)); }
void ones(Lowering& L, const Node* n, const BoundArgs&) { fill_with(L, n, SymExpr::integer(1)); }

void arange(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  DType d = out->meta().dtype;
  DType cd = is_floating(d) ? DType::Float64 : DType::Int64;
  Expr i = cast(index_value(index_var(0)), cd);
  Expr v = binary(Op::Add, scalar_expr(a.scalar("start"), cd), binary(Op::Mul, i, scalar_expr(a.scalar("step"), cd)));
  L.define_pointwise(out, cast(v, d));
}

// `in` at idx with dim d shifted by -lo, the read clamped into range: cat selects among such
// reads, and the branch it discards must not read outside its input.
Expr clamped_shift_load(Lowering& L, const Value* in, std::span<const SymExpr> idx, size_t d, SymExpr lo, DType cd) {
  Index src(idx.begin(), idx.end());
  src[d] = sym::max(sym::min(idx[d] - lo, in->meta().sizes[d] - 1), SymExpr::integer(0));
  return cast(L.load(in, src), cd);
}

void cat(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  const TensorMeta& om = out->meta();
  DType cd = compute_dtype(om.dtype);
  std::vector<Value*> parts;
  for (Value* v : a.tensor_list("tensors"))
    if (v && !(v->meta().rank() == 1 && v->meta().sizes[0].as_int() == std::optional<int64_t>(0) && om.rank() != 1))
      parts.push_back(v);  // legacy empty 1-d tensors take no part
  if (parts.empty()) L.fail(n, "cat of no tensors");
  std::optional<int64_t> dim = a.scalar("dim").as_int();
  if (!dim) L.fail(n, "symbolic cat dim");
  size_t d = static_cast<size_t>(*dim < 0 ? *dim + om.rank() : *dim);
  // A part with no rows along d takes no part either: its (clamped) read would still be made,
  // from memory that does not exist (a GPU kernel evaluates both sides of the select).
  std::vector<Value*> nonempty;
  for (Value* v : parts)
    if (v->meta().sizes[d].as_int() != std::optional<int64_t>(0)) nonempty.push_back(v);
  if (!nonempty.empty()) parts = nonempty;
  Index idx = Lowering::vars(om.sizes.size());
  // Last part first: where(i < end_k, part_k, rest).
  std::vector<SymExpr> starts;
  SymExpr at = SymExpr::integer(0);
  for (Value* v : parts) {
    starts.push_back(at);
    at = at + v->meta().sizes[d];
  }
  Expr body;
  for (size_t k = parts.size(); k-- > 0;) {
    Expr value = clamped_shift_load(L, parts[k], idx, d, starts[k], cd);
    if (!body) {
      body = value;
      continue;
    }
    Expr before_end = binary(Op::Lt, index_value(idx[d]), cast(index_value(starts[k] + parts[k]->meta().sizes[d]), DType::Int64));
    body = where(before_end, value, body);
  }
  L.define_pointwise(out, cast(body, om.dtype));
}

void constant_pad(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* in = a.tensor("self");
  const Value* out = n->result(0);
  const TensorMeta& om = out->meta();
  DType cd = compute_dtype(om.dtype);
  std::vector<SymExpr> pad = a.int_list("pad");
  Expr fill = scalar_expr(a.scalar("value"), cd);
  Index idx = Lowering::vars(om.sizes.size());
  // pad lists (left, right) pairs from the last dim backwards. Negative pads crop.
  Index src(idx.begin(), idx.end());
  Expr inside = int_constant(1, DType::Bool);
  for (size_t p = 0; p + 1 < pad.size() && p / 2 < om.sizes.size(); p += 2) {
    size_t d = om.sizes.size() - 1 - p / 2;
    SymExpr j = idx[d] - pad[p];
    SymExpr size = in->meta().sizes[d];
    src[d] = sym::max(sym::min(j, size - 1), SymExpr::integer(0));
    Expr jv = index_value(j);
    inside = binary(Op::LogicalAnd, inside,
                    binary(Op::LogicalAnd, binary(Op::Ge, jv, int_constant(0, DType::Int64)),
                           binary(Op::Lt, jv, cast(index_value(size), DType::Int64))));
  }
  Expr value = cast(L.load(in, src), cd);
  L.define_pointwise(out, cast(where(inside, value, fill), om.dtype));
}

// A library call (loop/library.h) where the table has one for the dtype and device, else the
// op's reference kernel.
std::unique_ptr<Buffer> library_buffer(Lowering& L, const Node* n, const LibraryKernel* kernel,
                                       const std::string& why_not) {
  const Value* out = n->result(0);
  if (!kernel) L.note_reference_kernel(n, why_not);
  std::unique_ptr<Buffer> b = L.new_buffer(out, kernel ? BufferKind::Extern : BufferKind::Fallback);
  b->node = n;
  if (kernel) b->library = kernel->call;
  for (const Value* in : n->inputs())
    if (in->is_tensor()) b->extern_inputs.push_back(L.realize(in));
  return b;
}

Device target_device(const Lowering& L) { return L.options.target.device; }

// mm, bmm, addmm and _addmm_activation (addmm then relu or tanh-gelu, cuBLASLt's epilogues).
void matmul_extern(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  DType d = out->meta().dtype;
  const LibraryKernel* kernel = find_library_kernel(n->target(), d, target_device(L));
  Epilogue epilogue = Epilogue::None;
  if (n->target() == "aten._addmm_activation.default") {
    SymExpr gelu = a.scalar("use_gelu");
    if (!gelu.is_constant()) kernel = nullptr;  // the library needs the epilogue when it plans
    else epilogue = gelu.bool_value() ? Epilogue::Gelu : Epilogue::Relu;
  }
  std::unique_ptr<Buffer> b = library_buffer(L, n, kernel, "no matmul library for " + std::string(dtype_short_name(d)));
  if (kernel) {
    if (kernel->call == LibraryCall::Addmm) {
      b->library_operands = {a.tensor("self"), a.tensor("mat1"), a.tensor("mat2")};
      b->library_params.beta = a.scalar("beta");
      b->library_params.alpha = a.scalar("alpha");
      b->library_params.epilogue = epilogue;
    } else {
      b->library_operands = {a.tensor("self"), a.tensor("mat2")};
    }
    b->library_params.tf32 = d == DType::Float32 && L.options.target.is_cuda() && L.options.tf32_matmuls;
  }
  L.define_buffer(out, std::move(b));
}

// A convolution's per-dimension list, a single entry repeated to every spatial dimension as
// ATen does; empty when it has another length.
std::vector<SymExpr> spatial_list(std::vector<SymExpr> v, size_t spatial) {
  if (v.size() == 1) v.assign(spatial, v[0]);
  if (v.size() != spatial) v.clear();
  return v;
}

// A convolution's stride, padding, dilation and groups for `rank`-dim operands; empty lists
// where the call's are not per spatial dim (or rank is not 3 to 5): no library takes it.
LibraryParams convolution_params(const BoundArgs& a, size_t rank) {
  LibraryParams p;
  if (rank < 3 || rank > 5) return p;
  p.stride = spatial_list(a.int_list("stride"), rank - 2);
  p.padding = spatial_list(a.int_list("padding"), rank - 2);
  p.dilation = spatial_list(a.int_list("dilation"), rank - 2);
  p.groups = a.scalar("groups");
  if (p.stride.empty() || p.padding.empty() || p.dilation.empty()) p.stride.clear();
  return p;
}

// Why no library takes a convolution call (transposed, or its lists), or empty.
std::string convolution_refusal(const BoundArgs& a, const LibraryParams& p, size_t rank) {
  if (a.scalar("transposed") != SymExpr::boolean(false)) return "transposed convolution";
  if (p.stride.empty()) return "a convolution of rank " + std::to_string(rank) + " (the libraries take 3 to 5)";
  return "";
}

// convolution, not transposed, 1 to 3 spatial dims, where the table has a library for the dtype.
void convolution_extern(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* out = n->result(0);
  DType d = out->meta().dtype;
  size_t rank = out->meta().rank();
  LibraryParams p = convolution_params(a, rank);
  std::string why = convolution_refusal(a, p, rank);
  const LibraryKernel* kernel = why.empty() ? find_library_kernel(n->target(), d, target_device(L)) : nullptr;
  if (why.empty() && !kernel) why = "no convolution library for " + std::string(dtype_short_name(d));
  std::unique_ptr<Buffer> b = library_buffer(L, n, kernel, why);
  if (kernel) {
    b->library_operands = {a.tensor("input"), a.tensor("weight"), a.tensor("bias")};
    p.tf32 = d == DType::Float32 && L.options.target.is_cuda() && L.options.tf32_convolutions;
    b->library_params = std::move(p);
  }
  L.define_buffer(out, std::move(b));
}

// convolution_backward: grad_input and grad_weight as library calls of their own (each reads
// grad_output and one forward operand), grad_bias as a sum of grad_output over all dims but the
// channels; a result output_mask leaves out is an empty tensor. The whole call runs its
// reference kernel where a library lacks the dtype or the layout.
void convolution_backward_extern(Lowering& L, const Node* n, const BoundArgs& a) {
  const Value* grad = a.tensor("grad_output");
  const Value* input = a.tensor("input");
  const Value* weight = a.tensor("weight");
  DType d = grad->meta().dtype;
  size_t rank = input->meta().rank();
  LibraryParams p = convolution_params(a, rank);
  std::string why = convolution_refusal(a, p, rank);
  std::vector<bool> mask;
  for (const Argument& e : a.get("output_mask").list()) mask.push_back(e.scalar() == SymExpr::boolean(true));
  if (mask.size() != 3) L.fail(n, "output_mask must have 3 entries");
  const LibraryKernel* calls[2] = {nullptr, nullptr};
  for (unsigned r = 0; r < 2 && why.empty(); ++r)
    if (mask[r] && !(calls[r] = find_library_kernel(n->target(), d, target_device(L), r)))
      why = "no convolution library for " + std::string(dtype_short_name(d));
  if (why.empty() && mask[2] && n->result(2)->meta().rank() != 1) why = "a bias gradient of rank other than 1";
  if (!why.empty()) return L.fallback(n, why);
  p.tf32 = d == DType::Float32 && L.options.target.is_cuda() && L.options.tf32_convolutions;
  // Each library call keeps the whole op's reference kernel for layouts the library refuses at
  // run time, and that kernel reads every tensor operand, those output_mask leaves unused too.
  for (const Value* v : {grad, input, weight}) L.realize(v);
  for (unsigned r = 0; r < 3; ++r) {
    const Value* out = n->result(r);
    if (!mask[r]) {
      L.define_pointwise(out, cast(scalar_expr(SymExpr::integer(0), compute_dtype(d)), d));
    } else if (r == 2) {
      std::vector<int64_t> dims{0};
      for (int64_t k = 2; k < static_cast<int64_t>(rank); ++k) dims.push_back(k);
      define_sum(L, n, out, grad, dims);
    } else {
      std::unique_ptr<Buffer> b = L.new_buffer(out, BufferKind::Extern);
      b->node = n;
      b->result_index = r;
      b->library = calls[r]->call;
      b->library_operands = {grad, r == 0 ? weight : input};
      for (const Value* v : b->library_operands) b->extern_inputs.push_back(L.realize(v));
      b->library_params = p;
      L.define_buffer(out, std::move(b));
    }
  }
}

constexpr LowerRule kRules[] = {
    {"aten.full.default", full},
    {"aten.full_like.default", full},
    {"aten.fill.Scalar", fill_scalar},
    {"aten.scalar_tensor.default", scalar_tensor},
    {"aten.zeros.default", zeros},
    {"aten.zeros_like.default", zeros},
    {"aten.ones.default", ones},
    {"aten.ones_like.default", ones},
    {"aten.empty.memory_format", zeros},
    {"aten.empty_strided.default", zeros},
    {"aten.arange.start_step", arange},
    {"aten.cat.default", cat},
    {"aten.constant_pad_nd.default", constant_pad},
    {"aten.mm.default", matmul_extern},
    {"aten.bmm.default", matmul_extern},
    {"aten.addmm.default", matmul_extern},
    {"aten._addmm_activation.default", matmul_extern},
    {"aten.convolution.default", convolution_extern},
    {"aten.convolution_backward.default", convolution_backward_extern},
};

}  // namespace

std::span<const LowerRule> misc_rules() { return kRules; }

}  // namespace toroid::loop
