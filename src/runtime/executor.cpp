#include "toroid/runtime/executor.h"

#include <cstring>
#include <functional>
#include <unordered_set>

#include "blas.h"
#include "onednn.h"
#include "toroid/ops/ref_util.h"
#include "toroid/ops/registry.h"
#include "toroid/runtime/host_allocator.h"
#include "toroid/runtime/output_binding.h"
#include "toroid/runtime/run_slots.h"
#include "toroid/support/error.h"

namespace toroid::runtime {

using codegen::wrapper::Line;
using loop::Buffer;
using ops::HostStorage;
using ops::HostTensor;
using ops::RtValue;

namespace {
using KernelFn = void (*)(char* const*, const int64_t*);
using TakeIndexErrorFn = int64_t (*)(int64_t*, int64_t*);
}

struct Executor::Impl {
  const codegen::wrapper::WrapperProgram& w;
  const loop::LoopProgram& p;
  const ShapeEnv& env;
  std::vector<KernelFn> kernels;
  TakeIndexErrorFn take_index_error = nullptr;  // when a kernel checks loaded positions
  std::vector<std::vector<int>> kernel_args;  // per line: slot of each argument (KernelCall only)
  std::vector<std::shared_ptr<HostStorage>> constants;  // by buffer id
  int num_slots = 0;
  std::vector<int> output_slots;  // bindable_output_slots
  HostAllocator& allocator = HostAllocator::global();

  // Per run.
  RunSlots rs;
  sym::Binding binding;
  std::vector<int64_t> syms;
  size_t line = 0;  // the line running (for lifecycle messages)

  Impl(const codegen::wrapper::WrapperProgram& prog, const SharedObject& so)
      : w(prog), p(*prog.program), env(prog.program->graph->shape_env()) {
    for (const codegen::cpu::CppKernel& k : w.kernels) {
      kernels.push_back(reinterpret_cast<KernelFn>(find_symbol(so, k.name)));
      if (!k.index_sites.empty() && !take_index_error)
        take_index_error = reinterpret_cast<TakeIndexErrorFn>(find_symbol(so, "toroid_take_index_error"));
    }
    for (const auto& b : p.buffers) num_slots = std::max(num_slots, b->id + 1);
    constants.resize(static_cast<size_t>(num_slots));
    for (const Line& l : w.lines) {
      std::vector<int> a;
      if (l.kind == Line::Kind::KernelCall)
        for (const Buffer* b : l.args) a.push_back(b->id);
      kernel_args.push_back(std::move(a));
    }
    for (const auto& b : p.buffers)
      if (b->kind == loop::BufferKind::Constant) load_constant(*b);
    output_slots = bindable_output_slots(p);
    rs.init(w, num_slots);
  }

  int64_t eval(SymExpr e) const {
    std::optional<sym::Scalar> v = env.evaluate(e, binding);
    if (!v) user_error("cannot evaluate " + e.str() + " for this call (unbound symbol)");
    return v->i;
  }
  std::vector<int64_t> eval(const std::vector<SymExpr>& v) const {
    std::vector<int64_t> out;
    for (SymExpr e : v) out.push_back(eval(e));
    return out;
  }

  void load_constant(const Buffer& b) {
    const Node* n = b.constant;
    const std::vector<uint8_t>& data = n->constant_data();
    const TensorMeta& m = n->result(0)->meta();
    for (SymExpr s : m.sizes)
      if (!s.is_constant()) user_error("constant with symbolic sizes", n->loc());
    std::vector<int64_t> sizes;
    for (SymExpr s : m.sizes) sizes.push_back(s.int_value());
    HostTensor src = HostTensor::zeros(m.dtype, sizes);
    if (data.size() != static_cast<size_t>(src.numel() * src.element_size()))
      user_error("constant data size does not match its type", n->loc());
    if (!data.empty()) std::memcpy(src.data(), data.data(), data.size());
    std::vector<int64_t> strides;
    for (SymExpr s : m.strides) strides.push_back(s.as_int().value_or(0));
    int64_t extent = 1 + (m.offset.as_int().value_or(0));
    for (size_t d = 0; d < sizes.size(); ++d) extent += std::max<int64_t>(sizes[d] - 1, 0) * strides[d];
    auto storage = std::make_shared<HostStorage>(static_cast<size_t>(extent * src.element_size()));
    HostTensor dst = HostTensor::from_storage(storage, m.dtype, sizes, strides, m.offset.as_int().value_or(0));
    ops::copy_into("constant", dst, src);
    constants[static_cast<size_t>(b.id)] = storage;
  }

  // The value `v` (a tensor in a realized storage) as a HostTensor view.
  HostTensor view_of(const Value* v) {
    auto it = p.owners.find(v->meta().storage);
    TOROID_CHECK(it != p.owners.end(), "no buffer for " + describe_value(v));
    const TensorMeta& m = v->meta();
    return HostTensor::from_storage(rs.memory(it->second->storage->id, line), m.dtype, eval(m.sizes), eval(m.strides),
                                    eval(m.offset));
  }

  void allocate(const Buffer* b, int64_t nbytes) {
    // From the cache: blocks this run or an earlier one freed (or whose outputs the caller
    // dropped) come back with their pages mapped. peak_bytes counts `nbytes`, not the class.
    if (const auto& mine = rs.bound[static_cast<size_t>(b->id)]) {
      rs.slots[static_cast<size_t>(b->id)] = mine;
    } else {
      rs.slots[static_cast<size_t>(b->id)] = allocator.allocate(static_cast<size_t>(std::max<int64_t>(nbytes, 1)));
    }
    rs.count(b->id, nbytes);
  }

  ops::ArgumentEvaluator evaluator(const Node* n) {
    return {[this, n](SymExpr e) -> std::optional<RtValue> {
              std::optional<sym::Scalar> s = env.evaluate(e, binding);
              if (!s) user_error("cannot evaluate " + e.str() + " for this call (unbound symbol)", n->loc());
              return ops::rt_scalar(*s);
            },
            [this](const Value* v) -> std::optional<RtValue> { return view_of(v); }};
  }

  void run_fallback(const Line& l) {
    const Node* n = l.node;
    const ops::OpEntry* op = ops::OpRegistry::global().find(n->target());
    ops::RtArgs args = *ops::evaluate_call_args(*op, *n, evaluator(n));
    uint64_t philox_offset = 0;
    ops::KernelContext ctx{0, &philox_offset};
    std::vector<RtValue> results;
    try {
      results = ops::run_kernel(*op, args, ctx);
    } catch (const UserError& e) {
      if (e.loc().known()) throw;
      user_error(e.message(), n->loc());
    }
    std::unordered_set<const HostStorage*> operand_storages;
    for (size_t i = 0; i < args.size(); ++i)
      if (args.at(i).is_tensor()) operand_storages.insert(args.at(i).tensor().storage().get());
    for (Buffer* b : l.results) {
      const Value* v = n->result(b->result_index);
      const HostTensor& t = results.at(b->result_index).tensor();
      // Unbacked sizes (nonzero) are bound by the result.
      const TensorMeta& m = v->meta();
      for (size_t d = 0; d < m.sizes.size() && d < t.sizes().size(); ++d)
        if (m.sizes[d].is_symbol() && !binding.count(m.sizes[d]))
          binding[m.sizes[d]] = sym::Scalar{sym::Type::Int, t.sizes()[d], 0};
      std::vector<int64_t> strides = eval(m.strides);
      int64_t offset = eval(m.offset);
      int64_t nbytes = eval(b->storage_numel) * static_cast<int64_t>(dtype_size(b->dtype));
      // The kernel's own result storage is adopted where its layout is the planned one, it is
      // no larger than planned, and it is not an operand's (a result aliasing an input is copied).
      bool same = t.offset() == offset && t.sizes() == eval(m.sizes) &&
                  static_cast<int64_t>(t.storage()->nbytes()) <= nbytes && !operand_storages.count(t.storage().get());
      for (size_t d = 0; same && d < strides.size(); ++d) same = t.sizes()[d] <= 1 || t.strides()[d] == strides[d];
      if (same && !rs.bound[static_cast<size_t>(b->id)]) {
        rs.slots[static_cast<size_t>(b->id)] = t.storage();
        rs.count(b->id, static_cast<int64_t>(t.storage()->nbytes()));
        continue;
      }
      allocate(b, nbytes);
      HostTensor dst = HostTensor::from_storage(rs.slots[static_cast<size_t>(b->id)], m.dtype, t.sizes(), strides, offset);
      ops::copy_into(n->target(), dst, t);
    }
  }

  // An out of range gather/index position or a zero integer divisor makes the run a user error
  // naming the op.
  void check_index_error(const codegen::cpu::CppKernel& k) {
    if (k.index_sites.empty()) return;
    int64_t size = 0;
    int64_t value = 0;
    int64_t site = take_index_error(&size, &value);
    if (site <= 0 || static_cast<size_t>(site) > k.index_sites.size()) return;
    const codegen::cpu::CppKernel::IndexSite& s = k.index_sites[static_cast<size_t>(site - 1)];
    user_error(codegen::site_error(s, size, value), s.node->loc());
  }

  HostTensor view(const codegen::wrapper::TensorRef& r) const { return rs.view(r, line, env, binding); }
  double eval_double(SymExpr e) const { return eval_real(env, binding, e); }

  void run_extern(const Line& l) {
    HostTensor out = view(l.result);
    const loop::LibraryParams& p = l.params;
    switch (l.library) {
      case loop::LibraryCall::Mm: blas_mm(view(l.operands[0]), view(l.operands[1]), out); return;
      case loop::LibraryCall::Bmm: blas_bmm(view(l.operands[0]), view(l.operands[1]), out); return;
      case loop::LibraryCall::Addmm:
        blas_addmm(view(l.operands[0]), view(l.operands[1]), view(l.operands[2]), eval_double(p.beta),
                   eval_double(p.alpha), out);
        if (p.epilogue != loop::Epilogue::None) activate(out, p.epilogue == loop::Epilogue::Gelu);
        return;
      case loop::LibraryCall::Convolution: {
        ConvParams c{eval(p.stride), eval(p.padding), eval(p.dilation), eval(p.groups)};
        std::optional<HostTensor> bias;
        if (l.operands[2].slot >= 0) bias = view(l.operands[2]);
        onednn_convolution(view(l.operands[0]), view(l.operands[1]), bias ? &*bias : nullptr, c, out);
        return;
      }
    }
    TOROID_INTERNAL_ERROR("no CPU implementation of library call " + std::string(loop::library_call_name(l.library)));
  }

  std::vector<RtValue> run(const std::vector<RtValue>& inputs, sym::Binding b, RunStats* stats,
                           const std::vector<std::shared_ptr<HostStorage>>& outputs) {
    binding = std::move(b);
    rs.start(p, inputs, constants, bind_outputs(p, output_slots, outputs, static_cast<size_t>(num_slots), binding), binding);
    syms.clear();
    for (SymExpr s : w.symbols) {
      auto it = binding.find(s);
      syms.push_back(it == binding.end() ? 0 : it->second.i);
    }
    std::vector<char*> ptrs;
    for (size_t li = 0; li < w.lines.size(); ++li) {
      const Line& l = w.lines[li];
      line = li;
      switch (l.kind) {
        case Line::Kind::Comment: break;
        case Line::Kind::Alloc: allocate(l.buffer, eval(l.nbytes)); break;
        case Line::Kind::Reuse: rs.reuse(l, eval(l.nbytes)); break;
        case Line::Kind::Free: rs.free(l, li); break;
        case Line::Kind::KernelCall: {
          ptrs.clear();
          for (int id : kernel_args[li]) ptrs.push_back(reinterpret_cast<char*>(rs.memory(id, li)->data()));
          // Symbols bound since the call started (unbacked sizes from fallbacks).
          for (size_t k = 0; k < w.symbols.size(); ++k) {
            auto it = binding.find(w.symbols[k]);
            if (it != binding.end()) syms[k] = it->second.i;
          }
          // Never run a kernel on a made-up size: what it reads must be bound by now.
          for (size_t k : w.kernels[static_cast<size_t>(l.kernel)].sym_slots)
            if (!binding.count(w.symbols[k]))
              user_error("kernel " + w.kernels[static_cast<size_t>(l.kernel)].name + " needs symbol " +
                         w.symbols[k].str() + ", which no input's size or scalar value determines");
          kernels[static_cast<size_t>(l.kernel)](ptrs.data(), syms.data());
          check_index_error(w.kernels[static_cast<size_t>(l.kernel)]);
          break;
        }
        case Line::Kind::ExternCall: run_extern(l); break;
        case Line::Kind::FallbackCall: run_fallback(l); break;
      }
    }
    int64_t planned_peak = rs.check_peak(w, binding);
    std::vector<RtValue> out = collect_outputs(p, env, binding, inputs, [this](const Value* v) { return RtValue(view_of(v)); });
    if (stats) {
      stats->peak_bytes = rs.peak;
      stats->planned_peak_bytes = planned_peak;
    }
    rs.finish();
    return out;
  }
};

Executor::Executor(const codegen::wrapper::WrapperProgram& program, const SharedObject& so)
    : impl_(std::make_unique<Impl>(program, so)) {}
Executor::~Executor() = default;

std::vector<RtValue> Executor::run(const std::vector<RtValue>& inputs, sym::Binding binding, RunStats* stats,
                                   const std::vector<std::shared_ptr<HostStorage>>& outputs) {
  return impl_->run(inputs, std::move(binding), stats, outputs);
}

}  // namespace toroid::runtime
