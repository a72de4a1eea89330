#include "toroid/loop/lower.h"

#include <algorithm>
#include <unordered_set>

#include "lowering.h"
#include "toroid/graph/inputs.h"
#include "toroid/graph/op_info.h"
#include "toroid/ops/registry.h"
#include "toroid/ops/user_kernel.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::loop {

namespace {

// A pointwise value read by several consumers is recomputed in each (inlined) unless its body
// is large; as Inductor's realize_opcount_threshold / realize_reads_threshold.
constexpr int kRealizeOpCount = 30;
constexpr size_t kRealizeReads = 4;
// ... or unless its readers together would recompute more than this many ops per element: an
// attention mask built once and read by every layer's softmax (12 x 13 ops in GPT-2, each
// unrolled into the row kernel's passes: a 245 KB cubin that took NVRTC 3.3 s) is stored.
constexpr int kRealizeUsesTimesOps = 120;
// A value read once is inlined into its reader, unless its body has grown past this many ops:
// then it is stored, which bounds every inlined body (so lowering a chain of n ops is linear,
// not quadratic) and every C++ statement the kernels hold.
constexpr int kRealizeSingleUseOpCount = 200;

// Whether `owner`, the buffer holding value `m`, holds it at offset 0 in `want`'s dtype, sizes and
// strides (so that memory can stand for a value laid out as `want`).
bool holds_as(const Buffer& owner, const TensorMeta& m, const TensorMeta& want, ShapeEnv& env) {
  auto same = [&](const std::vector<SymExpr>& a, const std::vector<SymExpr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (env.simplify(a[i]) != env.simplify(b[i])) return false;
    return true;
  };
  SymExpr zero = SymExpr::integer(0);
  return m.dtype == want.dtype && env.simplify(m.offset) == zero && env.simplify(owner.offset) == zero &&
         same(m.sizes, want.sizes) && same(m.strides, want.strides) && same(owner.sizes, want.sizes) &&
         same(owner.strides, want.strides);
}

const LowerRule* find_rule(const std::string& op) {
  static const std::unordered_map<std::string, const LowerRule*> table = [] {
    std::unordered_map<std::string, const LowerRule*> t;
    for (auto rules : {pointwise_rules(), reduction_rules(), view_rules(), misc_rules(), indexing_rules(), pool_rules()})
      for (const LowerRule& r : rules) t.emplace(r.op, &r);
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}


// Complex values run through the reference kernels (code generation has no complex math).
bool involves_complex(const Node* n) {
  for (const Value* v : n->inputs())
    if (v->is_tensor() && toroid::is_complex(v->meta().dtype)) return true;
  for (const Value* v : n->results())
    if (v->is_tensor() && toroid::is_complex(v->meta().dtype)) return true;
  return false;
}

bool has_tensor_result(const Node* n) {
  for (const Value* v : n->results())
    if (v->is_tensor()) return true;
  return false;
}

}  // namespace

Lowering::Lowering(const Graph& g, LoopProgram& p, const LowerOptions& o) : graph(g), prog(p), options(o) {
  for (const Value* v : graph.output_values())
    if (v->is_tensor()) output_storages_.insert(v->meta().storage);
}

void Lowering::fail(const Node* n, const std::string& message) const {
  user_error("cannot compile " + n->describe() + ": " + message, n->loc());
}

void Lowering::note_reference_kernel(const Node* n, const std::string& why) const {
  std::string where = options.target.device_name();
  TOROID_LOG("fallback", n->target() + " (" + describe_value(n->result(0)) + ") runs its reference kernel on " + where +
                             ": " + why);
  if (!options.reference_kernels)
    fail(n, "no compiled kernel or library call on " + where + " (" + why + "), and reference kernels are off");
}

Index Lowering::vars(size_t rank) {
  Index out;
  for (size_t k = 0; k < rank; ++k) out.push_back(index_var(k));
  return out;
}

Index Lowering::broadcast_index(const TensorMeta& m, const std::vector<SymExpr>& out, std::span<const SymExpr> idx) {
  Index r;
  size_t lead = out.size() - m.sizes.size();
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    SymExpr s = m.sizes[d];
    bool broadcast = s.as_int() == std::optional<int64_t>(1) && out[lead + d].as_int() != std::optional<int64_t>(1);
    r.push_back(broadcast ? SymExpr::integer(0) : idx[lead + d]);
  }
  return r;
}

std::unique_ptr<Buffer> Lowering::new_buffer(const Value* v, BufferKind kind) {
  auto b = std::make_unique<Buffer>();
  b->id = next_id_++;
  b->name = (kind == BufferKind::Input ? "arg" : "buf") + std::to_string(b->id);
  b->kind = kind;
  const TensorMeta& m = v->meta();
  b->dtype = m.dtype;
  b->device = m.device;
  b->sizes = m.sizes;
  b->strides = m.strides;
  b->offset = m.offset;
  // Extent: offset + sum((size-1)*stride) + 1, or 0 when a size is the constant 0. A symbolic
  // size may still be 0 at run time: Max(size-1, 0) keeps that extent from going negative (one
  // element too many is harmless).
  bool empty = std::any_of(m.sizes.begin(), m.sizes.end(),
                           [](SymExpr s) { return s.is_constant() && s.int_value() == 0; });
  SymExpr extent = sym::add(m.offset, SymExpr::integer(1));
  for (size_t d = 0; d < m.sizes.size(); ++d)
    extent = extent + sym::max(m.sizes[d] - 1, SymExpr::integer(0)) * m.strides[d];
  b->storage_numel = empty ? SymExpr::integer(0) : graph.shape_env().simplify(extent);
  b->origins.push_back(v->node());
  return b;
}

void Lowering::note_inlined(const Buffer* virtual_buffer) {
  for (const Node* n : virtual_buffer->origins)
    if (std::find(inlined_.begin(), inlined_.end(), n) == inlined_.end()) inlined_.push_back(n);
}

void Lowering::take_inlined(Buffer& b) {
  for (const Node* n : inlined_)
    if (std::find(b.origins.begin(), b.origins.end(), n) == b.origins.end()) b.origins.push_back(n);
  inlined_.clear();
}

std::unique_ptr<Buffer> Lowering::new_step(const Node* n, BufferKind kind) {
  auto b = std::make_unique<Buffer>();
  b->id = next_id_++;
  b->name = "step" + std::to_string(b->id);
  b->kind = kind;
  b->node = n;
  b->storage_numel = SymExpr::integer(0);
  b->origins.push_back(n);
  return b;
}

Buffer* Lowering::define_buffer(const Value* v, std::unique_ptr<Buffer> b) {
  take_inlined(*b);
  Buffer* raw = prog.add(std::move(b));
  prog.owners[v->meta().storage] = raw;
  boxes_[v] = Box{};
  return raw;
}

void Lowering::define_view(const Value* v, const Value* base, IndexFn fn) {
  if (!fn) realize(base);
  boxes_[v] = Box{nullptr, base, std::move(fn)};
}

bool Lowering::should_realize(const Value* v, Expr body) const {
  if (v->meta().storage == nullptr) return true;
  size_t users = v->users().size();
  if (output_storages_.count(v->meta().storage)) return true;
  if (users <= 1) return op_count(body) > kRealizeSingleUseOpCount;
  std::unordered_set<Buffer*> reads;
  for (Expr l : loads(body)) reads.insert(l.buffer());
  int ops = op_count(body);
  return ops > kRealizeOpCount || reads.size() > kRealizeReads || static_cast<int>(users) * ops > kRealizeUsesTimesOps;
}

void Lowering::define_pointwise(const Value* v, Expr body) {
  std::unique_ptr<Buffer> b = new_buffer(v, BufferKind::Pointwise);
  b->body = body;
  take_inlined(*b);
  if (should_realize(v, body)) {
    define_buffer(v, std::move(b));
    return;
  }
  boxes_[v] = Box{b.get(), nullptr, {}};
  Buffer* raw = b.get();
  virtuals_.emplace(raw, std::move(b));
}

Buffer* Lowering::realize(const Value* v) {
  auto owner = prog.owners.find(v->meta().storage);
  if (owner != prog.owners.end()) return owner->second;
  auto it = boxes_.find(v);
  TOROID_CHECK(it != boxes_.end(), "realize of an unlowered value " + describe_value(v));
  if (it->second.base) return realize(it->second.base);
  Buffer* b = it->second.virtual_buffer;
  TOROID_CHECK(b != nullptr, "value without a buffer: " + describe_value(v));
  auto vi = virtuals_.find(b);
  TOROID_CHECK(vi != virtuals_.end(), "virtual buffer not found for " + describe_value(v));
  Buffer* raw = prog.add(std::move(vi->second));
  virtuals_.erase(vi);
  prog.owners[v->meta().storage] = raw;
  it->second.virtual_buffer = nullptr;
  return raw;
}

Expr Lowering::load(const Value* v, std::span<const SymExpr> idx) {
  TOROID_CHECK(idx.size() == v->meta().sizes.size(), "index rank of " + describe_value(v));
  auto owner = prog.owners.find(v->meta().storage);
  if (owner != prog.owners.end()) {
    const TensorMeta& m = v->meta();
    return loop::load(owner->second, graph.shape_env().simplify(position(m.strides, m.offset, idx)));
  }
  auto it = boxes_.find(v);
  TOROID_CHECK(it != boxes_.end(), "load of an unlowered value " + describe_value(v));
  const Box& box = it->second;
  if (box.base) return load(box.base, box.view(idx));
  Buffer* b = box.virtual_buffer;
  TOROID_CHECK(b != nullptr, "value without a buffer: " + describe_value(v));
  bool identity = true;
  for (size_t k = 0; k < idx.size(); ++k) identity = identity && idx[k] == index_var(k);
  note_inlined(b);
  if (identity) return b->body;  // read where it is computed: nothing to rewrite
  ShapeEnv& env = graph.shape_env();
  return substitute(b->body, [&](SymExpr s) -> SymExpr {
    for (size_t k = 0; k < idx.size(); ++k)
      if (s == index_var(k)) return env.simplify(idx[k]);
    return s;
  });
}

void Lowering::fallback(const Node* n, const std::string& why) {
  const ops::OpEntry* op = ops::OpRegistry::global().find(n->target());
  if (op == nullptr || op->kernel == nullptr) fail(n, "no lowering and no reference kernel");
  const Value* r0 = n->num_results() ? n->result(0) : nullptr;
  const LibraryKernel* device_kernel =
      r0 && r0->is_tensor() ? find_library_kernel(n->target(), r0->meta().dtype, options.target.device) : nullptr;
  if (device_kernel && !runs_as_fallback(device_kernel->call)) device_kernel = nullptr;  // an extern call's op
  if (!device_kernel) {
    note_reference_kernel(n, why);
  }
  // The op's exact reference kernel, on realized operands.
  for (const Value* in : n->inputs())
    if (in->is_tensor()) realize(in);
  bool first = true;
  for (const Value* r : n->results()) {
    if (!r->is_tensor()) fail(n, "scalar results (" + describe_value(r) + ") are not supported by the compiler yet");
    std::unique_ptr<Buffer> b = new_buffer(r, BufferKind::Fallback);
    b->node = n;
    b->result_index = r->index();
    b->fallback_reason = why;
    if (device_kernel) {
      b->library = device_kernel->call;
      b->on_device = true;
      // Its atomics' order varies the result: the sorted form instead, when asked.
      b->deterministic = options.deterministic && options.target.is_cuda() && order_varies(device_kernel->call);
    }
    if (first) TOROID_LOG("lowering", "fallback " + n->target() + " for " + describe_value(r));
    if (first && b->on_device && updates_first_operand(b->library)) {
      Buffer* memory = updatable_operand(n, r);
      if (memory && graph.shape_env().simplify(memory->storage_numel) == graph.shape_env().simplify(b->storage_numel)) {
        TOROID_LOG("lowering", n->target() + " updates " + memory->name + " in place");
        b->storage = memory;
      }
    }
    first = false;
    define_buffer(r, std::move(b));
  }
}

Buffer* Lowering::updatable_operand(const Node* n, const Value* r) {
  if (n->args().empty() || !n->args()[0].is_value()) return nullptr;
  const Value* self = n->args()[0].value();
  if (!self->is_tensor() || self->users().size() != 1 || self->users()[0] != n) return nullptr;
  auto owner = prog.owners.find(self->meta().storage);
  if (owner == prog.owners.end()) return nullptr;
  Buffer* memory = owner->second;
  bool intermediate = memory->kind == BufferKind::Pointwise || memory->kind == BufferKind::Reduction ||
                      memory->kind == BufferKind::Extern || memory->kind == BufferKind::Fallback;
  const TensorMeta& m = self->meta();
  if (!intermediate || memory->storage != memory || !holds_as(*memory, m, r->meta(), graph.shape_env()) ||
      graph.shape_env().simplify(r->meta().offset) != SymExpr::integer(0))
    return nullptr;
  // No other value views that memory (a reader the scheduler could place after the update).
  for (const Node* x : graph.nodes())
    for (const Value* v : x->results())
      if (v != self && v->is_tensor() && v->has_meta() && v->meta().storage == m.storage) return nullptr;
  return memory;
}

namespace {

// A float scalar expression (1 - f0, f0*s0, f0/f1) computed in the kernel, in f64, from the
// kernel's symbol arguments: its symbols' values change without new code.
Expr float_scalar(SymExpr s) {
  auto fold = [](std::span<const SymExpr> args, Op op) {
    Expr acc = float_scalar(args[0]);
    for (size_t i = 1; i < args.size(); ++i) acc = binary(op, acc, float_scalar(args[i]));
    return acc;
  };
  switch (s.kind()) {
    case sym::Kind::FloatConst: return constant(s.float_value(), DType::Float64);
    case sym::Kind::IntConst: return constant(static_cast<double>(s.int_value()), DType::Float64);
    case sym::Kind::Symbol: return s.is_float() ? float_symbol_value(s) : cast(index_value(s), DType::Float64);
    case sym::Kind::Add: return fold(s.operands(), Op::Add);
    case sym::Kind::Mul: return fold(s.operands(), Op::Mul);
    case sym::Kind::Min: return fold(s.operands(), Op::Minimum);
    case sym::Kind::Max: return fold(s.operands(), Op::Maximum);
    case sym::Kind::TrueDiv: return binary(Op::Div, float_scalar(s.operands()[0]), float_scalar(s.operands()[1]));
    case sym::Kind::ToFloat: return cast(index_value(s.operands()[0]), DType::Float64);
    case sym::Kind::Pow:
      return binary(Op::Pow, float_scalar(s.operands()[0]), constant(static_cast<double>(s.exponent()), DType::Float64));
    default:
      if (s.is_int()) return cast(index_value(s), DType::Float64);
      user_error("symbolic float scalar " + s.str() + " is not supported in compiled code yet");
  }
}

}  // namespace

Expr scalar_expr(SymExpr s, DType dtype) {
  if (s.is_constant()) {
    if (s.kind() == sym::Kind::FloatConst) return constant(s.float_value(), dtype);
    if (s.kind() == sym::Kind::BoolConst) return int_constant(s.bool_value() ? 1 : 0, dtype);
    return is_floating(dtype) ? constant(static_cast<double>(s.int_value()), dtype) : int_constant(s.int_value(), dtype);
  }
  if (s.is_int()) return cast(index_value(s), dtype);
  if (s.is_float()) return cast(float_scalar(s), dtype);
  user_error("symbolic bool scalar " + s.str() + " is not supported in compiled code yet");
}

DType compute_dtype(DType d) { return d == DType::BFloat16 || d == DType::Float16 ? DType::Float32 : d; }

Expr operand_at(Lowering& L, const Node* n, const ops::BoundArgs& args, std::string_view name,
                std::span<const SymExpr> idx, DType dtype) {
  const Argument& a = args.get(name);
  if (a.is_value() && a.value()->is_tensor()) {
    const Value* v = a.value();
    const std::vector<SymExpr>& out = n->result(0)->meta().sizes;
    return cast(L.load(v, Lowering::broadcast_index(v->meta(), out, idx)), dtype);
  }
  SymExpr s = args.scalar(name);
  if (!s) L.fail(n, "argument '" + std::string(name) + "' has no known value");
  return scalar_expr(s, dtype);
}

namespace {

// A call that results in views only (its results share an input's storage, and it mutates
// nothing): the generic way is storage positions from the metas.
const Value* view_base(const Node* n) {
  if (op_info().mutated_args(*n).size()) return nullptr;
  const Value* base = nullptr;
  for (const Value* r : n->results()) {
    if (!r->is_tensor()) return nullptr;
    const Value* found = nullptr;
    for (const Value* in : n->inputs())
      if (in->is_tensor() && in->meta().storage == r->meta().storage) found = in;
    if (!found || (base && base != found)) return nullptr;
    base = found;
  }
  return base;
}

// The trailing copy_ nodes write graph inputs after every other computation, and each source
// is computed from the inputs' old values. A source left inline in its copy's kernel would read
// an input an earlier copy has written already (or its own input at another element, which the
// copy's kernel overwrites meanwhile): such sources are computed into buffers of their own
// first, before any copy writes. (An input a later copy writes is read before that write: the
// scheduler keeps a copy after every kernel that reads its input, sched/schedule.cpp.)
void realize_epilogue_sources(Lowering& L, const Node* first) {
  std::vector<const Node*> copies;
  for (const Node* n = first; n; n = n->next())
    if (n->is_call() && n->target() == "aten.copy_.default") copies.push_back(n);
  std::unordered_set<const Buffer*> written;  // by the copies before this one, and by this one
  ShapeEnv& env = L.graph.shape_env();
  for (const Node* c : copies) {
    const Value* dst = c->args().at(0).value();
    const Value* src = c->args().at(1).value();
    Buffer* own = L.realize(dst);
    written.insert(own);
    Index idx = Lowering::vars(dst->meta().sizes.size());
    Expr body = L.load(src, Lowering::broadcast_index(src->meta(), dst->meta().sizes, idx));
    SymExpr stored = env.simplify(position(own->strides, own->offset, idx));
    bool stale = false;
    for (Expr l : loads(body))
      if (written.count(l.buffer()) && (l.buffer() != own || l.op() == Op::IndirectLoad || env.simplify(l.index()) != stored)) {
        stale = true;
        TOROID_LOG("fusion", "the copy into " + own->name + " reads " + l.buffer()->name + " at " + env.simplify(l.index()).str() +
                                 " after a copy writes it: its source is computed first");
      }
    if (stale) L.realize(src);
  }
}

void lower_copy_epilogue(Lowering& L, const Node* n) {
  // copy_(dst, src) into a graph input: a pointwise buffer that writes dst's storage.
  const Value* dst = n->args().at(0).value();
  const Value* src = n->args().at(1).value();
  Buffer* owner = L.realize(dst);
  if (owner->kind != BufferKind::Input)
    L.fail(n, "copy_ into a value that is not a graph input is not supported by the compiler");
  std::unique_ptr<Buffer> b = L.new_buffer(n->result(0), BufferKind::Pointwise);
  Index idx = Lowering::vars(dst->meta().sizes.size());
  b->body = cast(L.load(src, Lowering::broadcast_index(src->meta(), dst->meta().sizes, idx)), dst->meta().dtype);
  b->storage = owner;
  L.prog.add(std::move(b));
  L.define_view(n->result(0), dst, {});
}

// Subgraph output `v` in a buffer of its own laid out as `like`: the buffer holding it when it
// owns its memory in that layout and holds no earlier output, else a copy. `shown` is the value
// the output plan names (v, or `like` for a copy).
Buffer* own_output(Lowering& L, const Value* v, const Value* like, std::unordered_set<const Buffer*>& taken,
                   const Value*& shown) {
  Buffer* owner = L.realize(v);
  const TensorMeta& m = v->meta();
  const TensorMeta& want = like->meta();
  // A user kernel's result is in the memory of its clone (or of the tensor it wrote): that memory.
  Buffer* memory = owner->kind == BufferKind::UserKernel ? owner->storage : owner;
  bool in_place = memory->storage == memory && memory->kind != BufferKind::Input && memory->kind != BufferKind::Constant &&
                  !taken.count(memory) && holds_as(*owner, m, want, L.graph.shape_env());
  if (in_place) {
    taken.insert(memory);
    return owner;
  }
  std::unique_ptr<Buffer> b = L.new_buffer(like, BufferKind::Pointwise);
  b->body = cast(L.load(v, Lowering::vars(want.sizes.size())), want.dtype);
  b->origins = {v->node()};
  Buffer* copy = L.define_buffer(like, std::move(b));
  taken.insert(copy);
  shown = like;
  return copy;
}

}  // namespace

bool has_lowering(const std::string& op) {
  if (find_rule(op)) return true;
  if (is_assert(op) || op == "aten._local_scalar_dense.default") return true;  // host steps
  if (op == "aten.copy_.default") return true;  // as a trailing epilogue into a graph input
  const ops::OpEntry* e = ops::OpRegistry::global().find(op);
  if (!e || e->schema.is_mutable() || e->schema.returns.empty()) return false;
  // A view: every result aliases an argument (Tensor(a) in, Tensor(a) out).
  for (const ops::SchemaArgument& r : e->schema.returns) {
    if (r.type.alias_set.empty()) return false;
    bool found = false;
    for (const ops::SchemaArgument& a : e->schema.arguments) found = found || a.type.alias_set == r.type.alias_set;
    if (!found) return false;
  }
  return true;
}

std::unique_ptr<LoopProgram> lower(const Graph& g, const LowerOptions& options) {
  auto prog = std::make_unique<LoopProgram>();
  prog->graph = &g;
  prog->target = options.target;
  Lowering L(g, *prog, options);
  std::vector<const Value*> inputs = graph_inputs(g);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = inputs[i];
    if (!v->is_tensor()) {
      prog->inputs.push_back(nullptr);
      continue;
    }
    std::unique_ptr<Buffer> b = L.new_buffer(v, BufferKind::Input);
    b->input_index = static_cast<int>(i);
    b->donated = v->node()->donated();
    prog->inputs.push_back(L.define_buffer(v, std::move(b)));
  }
  bool epilogue_sources_realized = false;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Constant) {
      if (!n->result(0)->is_tensor()) continue;  // a scalar constant is used through its value
      std::unique_ptr<Buffer> b = L.new_buffer(n->result(0), BufferKind::Constant);
      b->constant = n;
      L.define_buffer(n->result(0), std::move(b));
      continue;
    }
    if (n->kind() != NodeKind::Call) continue;
    if (!n->subgraphs().empty()) {
      lower_control(L, n);
      continue;
    }
    if (is_assert(n->target())) {
      lower_assert(L, n);
      continue;
    }
    if (n->target() == "aten._local_scalar_dense.default") {
      lower_scalar_read(L, n);
      continue;
    }
    if (n->target() == ops::kUserKernelMutation || n->target() == ops::kUserKernelFunctional) {
      lower_user_kernel(L, n);
      continue;
    }
    // A dead call without tensor results is dropped, unless it has an effect to keep.
    if (!has_tensor_result(n) && !n->has_users() && !op_info().has_side_effects(*n)) continue;
    const ops::OpEntry* op = ops::OpRegistry::global().find(n->target());
    if (op == nullptr) L.fail(n, "unknown operator");
    ops::BoundArgs args(op->schema, n->args(), n->kwargs());
    if (n->target() == "aten.copy_.default") {
      if (!epilogue_sources_realized) realize_epilogue_sources(L, n);
      epilogue_sources_realized = true;
      lower_copy_epilogue(L, n);
      continue;
    }
    const LowerRule* rule = involves_complex(n) ? nullptr : find_rule(n->target());
    if (rule) {
      L.begin_call();
      try {
        rule->fn(L, n, args);
      } catch (const UserError& e) {
        if (e.loc().known()) throw;
        L.fail(n, e.message());
      }
      continue;
    }
    if (const Value* base = view_base(n)) {
      for (const Value* r : n->results()) L.define_view(r, base, {});
      continue;
    }
    if (!op_info().mutated_args(*n).empty())
      L.fail(n, "in-place operators other than a trailing copy_ are not supported by the compiler yet");
    L.fallback(n);
  }
  if (const Node* out = g.output_node()) {
    std::unordered_set<const Buffer*> taken;  // buffers holding an earlier subgraph output
    std::function<void(const Argument&)> add = [&](const Argument& a) {
      size_t position = prog->outputs.size();
      if (a.is_list()) {
        for (const Argument& e : a.list()) add(e);
      } else if (a.is_value() && a.value()->is_tensor() && position < options.output_layouts.size() &&
                 options.output_layouts[position]) {
        const Value* shown = a.value();
        Buffer* b = own_output(L, a.value(), options.output_layouts[position], taken, shown);
        prog->outputs.push_back(OutputRef{shown, b, SymExpr()});
      } else if (a.is_value() && a.value()->is_tensor()) {
        prog->outputs.push_back(OutputRef{a.value(), L.realize(a.value()), SymExpr()});
      } else if (a.is_value()) {
        OutputRef r{nullptr, nullptr, a.value()->scalar_value()};
        if (r.scalar.is_null()) {  // a scalar input known only at run time: returned as given
          auto it = std::find(inputs.begin(), inputs.end(), a.value());
          if (it != inputs.end()) r.input_index = static_cast<int>(it - inputs.begin());
        }
        prog->outputs.push_back(r);
      } else {
        prog->outputs.push_back(OutputRef{nullptr, nullptr, a.is_scalar() ? a.scalar() : SymExpr()});
      }
    };
    for (const Argument& a : out->args()) add(a);
  }
  if (options.verify_each) verify_program(*prog);
  simplify_indices(*prog);
  if (options.verify_each) verify_program(*prog);
  if (options.split_reductions) {
    split_reductions(*prog, split_options_for(options));
    if (options.verify_each) verify_program(*prog);
  }
  return prog;
}

}  // namespace toroid::loop
