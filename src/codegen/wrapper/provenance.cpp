// The provenance map of a Wrapper IR program as JSON (toroidc --emit=provenance).
#include <sstream>

#include "toroid/codegen/wrapper/wrapper.h"
#include "toroid/support/json.h"

namespace toroid::codegen::wrapper {

namespace {

std::string call_name(const WrapperProgram& w, const Line& l) {
  switch (l.kind) {
    case Line::Kind::KernelCall: return kernel_name(w, l);
    case Line::Kind::ExternCall: return loop::library_call_name(l.library);
    case Line::Kind::UserKernel: return w.user_kernels.at(static_cast<size_t>(l.launch.kernel)).name;
    default: return l.call.op_name;
  }
}

// The name a profiler shows for a kernel call (its content symbol), where it differs from `name`.
std::string profiler_symbol(const WrapperProgram& w, const Line& l) {
  if (l.kind != Line::Kind::KernelCall) return "";
  size_t k = static_cast<size_t>(l.kernel);
  const std::string& s = w.target.is_cuda() ? w.cuda_kernels.at(k).symbol : w.kernels.at(k).symbol;
  return s == kernel_name(w, l) ? "" : s;
}

const char* call_kind(Line::Kind k) {
  switch (k) {
    case Line::Kind::KernelCall: return "kernel";
    case Line::Kind::ExternCall: return "library";
    case Line::Kind::FallbackCall: return "fallback";
    case Line::Kind::UserKernel: return "user_kernel";
    case Line::Kind::Cond:
    case Line::Kind::While: return "control";
    default: return "scalar";
  }
}

bool is_call(const Line& l) {
  switch (l.kind) {
    case Line::Kind::KernelCall:
    case Line::Kind::ExternCall:
    case Line::Kind::FallbackCall:
    case Line::Kind::UserKernel:
    case Line::Kind::ScalarRead:
    case Line::Kind::Assert:
    case Line::Kind::Cond:
    case Line::Kind::While: return true;
    default: return false;
  }
}

}  // namespace

std::string print_provenance(const WrapperProgram& w) {
  std::ostringstream os;
  std::vector<std::vector<size_t>> lines_of(w.sources.size());
  os << "{\n  \"graph\": " << json_quote(w.graph_name) << ",\n  \"target\": " << json_quote(w.target.str())
     << ",\n  \"calls\": [";
  bool first = true;
  for (size_t i = 0; i < w.lines.size(); ++i) {
    const Line& l = w.lines[i];
    if (!is_call(l)) continue;
    os << (first ? "\n" : ",\n") << "    {\"line\": " << i + 1 << ", \"kind\": \"" << call_kind(l.kind)
       << "\", \"name\": " << json_quote(call_name(w, l));
    if (std::string symbol = profiler_symbol(w, l); !symbol.empty()) os << ", \"symbol\": " << json_quote(symbol);
    os << ", \"nodes\": [";
    first = false;
    for (size_t k = 0; k < l.sources.size(); ++k) {
      auto s = static_cast<size_t>(l.sources[k]);
      os << (k ? ", " : "") << json_quote(w.sources.at(s).value);
      lines_of[s].push_back(i + 1);
    }
    os << "]}";
  }
  os << "\n  ],\n  \"nodes\": [";
  for (size_t s = 0; s < w.sources.size(); ++s) {
    const SourceNode& n = w.sources[s];
    os << (s ? ",\n" : "\n") << "    {\"node\": " << json_quote(n.value) << ", \"op\": " << json_quote(n.op);
    if (n.line) os << ", \"tir_line\": " << n.line;
    if (!n.origin.empty()) os << ", \"origin\": " << json_quote(n.origin);
    if (!n.stack.empty()) os << ", \"stack\": " << json_quote(n.stack);
    os << ", \"runs_as\": " << json_quote(n.runs_as);
    if (!n.why.empty()) os << ", \"why\": " << json_quote(n.why);
    os << ", \"lines\": [";
    for (size_t k = 0; k < lines_of[s].size(); ++k) os << (k ? ", " : "") << lines_of[s][k];
    os << "]}";
  }
  os << "\n  ]\n}\n";
  return os.str();
}

}  // namespace toroid::codegen::wrapper
