#include <algorithm>
#include <sstream>

#include "toroid/codegen/wrapper/wrapper.h"

namespace toroid::codegen::wrapper {

std::string print_wrapper(const WrapperProgram& w) {
  std::ostringstream os;
  os << "wrapper @" << w.program->graph->name() << (w.target == Target::Cuda ? " cuda" : "") << " {\n";
  for (const Line& l : w.lines) {
    os << "  ";
    switch (l.kind) {
      case Line::Kind::Comment: os << "# " << l.text; break;
      case Line::Kind::Alloc:
        os << "alloc " << l.buffer->name << " : " << dtype_short_name(l.buffer->dtype) << ", " << l.nbytes.str()
           << " bytes";
        break;
      case Line::Kind::Reuse: os << "reuse " << l.buffer->name << " <- " << l.from->name; break;
      case Line::Kind::Free: os << "free " << l.buffer->name; break;
      case Line::Kind::KernelCall: {
        os << "call " << kernel_name(w, l) << "(";
        for (size_t i = 0; i < l.args.size(); ++i) os << (i ? ", " : "") << l.args[i]->name;
        os << ")";
        break;
      }
      case Line::Kind::ExternCall: {
        os << "extern " << l.buffer->name << " = " << l.node->target() << "(";
        for (size_t i = 0; i < l.args.size(); ++i) os << (i ? ", " : "") << l.args[i]->name;
        os << ")";
        break;
      }
      case Line::Kind::FallbackCall: {
        os << "fallback ";
        for (size_t i = 0; i < l.results.size(); ++i) os << (i ? ", " : "") << l.results[i]->name;
        os << " = " << l.node->target();
        break;
      }
    }
    os << "\n";
  }
  os << "  return";
  const auto& outs = w.program->outputs;
  for (size_t i = 0; i < outs.size(); ++i)
    os << (i ? ", " : " ") << (outs[i].buffer ? outs[i].buffer->name : outs[i].scalar ? outs[i].scalar.str() : "None");
  os << "\n}\n";
  return os.str();
}

std::string kernels_source(const WrapperProgram& w) {
  if (w.target == Target::Cuda) {
    std::string s = cuda::cuda_prelude();
    for (const cuda::CudaKernel& k : w.cuda_kernels) s += "\n" + k.source;
    return s;
  }
  std::string s = cpu::cpp_prelude();
  for (const cpu::CppKernel& k : w.kernels) s += "\n" + k.source;
  return s;
}

std::vector<std::string> kernels_sources(const WrapperProgram& w, size_t parts) {
  // Below this many bytes of kernels, one g++ process is quicker than starting several.
  constexpr size_t kSplitBytes = 64 * 1024;
  size_t total = 0;
  for (const cpu::CppKernel& k : w.kernels) total += k.source.size();
  parts = std::min(parts, w.kernels.size());
  if (w.target == Target::Cuda || parts < 2 || total < kSplitBytes) return {kernels_source(w)};
  // Greedy: each kernel, largest first, goes to the smallest part so far.
  std::vector<size_t> order(w.kernels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return w.kernels[a].source.size() > w.kernels[b].source.size(); });
  std::vector<size_t> bytes(parts, 0);
  std::vector<std::vector<size_t>> members(parts);
  for (size_t i : order) {
    size_t p = static_cast<size_t>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
    bytes[p] += w.kernels[i].source.size();
    members[p].push_back(i);
  }
  std::vector<std::string> out;
  for (size_t p = 0; p < parts; ++p) {
    std::sort(members[p].begin(), members[p].end());  // program order, so the text is stable
    std::string s = (p == 0 ? "" : "#define TOROID_KERNELS_EXTRA_PART 1\n") + cpu::cpp_prelude();
    for (size_t i : members[p]) s += "\n" + w.kernels[i].source;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace toroid::codegen::wrapper
