#include "toroid/runtime/executor.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <unordered_set>

#include "blas.h"
#include "cpu_library.h"
#include "onednn.h"
#include "toroid/runtime/attention_call.h"
#include "toroid/runtime/control_flow.h"
#include "toroid/runtime/host_allocator.h"
#include "toroid/runtime/output_binding.h"
#include "toroid/runtime/reference_call.h"
#include "toroid/runtime/run_slots.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/support/error.h"
#include "toroid/support/log.h"

namespace toroid::runtime {

using codegen::wrapper::Line;
using codegen::wrapper::TensorRef;
using ops::HostStorage;
using ops::HostTensor;
using ops::RtValue;

namespace {

using KernelFn = void (*)(char* const*, const int64_t*);
// A user's C++ kernel: args[k] points to parameter k (a tensor's data pointer, an int64_t or a
// double), program_id to the (x, y, z) of this call in the grid.
using UserKernelFn = void (*)(void* const* args, const int64_t* program_id);

// Each C++ user kernel of `w`, compiled through the kernel cache (its compiler's errors are the
// user's) and looked up by its entry.
std::vector<UserKernelFn> load_user_kernels(const codegen::wrapper::WrapperProgram& w) {
  std::vector<UserKernelFn> out;
  for (const codegen::wrapper::UserKernel& k : w.user_kernels) {
    SharedObject so;
    try {
      so = compile_and_load("#include <cstdint>\n" + k.source, compile_flags_for(w.target));
    } catch (const InternalError& e) {
      user_error("C++ user kernel '" + k.name + "' does not compile: " + std::string(e.what()));
    }
    void* fn = dlsym(so.handle, k.entry.c_str());
    if (!fn) user_error("C++ user kernel '" + k.name + "' defines no extern \"C\" function " + k.entry);
    out.push_back(reinterpret_cast<UserKernelFn>(fn));
  }
  return out;
}
using TakeIndexErrorFn = int64_t (*)(int64_t*, int64_t*);

class CpuExecutor final : public Executor {
 public:
  const codegen::wrapper::WrapperProgram& w;
  const ShapeEnv& env;
  std::vector<KernelFn> kernels;
  std::vector<UserKernelFn> user_kernels;  // by WrapperProgram::user_kernels
  TakeIndexErrorFn take_index_error = nullptr;  // when a kernel checks loaded positions
  std::vector<std::shared_ptr<HostStorage>> constants;  // by slot
  HostAllocator& allocator = HostAllocator::global();
  const SharedObject& so;
  std::vector<std::vector<std::unique_ptr<CpuExecutor>>> children;  // by line: its programs'

  // Per run.
  RunSlots rs;
  sym::Binding binding;
  std::vector<int64_t> syms;
  std::vector<char*> kernel_args;  // a kernel call's buffer pointers (kept: no allocation a call)
  size_t line = 0;  // the line running (for lifecycle messages)

  CpuExecutor(const codegen::wrapper::WrapperProgram& prog, const SharedObject& object)
      : w(prog), env(*prog.env), so(object) {
    for (const Line& l : w.lines) {
      children.emplace_back();
      for (const auto& p : l.programs) children.back().push_back(std::make_unique<CpuExecutor>(*p, so));
    }
    for (const codegen::CppKernel& k : w.kernels) {
      kernels.push_back(reinterpret_cast<KernelFn>(find_symbol(so, k.symbol.empty() ? k.name : k.symbol)));
      if (!k.index_sites.empty() && !take_index_error)
        take_index_error = reinterpret_cast<TakeIndexErrorFn>(find_symbol(so, "toroid_take_index_error"));
    }
    user_kernels = load_user_kernels(w);
    constants.resize(w.slots.size());
    for (const codegen::wrapper::ConstantSlot& c : w.constants) load_constant(c);
    rs.init(w);
  }

  // A C++ user kernel: called once per program of its grid, each parameter by address.
  void run_user_kernel(const Line& l) {
    const codegen::wrapper::UserLaunch& u = l.launch;
    std::vector<int64_t> grid = eval(u.grid);
    grid.resize(3, 1);
    for (int64_t g : grid)
      if (g < 0) user_error("user kernel '" + w.user_kernels.at(static_cast<size_t>(u.kernel)).name + "': a grid of " + std::to_string(g));
    size_t params = u.tensors.size() + u.scalars.size();
    std::vector<void*> pointers(params, nullptr), args(params, nullptr);
    std::vector<int64_t> ints(params, 0);
    std::vector<double> floats(params, 0.0);
    for (size_t p = 0; p < params; ++p) {
      size_t i = u.order.empty() ? p : static_cast<size_t>(u.order[p]);
      if (i < u.tensors.size()) {
        pointers[p] = view(u.tensors[i]).data();
        args[p] = &pointers[p];
        continue;
      }
      SymExpr e = u.scalars.at(i - u.tensors.size());
      std::optional<sym::Scalar> v = env.evaluate(e, binding);
      if (!v) user_error("cannot evaluate scalar argument " + e.str() + " of a user kernel", l.call.loc);
      if (v->type == sym::Type::Float) {
        floats[p] = v->f;
        args[p] = &floats[p];
      } else {
        ints[p] = v->i;
        args[p] = &ints[p];
      }
    }
    UserKernelFn fn = user_kernels.at(static_cast<size_t>(u.kernel));
    int64_t id[3];
    for (id[2] = 0; id[2] < grid[2]; ++id[2])
      for (id[1] = 0; id[1] < grid[1]; ++id[1])
        for (id[0] = 0; id[0] < grid[0]; ++id[0]) fn(args.data(), id);
  }

  int64_t eval(SymExpr e) const { return eval_int(env, binding, e); }
  std::vector<int64_t> eval(const std::vector<SymExpr>& v) const { return eval_ints(env, binding, v); }
  HostTensor view(const TensorRef& r) const { return rs.view(r, line, env, binding); }

  void load_constant(const codegen::wrapper::ConstantSlot& c) {
    const TensorRef& m = c.layout;
    for (SymExpr s : m.sizes)
      if (!s.is_constant()) user_error("constant with symbolic sizes", c.loc);
    std::vector<int64_t> sizes;
    for (SymExpr s : m.sizes) sizes.push_back(s.int_value());
    HostTensor src = HostTensor::zeros(m.dtype, sizes);
    if (c.data->size() != static_cast<size_t>(src.numel() * src.element_size()))
      user_error("constant data size does not match its type", c.loc);
    if (!c.data->empty()) std::memcpy(src.data(), c.data->data(), c.data->size());
    std::vector<int64_t> strides;
    for (SymExpr s : m.strides) strides.push_back(s.as_int().value_or(0));
    int64_t extent = 1 + (m.offset.as_int().value_or(0));
    for (size_t d = 0; d < sizes.size(); ++d) extent += std::max<int64_t>(sizes[d] - 1, 0) * strides[d];
    auto storage = std::make_shared<HostStorage>(static_cast<size_t>(extent * src.element_size()));
    HostTensor dst = HostTensor::from_storage(storage, m.dtype, sizes, strides, m.offset.as_int().value_or(0));
    ops::copy_into("constant", dst, src);
    constants[static_cast<size_t>(c.slot)] = storage;
  }

  void allocate(int slot, int64_t nbytes) {
    // From the cache: blocks this run or an earlier one freed (or whose outputs the caller
    // dropped) come back with their pages mapped. peak_bytes counts `nbytes`, not the class.
    auto s = static_cast<size_t>(slot);
    if (const auto& mine = rs.bound[s]) {
      rs.slots[s] = mine;
    } else {
      rs.slots[s] = allocator.allocate(static_cast<size_t>(std::max<int64_t>(nbytes, 1)));
    }
    rs.count(slot, nbytes);
  }

  // A fallback line's library kernel on the CPU (cpu_library.h).
  bool run_library(const Line& l) {
    CpuCallHooks h;
    h.view = [this](const TensorRef& r) { return view(r); };
    h.eval_int = [this](SymExpr e) { return eval(e); };
    h.eval_real = [this](SymExpr e) { return eval_real(env, binding, e); };
    h.result = [this, &l](const codegen::wrapper::ReferenceCall::Result& r, const std::vector<int64_t>& sizes) {
      rs.produced_sizes(l.call, r, sizes, env, binding);
      if (!rs.slots[static_cast<size_t>(r.ref.slot)]) allocate(r.ref.slot, eval(r.nbytes));
      return view(r.ref);
    };
    if (l.library == loop::LibraryCall::Attention && l.kernel >= 0) return run_attention(l, h);
    return run_cpu_library(l, h);
  }

  // scaled_dot_product_attention through the program's generated kernel (attention_kernel.h
  // says how its arguments are laid out).
  bool run_attention(const Line& l, const CpuCallHooks& h) {
    std::optional<AttentionOperands> o = attention_operands(
        l.call, h.view,
        [&](const codegen::wrapper::ReferenceCall::Result& r) { return h.result(r, eval(r.ref.sizes)); },
        h.eval_real);
    if (!o) return false;
    char* bufs[5] = {reinterpret_cast<char*>(o->q.data()), reinterpret_cast<char*>(o->k.data()),
                     reinterpret_cast<char*>(o->v.data()), o->mask ? reinterpret_cast<char*>(o->mask->data()) : nullptr,
                     reinterpret_cast<char*>(o->out.data())};
    int64_t p[30];
    const int64_t* strides[5] = {o->q_strides, o->k_strides, o->v_strides, o->mask_strides, o->out_strides};
    for (int t = 0; t < 5; ++t) std::copy_n(strides[t], 4, p + 4 * t);
    const int64_t mask_kind = !o->mask ? 0 : o->mask->dtype() == DType::Bool ? 1 : 2;
    const int64_t sizes[] = {o->batch, o->heads, o->L, o->S, o->E, o->Ev, o->group, o->causal ? 1 : 0, mask_kind};
    std::copy(std::begin(sizes), std::end(sizes), p + 20);
    std::memcpy(&p[29], &o->scale, sizeof(double));
    kernels[static_cast<size_t>(l.kernel)](bufs, p);
    return true;
  }

  void run_fallback(const Line& l) {
    if (l.device_kernel && run_library(l)) return;
    if (l.device_kernel) TOROID_LOG("fallback", l.call.op_name + ": the CPU kernel cannot take these operands; the reference kernel runs it");
    const codegen::wrapper::ReferenceCall& c = l.call;
    std::vector<RtValue> results = run_reference(c, env, binding, [this](const TensorRef& r) { return RtValue(view(r)); });
    // A result aliasing an operand is copied, never adopted (its slot is freed and reused).
    std::unordered_set<const HostStorage*> operand_storages;
    for (int s : codegen::wrapper::touched_slots(l))
      if (rs.slots[static_cast<size_t>(s)]) operand_storages.insert(rs.slots[static_cast<size_t>(s)].get());
    for (const codegen::wrapper::ReferenceCall::Result& r : c.results) {
      const HostTensor& t = results.at(r.index).tensor();
      rs.produced_sizes(c, r, t.sizes(), env, binding);
      std::vector<int64_t> strides = eval(r.ref.strides);
      int64_t offset = eval(r.ref.offset);
      int64_t nbytes = eval(r.nbytes);
      // The kernel's own result storage is adopted where its layout is the planned one and it is
      // no larger than planned.
      bool same = t.offset() == offset &&
                  static_cast<int64_t>(t.storage()->nbytes()) <= nbytes && !operand_storages.count(t.storage().get());
      for (size_t d = 0; same && d < strides.size(); ++d) same = t.sizes()[d] <= 1 || t.strides()[d] == strides[d];
      auto slot = static_cast<size_t>(r.ref.slot);
      if (rs.slots[slot]) {  // a call updating an operand in place: into that operand's memory
        ops::copy_into(c.op_name, HostTensor::from_storage(rs.slots[slot], r.ref.dtype, t.sizes(), strides, offset), t);
        continue;
      }
      if (same && !rs.bound[slot]) {
        rs.slots[slot] = t.storage();
        rs.count(r.ref.slot, static_cast<int64_t>(t.storage()->nbytes()));
        continue;
      }
      allocate(r.ref.slot, nbytes);
      HostTensor dst = HostTensor::from_storage(rs.slots[slot], r.ref.dtype, t.sizes(), strides, offset);
      ops::copy_into(c.op_name, dst, t);
    }
  }

  // An out of range gather/index position or a zero integer divisor makes the run a user error
  // naming the op.
  void check_index_error(const codegen::CppKernel& k) {
    if (k.index_sites.empty()) return;
    int64_t size = 0;
    int64_t value = 0;
    int64_t site = take_index_error(&size, &value);
    if (site <= 0 || static_cast<size_t>(site) > k.index_sites.size()) return;
    const codegen::IndexSite& s = k.index_sites[static_cast<size_t>(site - 1)];
    user_error(codegen::site_error(s, size, value), s.loc);
  }

  ConvParams conv_params(const loop::LibraryParams& p) const {
    return {eval(p.stride), eval(p.padding), eval(p.dilation), eval(p.groups)};
  }

  void run_extern(const Line& l) {
    HostTensor out = view(l.result);
    const loop::LibraryParams& p = l.params;
    switch (l.library) {
      case loop::LibraryCall::Mm: blas_mm(view(l.operands[0]), view(l.operands[1]), out); return;
      case loop::LibraryCall::Bmm: blas_bmm(view(l.operands[0]), view(l.operands[1]), out); return;
      case loop::LibraryCall::Addmm:
        blas_addmm(view(l.operands[0]), view(l.operands[1]), view(l.operands[2]), eval_real(env, binding, p.beta),
                   eval_real(env, binding, p.alpha), out);
        if (p.epilogue != loop::Epilogue::None) activate(out, p.epilogue == loop::Epilogue::Gelu);
        return;
      case loop::LibraryCall::Convolution: {
        ConvParams c = conv_params(p);
        std::optional<HostTensor> bias;
        if (l.operands[2].slot >= 0) bias = view(l.operands[2]);
        onednn_convolution(view(l.operands[0]), view(l.operands[1]), bias ? &*bias : nullptr, c, out);
        return;
      }
      case loop::LibraryCall::ConvolutionBackwardInput:
        onednn_convolution_backward_input(view(l.operands[0]), view(l.operands[1]), conv_params(p), out);
        return;
      case loop::LibraryCall::ConvolutionBackwardWeight:
        onednn_convolution_backward_weight(view(l.operands[0]), view(l.operands[1]), conv_params(p), out);
        return;
      case loop::LibraryCall::Nonzero:  // fallback lines (cpu_library.h), never an extern line
      case loop::LibraryCall::Cumsum:
      case loop::LibraryCall::Cumprod:
      case loop::LibraryCall::IndexPut:
      case loop::LibraryCall::Scatter:
      case loop::LibraryCall::ScatterAdd:
      case loop::LibraryCall::ScatterReduce:
      case loop::LibraryCall::IndexAdd:
      case loop::LibraryCall::Sort:
      case loop::LibraryCall::Topk:
      case loop::LibraryCall::Attention: break;
    }
    TOROID_INTERNAL_ERROR("no CPU implementation of library call " + std::string(loop::library_call_name(l.library)));
  }

  void run_kernel(const Line& l) {
    const codegen::CppKernel& k = w.kernels[static_cast<size_t>(l.kernel)];
    kernel_args.clear();
    for (int slot : l.args) kernel_args.push_back(reinterpret_cast<char*>(rs.memory(slot, line)->data()));
    // Symbols bound since the call started (unbacked sizes from fallbacks).
    for (size_t i = 0; i < w.symbols.size(); ++i) {
      auto it = binding.find(w.symbols[i]);
      if (it != binding.end()) syms[i] = symbol_word(it->second);
    }
    // Never run a kernel on a made-up size: what it reads must be bound by now.
    for (size_t i : k.sym_slots)
      if (!binding.count(w.symbols[i]))
        user_error("kernel " + k.name + " needs symbol " + w.symbols[i].str() +
                   ", which no input's size or scalar value determines");
    kernels[static_cast<size_t>(l.kernel)](kernel_args.data(), syms.data());
    check_index_error(k);
  }

  ControlHooks control_hooks() {
    ControlHooks h;
    h.view = [this](const TensorRef& r) { return view(r); };
    h.read = [](const HostTensor& t) { return element_value(t); };
    h.run = [this](size_t index, const std::vector<RtValue>& inputs,
                   const std::vector<std::shared_ptr<HostStorage>>& outputs, bool merge, int64_t* peak) {
      CpuExecutor& c = *children.at(line).at(index);
      RunOptions o;
      o.outputs = outputs;
      std::vector<RtValue> out = c.execute(inputs, binding, o);
      *peak += c.rs.peak;
      if (merge)
        for (const auto& [s, v] : c.binding) binding.emplace(s, v);
      return out;
    };
    h.allocate = [this](size_t n) { return allocator.allocate(std::max<size_t>(n, 1)); };
    h.copy = [](const HostTensor& dst, const HostTensor& src) { ops::copy_into("control flow", dst, src); };
    return h;
  }

  std::vector<RtValue> run(const std::vector<RtValue>& inputs, sym::Binding b, RunStats* stats,
                           const RunOptions& options) override {
    if (options.workspace) user_error("a CPU program takes no workspace (pass none)");
    std::vector<RtValue> out = execute(inputs, std::move(b), options);
    // The plan's peak is evaluated only where it is checked or reported.
    int64_t planned_peak = stats || rs.verify ? rs.check_peak(w, binding) : 0;
    if (stats) {
      stats->peak_bytes = rs.peak;
      stats->planned_peak_bytes = planned_peak;
    }
    return out;
  }

  // The lines, from `b` (which the run extends with what it binds).
  std::vector<RtValue> execute(const std::vector<RtValue>& inputs, sym::Binding b, const RunOptions& options) {
    binding = std::move(b);
    rs.start(w, inputs, constants, bind_outputs(w, options.outputs, binding), binding);
    syms.clear();
    for (SymExpr s : w.symbols) {
      auto it = binding.find(s);
      syms.push_back(it == binding.end() ? 0 : symbol_word(it->second));
    }
    std::vector<RtValue> out;
    for (line = 0; line < w.lines.size(); ++line) {
      const Line& l = w.lines[line];
      switch (l.kind) {
        case Line::Kind::Comment: break;
        case Line::Kind::Alloc:
          if (l.pool >= 0) rs.place_in_pool(l, eval(l.offset), eval(l.nbytes), line);
          else allocate(l.slot, eval(l.nbytes));
          break;
        case Line::Kind::Reuse: rs.reuse(l, eval(l.nbytes)); break;
        case Line::Kind::Free: rs.free(l, line); break;
        case Line::Kind::PoolAlloc: {
          int64_t n = eval(l.nbytes);
          rs.pool_alloc(l, allocator.allocate(static_cast<size_t>(std::max<int64_t>(n, 1))), n);
          break;
        }
        case Line::Kind::PoolFree: rs.pool_free(l, line); break;
        case Line::Kind::KernelCall: run_kernel(l); break;
        case Line::Kind::ExternCall: run_extern(l); break;
        case Line::Kind::UserKernel: run_user_kernel(l); break;
        case Line::Kind::FallbackCall:
          run_fallback(l);
          rs.end_call(binding);
          break;
        case Line::Kind::SymbolDefs: bind_symbol_defs(l, rs.produced, env, binding); break;
        case Line::Kind::ScalarRead: bind_scalar_read(l, element_value(view(l.operands.at(0))), env, binding); break;
        case Line::Kind::Assert: check_assert(l, env, binding); break;
        case Line::Kind::Cond:
        case Line::Kind::While:
          rs.peak = std::max(rs.peak, rs.live + run_control(w, l, control_hooks(), binding));
          break;
        case Line::Kind::Return:
          out = collect_outputs(w, binding, inputs, [this](const TensorRef& r) { return RtValue(view(r)); });
          break;
      }
    }
    if (rs.verify) rs.check_peak(w, binding);
    rs.finish();
    return out;
  }
};

}  // namespace

std::unique_ptr<Executor> make_cpu_executor(const codegen::wrapper::WrapperProgram& program, const SharedObject& so) {
  return std::make_unique<CpuExecutor>(program, so);
}

}  // namespace toroid::runtime
