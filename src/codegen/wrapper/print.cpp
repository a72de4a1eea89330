#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/support/error.h"

namespace toroid::codegen::wrapper {

namespace {

std::string list_str(const std::vector<SymExpr>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

// A view: the slot's buffer, then its type and layout (`buf1 f32[4, 8]{8, 1}+2`).
std::string ref_str(const TensorRef& r) {
  if (r.slot < 0) return "None";
  std::string s = r.name + " " + dtype_short_name(r.dtype) + list_str(r.sizes) + "{";
  for (size_t i = 0; i < r.strides.size(); ++i) s += (i ? ", " : "") + r.strides[i].str();
  s += "}";
  if (r.offset != SymExpr::integer(0)) s += "+" + r.offset.str();
  return s;
}

std::string constant_str(const ops::RtValue& v) {
  switch (v.kind()) {
    case ops::RtValue::Kind::None: return "None";
    case ops::RtValue::Kind::String: return "\"" + v.str() + "\"";
    case ops::RtValue::Kind::DType: return dtype_torch_name(v.dtype());
    case ops::RtValue::Kind::Device: return v.device().str();
    case ops::RtValue::Kind::Layout: return layout_torch_name(v.layout());
    case ops::RtValue::Kind::MemoryFormat: return memory_format_torch_name(v.memory_format());
    default: return "?";
  }
}

std::string arg_str(const CallArg& a) {
  switch (a.kind) {
    case CallArg::Kind::Constant: return constant_str(a.constant);
    case CallArg::Kind::Scalar: return a.scalar.str();
    case CallArg::Kind::Tensor: return ref_str(a.tensor);
    case CallArg::Kind::List: {
      std::string s = "[";
      for (size_t i = 0; i < a.list.size(); ++i) s += (i ? ", " : "") + arg_str(a.list[i]);
      return s + "]";
    }
  }
  return "?";
}

std::string params_str(const Line& l) {
  const loop::LibraryParams& p = l.params;
  std::string s;
  if (l.library == loop::LibraryCall::Addmm)
    s = "beta=" + p.beta.str() + ", alpha=" + p.alpha.str() + ", epilogue=" + loop::epilogue_name(p.epilogue);
  if (loop::is_convolution(l.library))
    s = "stride=" + list_str(p.stride) + ", padding=" + list_str(p.padding) + ", dilation=" + list_str(p.dilation) +
        ", groups=" + p.groups.str();
  if (p.tf32) s += s.empty() ? "tf32" : ", tf32";
  return s;
}

std::string output_str(const WrapperProgram& w, const OutputPlan& o) {
  switch (o.kind) {
    case OutputPlan::Kind::Tensor: {
      // A buffer in a donated input's memory: the caller gets it as a view of that input.
      bool in_donated = o.input_index >= 0 && o.tensor.slot >= 0 &&
                        w.slots.at(static_cast<size_t>(o.tensor.slot)).kind == Slot::Kind::Intermediate;
      return ref_str(o.tensor) + (in_donated ? " in input " + std::to_string(o.input_index) : "");
    }
    case OutputPlan::Kind::Input: return "input " + std::to_string(o.input_index);
    case OutputPlan::Kind::Scalar: return o.scalar.str();
    case OutputPlan::Kind::None: return "None";
  }
  return "?";
}

const std::string& slot_name(const WrapperProgram& w, int s) { return w.slots.at(static_cast<size_t>(s)).name; }

}  // namespace

std::string print_line(const WrapperProgram& w, const Line& l) {
  std::ostringstream os;
  switch (l.kind) {
    case Line::Kind::Comment: os << "# " << l.text; break;
    case Line::Kind::Reuse:
      os << "reuse " << slot_name(w, l.slot) << " <- " << slot_name(w, l.from) << " : "
         << dtype_short_name(w.slots.at(static_cast<size_t>(l.slot)).dtype) << ", " << l.nbytes.str() << " bytes";
      break;
    case Line::Kind::Alloc:
      os << "alloc " << slot_name(w, l.slot) << " : " << dtype_short_name(w.slots.at(static_cast<size_t>(l.slot)).dtype)
         << ", " << l.nbytes.str() << " bytes";
      if (l.pool >= 0) os << " from " << w.pools.at(static_cast<size_t>(l.pool)).name << " at " << l.offset.str();
      break;
    case Line::Kind::Free: os << "free " << slot_name(w, l.slot); break;
    case Line::Kind::PoolAlloc: {
      const Pool& p = w.pools.at(static_cast<size_t>(l.pool));
      os << "alloc " << p.name << " : pool, " << l.nbytes.str() << " bytes";
      break;
    }
    case Line::Kind::PoolFree: os << "free " << w.pools.at(static_cast<size_t>(l.pool)).name; break;
    case Line::Kind::SymbolDefs:
      os << "unbacked ";
      for (size_t i = 0; i < l.defs.size(); ++i)
        os << (i ? ", " : "") << l.defs[i].symbol.str() << " = " << slot_name(w, l.defs[i].slot) << ".size(" << l.defs[i].dim
           << ")";
      break;
    case Line::Kind::KernelCall: {
      os << "call " << kernel_name(w, l) << "(";
      for (size_t i = 0; i < l.args.size(); ++i) os << (i ? ", " : "") << slot_name(w, l.args[i]);
      os << ")";
      break;
    }
    case Line::Kind::ExternCall: {
      // The library kernel, then what it writes and reads as views.
      os << "extern " << loop::library_call_name(l.library) << " " << ref_str(l.result) << " <- (";
      for (size_t i = 0; i < l.operands.size(); ++i) os << (i ? ", " : "") << ref_str(l.operands[i]);
      os << ")";
      if (std::string p = params_str(l); !p.empty()) os << " " << p;
      break;
    }
    case Line::Kind::FallbackCall: {
      os << (l.device_kernel ? "device " + std::string(loop::library_call_name(l.library)) +
                                   (l.deterministic ? "[deterministic] " : " ")
                             : "fallback ");
      for (size_t i = 0; i < l.call.results.size(); ++i) {
        const ReferenceCall::Result& r = l.call.results[i];
        os << (i ? ", " : "") << ref_str(r.ref) << (l.call.results.size() > 1 ? " #" + std::to_string(r.index) : "");
      }
      os << " = " << l.call.op_name << "(";
      for (size_t i = 0; i < l.call.args.size(); ++i) os << (i ? ", " : "") << arg_str(l.call.args[i]);
      os << ")";
      break;
    }
    case Line::Kind::UserKernel: {
      const UserLaunch& u = l.launch;
      os << "user_kernel " << w.user_kernels.at(static_cast<size_t>(u.kernel)).name << "(";
      for (size_t i = 0; i < u.tensors.size(); ++i) {
        bool written = std::find(u.written.begin(), u.written.end(), static_cast<int>(i)) != u.written.end();
        os << (i ? ", " : "") << (written ? "writes " : "") << ref_str(u.tensors[i]);
      }
      for (size_t i = 0; i < u.scalars.size(); ++i) os << (i || !u.tensors.empty() ? ", " : "") << u.scalars[i].str();
      os << ") grid=" << list_str(u.grid);
      if (!u.block.empty()) os << " block=" << list_str(u.block);
      if (u.shared != SymExpr::integer(0)) os << " shared=" << u.shared.str();
      for (const auto& [word, list] : {std::pair{" order=", &u.order}, std::pair{" aligned=", &u.aligned}}) {
        if (list->empty()) continue;
        os << word << "[";
        for (size_t i = 0; i < list->size(); ++i) os << (i ? ", " : "") << (*list)[i];
        os << "]";
      }
      break;
    }
    case Line::Kind::ScalarRead:
      os << "item " << l.scalar.str() << " <- " << ref_str(l.operands.at(0));
      break;
    case Line::Kind::Assert: os << "assert " << l.scalar.str() << ", \"" << l.text << "\""; break;
    case Line::Kind::Cond:
    case Line::Kind::While: {
      bool cond = l.kind == Line::Kind::Cond;
      size_t first = cond && l.scalar.is_null() ? 1 : 0;
      os << (cond ? "cond " : "while ");
      if (cond) os << (first ? ref_str(l.operands.at(0)) : l.scalar.str()) << " ";
      os << "(";
      for (size_t i = first; i < l.operands.size(); ++i) os << (i > first ? ", " : "") << ref_str(l.operands[i]);
      os << ") -> (";
      for (size_t i = 0; i < l.results.size(); ++i) os << (i ? ", " : "") << ref_str(l.results[i]);
      os << ")" << (cond ? " then @" : " cond_fn @") << l.programs.at(0)->graph_name
         << (cond ? " else @" : " body_fn @") << l.programs.at(1)->graph_name;
      break;
    }
    case Line::Kind::Return: {
      os << "return";
      for (size_t i = 0; i < l.outputs.size(); ++i) os << (i ? ", " : " ") << output_str(w, l.outputs[i]);
      break;
    }
  }
  return os.str();
}

namespace {

// Each line of `text` after `indent`.
std::string indented(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += indent + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string print_wrapper(const WrapperProgram& w) {
  std::ostringstream os;
  os << "wrapper @" << w.graph_name << (w.target.is_cuda() ? " cuda" : "") << " {\n";
  if (!w.symbols.empty()) os << "  # syms = " << list_str(w.symbols) << "\n";
  for (const InputSlot& in : w.inputs) {
    os << "  input " << slot_name(w, in.slot) << " = inputs[" << in.index << "]";
    if (in.offset != SymExpr::integer(0)) os << " at offset " << in.offset.str();
    os << "\n";
  }
  for (const ConstantSlot& c : w.constants)
    os << "  constant " << ref_str(c.layout) << " = " << c.data->size() << " bytes of data\n";
  for (const UserKernel& k : w.user_kernels)
    os << "  user_kernel " << k.name << " = " << k.kind << " kernel " << k.entry << ", " << k.source.size()
       << " bytes of source" << (k.cubin.empty() ? "" : ", " + std::to_string(k.cubin.size()) + " bytes of cubin") << "\n";
  size_t next_partition = 0;
  for (size_t i = 0; i < w.lines.size(); ++i) {
    const Line& l = w.lines[i];
    if (l.kind == Line::Kind::Return) os << "  # planned peak: " << w.planned_peak_bytes.str() << " bytes\n";
    if (next_partition < w.partitions.size() && w.partitions[next_partition].begin == i)
      os << "  # partition " << next_partition << ": " << w.partitions[next_partition].launches << " launches {\n";
    if (l.kind != Line::Kind::Return && !w.partitions.empty())
      if (const char* why = capture_barrier(l)) os << "  # not in a partition: " << why << "\n";
    os << "  " << print_line(w, l) << "\n";
    if (next_partition < w.partitions.size() && w.partitions[next_partition].end == i + 1)
      os << "  # } partition " << next_partition++ << "\n";
    for (const auto& p : l.programs) os << indented(print_wrapper(*p), "    ");
  }
  os << "}\n";
  return os.str();
}

std::string kernels_source(const WrapperProgram& w) {
  std::vector<const WrapperProgram*> programs = nested_programs(w);
  if (w.target.is_cuda()) {
    std::string s = cuda::cuda_prelude();
    for (const WrapperProgram* p : programs)
      for (const cuda::CudaKernel& k : p->cuda_kernels) s += "\n" + k.source;
    return s;
  }
  std::string s = cpu::cpp_prelude();
  for (const WrapperProgram* p : programs)
    for (const cpu::CppKernel& k : p->kernels) s += "\n" + k.source;
  return s;
}

std::vector<std::string> kernels_sources(const WrapperProgram& w, size_t parts) {
  if (w.target.is_cuda()) return {kernels_source(w)};
  // Below this many bytes of kernels, one g++ process is quicker than starting several.
  constexpr size_t kSplitBytes = 64 * 1024;
  // Each distinct kernel once, under its symbol (kernels alike compile once), in program order.
  std::vector<std::string> kernels;
  std::unordered_map<std::string, size_t> seen;  // symbol -> its code in `kernels`
  for (const WrapperProgram* p : nested_programs(w))
    for (const cpu::CppKernel& k : p->kernels) {
      const std::string& symbol = k.symbol.empty() ? k.name : k.symbol;
      std::string code = renamed_code(k.source, k.name, symbol);
      auto [it, fresh] = seen.emplace(symbol, kernels.size());
      if (fresh) kernels.push_back(std::move(code));
      else if (kernels[it->second] != code)  // two kernels whose code hashes alike: never one for the other
        TOROID_INTERNAL_ERROR("kernels " + k.name + " and another share the symbol " + symbol + " but differ");
    }
  size_t total = 0;
  for (const std::string& k : kernels) total += k.size();
  parts = std::min(parts, kernels.size());
  if (parts < 2 || total < kSplitBytes) parts = 1;
  // Greedy: each kernel, largest first, goes to the smallest part so far.
  std::vector<size_t> order(kernels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return kernels[a].size() > kernels[b].size(); });
  std::vector<size_t> bytes(std::max<size_t>(parts, 1), 0);
  std::vector<std::vector<size_t>> members(bytes.size());
  for (size_t i : order) {
    size_t p = static_cast<size_t>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
    bytes[p] += kernels[i].size();
    members[p].push_back(i);
  }
  std::vector<std::string> out;
  for (size_t p = 0; p < members.size(); ++p) {
    std::sort(members[p].begin(), members[p].end());  // program order, so the text is stable
    // The prelude's headers come first in every part (the kernel cache precompiles them), then
    // the mark that keeps the prelude's once-per-module definitions out of the extra parts.
    const std::string& headers = cpu::cpp_prelude_headers();
    std::string s = headers + (p == 0 ? "" : "#define TOROID_KERNELS_EXTRA_PART 1\n") +
                    cpu::cpp_prelude().substr(headers.size());
    for (size_t i : members[p]) s += "\n" + kernels[i];
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace toroid::codegen::wrapper
