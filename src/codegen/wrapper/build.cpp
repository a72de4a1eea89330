#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/graph/inputs.h"
#include "toroid/graph/text.h"
#include "toroid/ops/registry.h"
#include "toroid/ops/user_kernel.h"
#include "toroid/support/error.h"

namespace toroid::codegen::wrapper {

using loop::Buffer;
using loop::BufferKind;

namespace {

SymExpr nbytes_of(const Buffer* b, const ShapeEnv& env) {
  return env.simplify(b->storage_numel * SymExpr::integer(dtype_size(b->dtype)));
}

std::string origins(const Buffer* b) {
  std::string s;
  for (const Node* n : b->origins)
    s += (s.empty() ? "" : ", ") + (n->is_call() ? n->target() : std::string(node_kind_name(n->kind()))) +
         (n->num_results() ? " " + describe_value(n->result(0)) : "");
  return s;
}

TensorRef layout_ref(const Buffer* storage, const TensorMeta& m) {
  TensorRef r;
  r.slot = storage->id;
  r.name = storage->name;
  r.dtype = m.dtype;
  r.sizes = m.sizes;
  r.strides = m.strides;
  r.offset = m.offset;
  return r;
}

// A value in a realized storage, as a view of that storage's slot.
TensorRef ref_of(const loop::LoopProgram& p, const Value* v) {
  if (!v) return {};
  auto it = p.owners.find(v->meta().storage);
  TOROID_CHECK(it != p.owners.end(), "no buffer holds " + describe_value(v));
  return layout_ref(it->second->storage, v->meta());
}

CallArg call_arg(const loop::LoopProgram& p, const Argument& a) {
  CallArg c;
  switch (a.kind()) {
    case Argument::Kind::None: break;
    case Argument::Kind::Scalar:
      c.kind = CallArg::Kind::Scalar;
      c.scalar = a.scalar();
      break;
    case Argument::Kind::String: c.constant = ops::RtValue::string(a.str()); break;
    case Argument::Kind::DType: c.constant = ops::RtValue(a.dtype()); break;
    case Argument::Kind::Device: c.constant = ops::RtValue(a.device()); break;
    case Argument::Kind::Layout: c.constant = ops::RtValue(a.layout()); break;
    case Argument::Kind::MemoryFormat: c.constant = ops::RtValue(a.memory_format()); break;
    case Argument::Kind::Value:
      TOROID_CHECK(a.value()->is_tensor(), "a call argument that is not a tensor: " + describe_value(a.value()));
      c.kind = CallArg::Kind::Tensor;
      c.tensor = ref_of(p, a.value());
      break;
    case Argument::Kind::List:
      c.kind = CallArg::Kind::List;
      for (const Argument& e : a.list()) c.list.push_back(call_arg(p, e));
      break;
  }
  return c;
}

// The index in w.kernels of the generated attention kernel for `dtype`, added on first use.
int cpu_attention_kernel(WrapperProgram& w, DType dtype) {
  std::optional<cpu::CppKernel> k = cpu::attention_kernel(dtype);
  TOROID_CHECK(k.has_value(), std::string("no CPU attention kernel for ") + dtype_short_name(dtype));
  for (size_t i = 0; i < w.kernels.size(); ++i)
    if (w.kernels[i].name == k->name) return static_cast<int>(i);
  w.kernels.push_back(std::move(*k));
  return static_cast<int>(w.kernels.size() - 1);
}

// Node `n`'s reference kernel, its results written to `results`.
ReferenceCall reference_call(const loop::LoopProgram& p, const Node* n, const std::vector<Buffer*>& results) {
  ReferenceCall c;
  c.op = ops::OpRegistry::global().find(n->target());
  TOROID_CHECK(c.op != nullptr, "no op entry for " + n->target());
  c.op_name = n->target();
  c.loc = n->loc();
  for (const Argument* a : ops::bound_arguments(*c.op, *n)) c.args.push_back(call_arg(p, *a));
  const ShapeEnv& env = p.graph->shape_env();
  for (const Buffer* b : results)
    c.results.push_back({b->result_index, layout_ref(b->storage, n->result(b->result_index)->meta()), nbytes_of(b, env)});
  return c;
}

std::vector<OutputPlan> output_plan(const loop::LoopProgram& p) {
  std::vector<OutputPlan> out;
  std::vector<int> bound_slots;
  for (const loop::OutputRef& r : p.outputs) {
    OutputPlan o;
    if (r.value && r.buffer) {
      o.kind = OutputPlan::Kind::Tensor;
      o.tensor = ref_of(p, r.value);
      const Buffer* owner = r.buffer->storage;
      if (owner->kind == BufferKind::Input && owner->input_index >= 0) {
        o.input_index = owner->input_index;
        o.input_offset = owner->offset;
      }
      // The caller's memory holds only the output's span: an output at an offset in its
      // buffer, or sharing it with an earlier such output, is copied out after the run instead.
      bool owned = owner->kind != BufferKind::Input && owner->kind != BufferKind::Constant;
      if (owned && r.value->meta().offset == SymExpr::integer(0) &&
          std::find(bound_slots.begin(), bound_slots.end(), owner->id) == bound_slots.end()) {
        o.bindable = true;
        bound_slots.push_back(owner->id);
      }
    } else if (r.input_index >= 0) {
      o.kind = OutputPlan::Kind::Input;
      o.input_index = r.input_index;
    } else if (r.scalar) {
      o.kind = OutputPlan::Kind::Scalar;
      o.scalar = r.scalar;
    }
    out.push_back(std::move(o));
  }
  return out;
}

// A donated input whose memory buffers may take: at offset 0 with every size provably at least 1
// (so that its storage_numel is the extent the caller's memory holds), written by no buffer.
bool donatable(const Buffer& in, const loop::LoopProgram& program, const ShapeEnv& env) {
  if (in.offset != SymExpr::integer(0)) return false;
  for (SymExpr s : in.sizes)
    if (!env.statically_known_true(sym::ge(s, SymExpr::integer(1)))) return false;
  for (const auto& b : program.buffers)
    if (b->storage == &in && b.get() != &in) return false;
  return true;
}

void describe_slots(const loop::LoopProgram& program, WrapperProgram& w) {
  const ShapeEnv& env = program.graph->shape_env();
  int num_slots = 0;
  for (const auto& b : program.buffers) num_slots = std::max(num_slots, b->id + 1);
  w.slots.resize(static_cast<size_t>(num_slots));
  for (const auto& b : program.buffers) {
    Slot& s = w.slots[static_cast<size_t>(b->id)];
    if (b->storage != b.get() && b->storage && b->storage->kind == BufferKind::Input) w.writes_inputs = true;
    s.name = b->name;
    s.dtype = b->dtype;
    s.device = b->device;
    if (b->storage != b.get() || !b->holds_memory()) continue;
    s.kind = b->kind == BufferKind::Input      ? Slot::Kind::Input
             : b->kind == BufferKind::Constant ? Slot::Kind::Constant
                                               : Slot::Kind::Intermediate;
    if (s.kind == Slot::Kind::Intermediate) s.nbytes = nbytes_of(b.get(), env);
    if (s.kind == Slot::Kind::Input && b->donated && donatable(*b, program, env)) {
      s.donated = true;
      s.nbytes = nbytes_of(b.get(), env);
    }
    if (b->kind == BufferKind::Constant) {
      const TensorMeta& m = b->constant->result(0)->meta();
      w.constants.push_back({b->id, &b->constant->constant_data(), layout_ref(b.get(), m), b->constant->loc()});
    }
  }
  for (const Buffer* in : program.inputs)
    if (in) w.inputs.push_back({in->id, in->input_index, in->offset});
}

// The graph's nodes as provenance sources, and each one's index.
class SourceTable {
 public:
  SourceTable(const Graph& g, WrapperProgram& w) : w_(w) {
    std::unordered_map<const Value*, std::string> names = printed_value_names(g);  // as --emit=graph
    for (const Node* n : g.nodes()) {
      if (n->kind() == NodeKind::Output) continue;
      SourceNode s;
      s.value = n->num_results() ? "%" + names.at(n->result(0)) : "#" + std::to_string(w.sources.size());
      s.op = n->is_call() ? n->target() : node_kind_name(n->kind());
      s.origin = n->origin().name;
      s.stack = n->origin().stack;
      s.line = n->loc().known() ? static_cast<int>(n->loc().line) : 0;
      for (const Value* in : n->inputs())
        if (auto it = index_.find(in->node()); it != index_.end() && !std::count(s.inputs.begin(), s.inputs.end(), it->second))
          s.inputs.push_back(it->second);
      index_[n] = static_cast<int>(w.sources.size());
      w.sources.push_back(std::move(s));
    }
  }
  // The nodes `buffers` compute, each once, in graph order.
  std::vector<int> of(const std::vector<const Buffer*>& buffers) const {
    std::vector<int> out;
    for (const Buffer* b : buffers)
      for (const Node* n : b->origins) {
        auto it = index_.find(n);
        if (it != index_.end() && std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
      }
    std::sort(out.begin(), out.end());
    return out;
  }
  // After the lines: what runs each node.
  void finish(const Graph& g) {
    for (const Line& l : w_.lines) {
      const char* as = l.kind == Line::Kind::KernelCall   ? "kernel"
                       : l.kind == Line::Kind::ExternCall ? "library"
                       : l.kind == Line::Kind::FallbackCall ? "fallback"
                       : l.kind == Line::Kind::UserKernel ? "user_kernel"
                       : l.kind == Line::Kind::Cond || l.kind == Line::Kind::While ? "control"
                                                                                 : "scalar";
      for (int s : l.sources) w_.sources[static_cast<size_t>(s)].runs_as = as;
    }
    for (const Node* n : g.nodes()) {
      auto it = index_.find(n);
      if (it == index_.end() || !w_.sources[static_cast<size_t>(it->second)].runs_as.empty()) continue;
      std::string& as = w_.sources[static_cast<size_t>(it->second)].runs_as;
      if (!n->is_call()) as = node_kind_name(n->kind());
      else as = n->num_results() && n->result(0)->is_tensor() ? "view" : "scalar";
    }
  }

 private:
  WrapperProgram& w_;
  std::unordered_map<const Node*, int> index_;
};

WrapperProgram build_program(const loop::LoopProgram& program, const sched::Schedule& schedule,
                             const std::string& prefix);

// Subprogram `sub` of control step `b`: its kernels named after the step, so that one module
// holds every program's kernels.
std::shared_ptr<WrapperProgram> build_subprogram(const loop::LoopProgram& sub, const std::string& prefix,
                                                 const sched::ScheduleOptions& options) {
  sched::Schedule s = sched::schedule(sub, options);
  for (auto& k : s.kernels) k->name = prefix + k->name;
  return std::make_shared<WrapperProgram>(build_program(sub, s, prefix));
}

// The unbacked symbols among the sizes of a call's results (nonzero's count) that no earlier
// line of the program binds (`bound`, which grows by them), each once.
Line symbol_defs(const ReferenceCall& call, const ShapeEnv& env, std::unordered_set<SymExpr>& bound) {
  Line l;
  l.kind = Line::Kind::SymbolDefs;
  l.call.op_name = call.op_name;
  l.call.loc = call.loc;
  for (const ReferenceCall::Result& r : call.results)
    for (size_t d = 0; d < r.ref.sizes.size(); ++d) {
      SymExpr s = r.ref.sizes[d];
      const sym::SymbolInfo* info = s.is_symbol() ? env.info(s) : nullptr;
      if (!info || !info->unbacked || !s.is_int() || !bound.insert(s).second) continue;
      l.defs.push_back({s, r.ref.slot, static_cast<unsigned>(d)});
    }
  return l;
}

// The host steps: an item() read or assert (Scalar), a cond or while_loop (Control).
Line host_step(const loop::LoopProgram& program, const Buffer* b, const std::vector<Buffer*>& results,
               const std::string& prefix, const sched::ScheduleOptions& options) {
  Line call;
  call.call.op_name = b->node->target();
  call.call.loc = b->node->loc();
  call.scalar = b->scalar;
  if (b->kind == BufferKind::Scalar) {
    call.kind = b->library_operands.empty() ? Line::Kind::Assert : Line::Kind::ScalarRead;
    call.text = b->message;
    for (const Value* v : b->library_operands) call.operands.push_back(ref_of(program, v));
    return call;
  }
  call.kind = b->node->target() == "higher_order.cond" ? Line::Kind::Cond : Line::Kind::While;
  for (const Value* v : b->library_operands) call.operands.push_back(ref_of(program, v));
  for (const Buffer* r : results) call.results.push_back(ref_of(program, r->node->result(r->result_index)));
  for (size_t i = 0; i < b->subprograms.size(); ++i)
    call.programs.push_back(build_subprogram(*b->subprograms[i], prefix + b->name + "_" + std::to_string(i) + "_", options));
  return call;
}

// An integer or float expression a user-kernel call gives (a number, a symbol, a scalar value).
SymExpr scalar_of(const Argument& a) {
  if (a.is_scalar()) return a.scalar();
  TOROID_CHECK(a.is_value() && a.value() && !a.value()->is_tensor(), "a user kernel scalar that is not a scalar");
  SymExpr s = a.value()->scalar_value();
  TOROID_CHECK(!s.is_null(), "a user kernel scalar with no known value: " + describe_value(a.value()));
  return s;
}

std::vector<SymExpr> exprs_of(const Node* n, const char* kwarg) {
  std::vector<SymExpr> out;
  if (const Argument* a = n->kwarg(kwarg); a && a->is_list())
    for (const Argument& e : a->list()) out.push_back(scalar_of(e));
  return out;
}

std::vector<int> ints_of(const Node* n, const char* kwarg) {
  std::vector<size_t> p = ops::user_kernel_positions(*n, kwarg);
  return {p.begin(), p.end()};
}

// The launch of user kernel call `n`, whose results are in `results` (one per written tensor);
// its kernel joins w.user_kernels (once per kind, source and entry).
Line user_kernel_line(const loop::LoopProgram& program, const Node* n, const std::vector<Buffer*>& results,
                      WrapperProgram& w) {
  ops::UserKernelSource s = ops::user_kernel_source(*n).value();
  UserKernel k{s.name, s.kind, s.source, s.entry, "", {}, s.cubin};
  auto same = [&](const UserKernel& o) {
    return o.kind == k.kind && o.source == k.source && o.entry == k.entry && o.cubin == k.cubin;
  };
  auto found = std::find_if(w.user_kernels.begin(), w.user_kernels.end(), same);
  Line l;
  l.kind = Line::Kind::UserKernel;
  l.call.op_name = n->target();
  l.call.loc = n->loc();
  UserLaunch& u = l.launch;
  u.kernel = static_cast<int>(found - w.user_kernels.begin());
  if (found == w.user_kernels.end()) w.user_kernels.push_back(std::move(k));
  u.grid = exprs_of(n, "grid");
  u.block = exprs_of(n, "block");
  if (const Argument* shared = n->kwarg("shared")) u.shared = shared->scalar();
  u.written = ints_of(n, "writes");
  u.aligned = ints_of(n, "aligned");
  u.order = ints_of(n, "order");
  const Argument::List& tensors = n->args().at(1).list();
  for (size_t p = 0; p < tensors.size(); ++p) {
    auto w_at = std::find(u.written.begin(), u.written.end(), static_cast<int>(p));
    if (w_at == u.written.end()) {
      u.tensors.push_back(ref_of(program, tensors[p].value()));
      continue;
    }
    size_t r = static_cast<size_t>(w_at - u.written.begin());
    auto b = std::find_if(results.begin(), results.end(), [&](const Buffer* x) { return x->result_index == r; });
    TOROID_CHECK(b != results.end(), "no buffer for result " + std::to_string(r) + " of a user kernel");
    u.tensors.push_back(layout_ref((*b)->storage, n->result(r)->meta()));
  }
  for (const Argument& a : n->args().at(2).list()) u.scalars.push_back(scalar_of(a));
  return l;
}

}  // namespace

WrapperProgram build_wrapper(const loop::LoopProgram& program, const sched::Schedule& schedule) {
  return build_program(program, schedule, "");
}

namespace {

WrapperProgram build_program(const loop::LoopProgram& program, const sched::Schedule& schedule,
                             const std::string& prefix) {
  WrapperProgram w;
  w.graph_name = program.graph->name();
  w.target = program.target;
  const ShapeEnv& env = program.graph->shape_env();
  w.env = &env;
  describe_slots(program, w);
  for (const Value* in : graph_inputs(*program.graph)) {
    std::vector<SymExpr> exprs;
    if (in->is_tensor()) {
      const TensorMeta& m = in->meta();
      exprs.insert(exprs.end(), m.sizes.begin(), m.sizes.end());
      exprs.insert(exprs.end(), m.strides.begin(), m.strides.end());
      exprs.push_back(m.offset);
    } else if (!in->scalar_value().is_null()) {
      exprs.push_back(in->scalar_value());
    }
    for (SymExpr e : exprs)
      for (SymExpr s : e.free_symbols())
        if (const sym::SymbolInfo* info = env.info(s); info && info->unbacked &&
            std::find(w.input_symbols.begin(), w.input_symbols.end(), s) == w.input_symbols.end())
          w.input_symbols.push_back(s);
  }
  SourceTable sources(*program.graph, w);
  SymbolSlots slots;
  for (const sym::SymbolInfo& info : env.symbols()) {
    if (info.symbol.type() != sym::Type::Int && info.symbol.type() != sym::Type::Float) continue;
    slots[info.symbol] = w.symbols.size();
    w.symbols.push_back(info.symbol);
  }
  std::unordered_set<const Buffer*> allocated;
  std::unordered_set<SymExpr> bound;  // unbacked symbols an earlier line binds
  auto alloc = [&](Buffer* b) {
    if (b->storage != b || allocated.count(b)) return;
    allocated.insert(b);
    Line l;
    l.kind = Line::Kind::Alloc;
    l.slot = b->id;
    l.nbytes = nbytes_of(b, env);
    w.lines.push_back(l);
  };
  // A kernel's comment line, naming each member and what it computes.
  auto comment = [&](const sched::Kernel& k) {
    for (const sched::Member& m : k.members)
      if (!m.local) alloc(m.buffer);
    Line c;
    c.text = k.name + ":";
    for (const sched::Member& m : k.members)
      c.text += " " + m.buffer->name + " <- " +
                (m.buffer->clone_of ? "clone of " + describe_value(m.buffer->clone_of) + " for " + origins(m.buffer)
                                    : origins(m.buffer)) +
                ";";
    c.text.pop_back();
    w.lines.push_back(c);
  };
  auto sources_of = [&](const sched::Kernel& k) {
    std::vector<const Buffer*> members;
    for (const sched::Member& m : k.members) members.push_back(m.buffer);
    return sources.of(members);
  };
  // The call line of a kernel appended to the target's list.
  auto call_line = [&](auto kernel, auto& list) {
    Line call;
    call.kind = Line::Kind::KernelCall;
    call.kernel = static_cast<int>(list.size());
    call.args = kernel.args;
    call.sources = kernel.sources;
    list.push_back(std::move(kernel));
    w.lines.push_back(call);
  };
  auto call_cuda = [&](CudaKernel ck) { call_line(std::move(ck), w.cuda_kernels); };
  for (const sched::Step& step : schedule.steps) {
    if (step.kind == sched::Step::Kind::Kernel) {
      const sched::Kernel& k = *step.kernel;
      comment(k);
      if (!w.target.is_cuda()) {
        CppKernel ck = cpu::emit_cpp_kernel(k, slots, env);
        ck.sources = sources_of(k);
        call_line(std::move(ck), w.kernels);
      } else {
        CudaKernel ck = cuda::emit_cuda_kernel(k, slots, env);
        ck.sources = sources_of(k);
        call_cuda(std::move(ck));
      }
      continue;
    }
    if (step.kind == sched::Step::Kind::Combo) {
      TOROID_CHECK(w.target.is_cuda(), "combo kernels are scheduled for CUDA only");
      // The parts in order, packed into combos while their parameters fit; a part that cannot
      // be one (it records index errors) is a launch of its own.
      std::vector<CudaKernel> parts;
      for (const sched::Kernel* k : step.parts) {
        comment(*k);
        parts.push_back(cuda::emit_cuda_kernel(*k, slots, env));
        parts.back().sources = sources_of(*k);
      }
      std::vector<const CudaKernel*> run;
      auto flush = [&] {
        if (run.size() == 1) call_cuda(*run[0]);
        if (run.size() > 1) call_cuda(cuda::combine_cuda_kernels(run, prefix + "combo" + std::to_string(w.cuda_kernels.size())));
        run.clear();
      };
      for (const CudaKernel& k : parts) {
        if (!cuda::combinable(k)) {
          flush();
          call_cuda(k);
          continue;
        }
        run.push_back(&k);
        if (run.size() > 1 && cuda::combo_param_bytes(run) > cuda::kMaxComboParamBytes) {
          run.pop_back();
          flush();
          run.push_back(&k);
        }
      }
      flush();
      continue;
    }
    Buffer* b = step.buffer;
    Line c;
    c.text = b->name + " <- " + origins(b);
    w.lines.push_back(c);
    if (step.kind == sched::Step::Kind::Extern) {
      alloc(b);
      Line call;
      call.kind = Line::Kind::ExternCall;
      call.slot = b->id;
      call.library = b->library;
      for (const Value* v : b->library_operands) call.operands.push_back(ref_of(program, v));
      call.result = ref_of(program, b->node->result(b->result_index));
      call.params = b->library_params;
      call.call = reference_call(program, b->node, {b});
      call.sources = sources.of({b});
      w.lines.push_back(call);
      continue;
    }
    std::vector<Buffer*> results;
    for (const auto& owned : program.buffers)
      if (owned->kind == b->kind && owned->node == b->node && owned->holds_memory()) results.push_back(owned.get());
    if (step.kind == sched::Step::Kind::UserKernel) {
      for (Buffer* r : results) alloc(r);  // those written in memory of their own
      Line call = user_kernel_line(program, b->node, results, w);
      call.sources = sources.of({results.begin(), results.end()});
      w.lines.push_back(std::move(call));
      continue;
    }
    if (step.kind == sched::Step::Kind::Scalar || step.kind == sched::Step::Kind::Control) {
      for (Buffer* r : results) alloc(r);
      Line call = host_step(program, b, results, prefix, schedule.options);
      if (call.kind == Line::Kind::ScalarRead && call.scalar.is_symbol()) bound.insert(call.scalar);
      call.sources = sources.of({results.begin(), results.end()});
      if (results.empty()) call.sources = sources.of({b});
      w.lines.push_back(std::move(call));
      continue;
    }
    Line call;
    call.kind = Line::Kind::FallbackCall;
    call.call = reference_call(program, b->node, results);
    call.device_kernel = b->on_device;
    call.deterministic = b->deterministic;
    call.library = b->library;
    if (b->on_device && b->library == loop::LibraryCall::Attention && !w.target.is_cuda())
      call.kernel = cpu_attention_kernel(w, b->dtype);
    call.sources = sources.of({results.begin(), results.end()});
    for (int k : call.sources) w.sources[static_cast<size_t>(k)].why = b->fallback_reason;
    w.lines.push_back(call);
    if (Line defs = symbol_defs(call.call, env, bound); !defs.defs.empty()) w.lines.push_back(std::move(defs));
  }
  Line ret;
  ret.kind = Line::Kind::Return;
  ret.outputs = output_plan(program);
  w.lines.push_back(ret);
  sources.finish(*program.graph);
  return w;
}

}  // namespace

}  // namespace toroid::codegen::wrapper
