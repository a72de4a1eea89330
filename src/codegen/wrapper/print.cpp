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

}  // namespace toroid::codegen::wrapper
