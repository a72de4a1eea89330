#include "toroid/codegen/wrapper/ir.h"

#include <algorithm>

namespace toroid::codegen::wrapper {

namespace {

void add_arg_slots(const CallArg& a, std::vector<int>& out) {
  if (a.kind == CallArg::Kind::Tensor && a.tensor.slot >= 0) out.push_back(a.tensor.slot);
  for (const CallArg& e : a.list) add_arg_slots(e, out);
}

}  // namespace

const char* capture_barrier(const Line& l) {
  switch (l.kind) {
    case Line::Kind::Comment:
    case Line::Kind::Alloc:
    case Line::Kind::Reuse:
    case Line::Kind::Free:
    case Line::Kind::KernelCall:
    case Line::Kind::ExternCall:
    case Line::Kind::UserKernel: return nullptr;
    case Line::Kind::PoolAlloc:
    case Line::Kind::PoolFree: return "a pool sized by the data";
    case Line::Kind::FallbackCall: {
      if (!l.device_kernel) return "a host reference kernel";
      std::vector<int> operands;
      for (const CallArg& a : l.call.args) add_arg_slots(a, operands);
      bool in_place = std::all_of(l.call.results.begin(), l.call.results.end(), [&](const ReferenceCall::Result& r) {
        return std::find(operands.begin(), operands.end(), r.ref.slot) != operands.end();
      });
      return in_place ? "a device kernel that may allocate scratch memory" : "a device kernel that allocates its results";
    }
    case Line::Kind::SymbolDefs: return "sizes read back from a result";
    case Line::Kind::ScalarRead: return "an item() read (a sync)";
    case Line::Kind::Assert: return "a host check";
    case Line::Kind::Cond: return "a cond (host control)";
    case Line::Kind::While: return "a while loop (host control)";
    case Line::Kind::Return: return "the return";
  }
  return "an unknown line";
}

const std::vector<OutputPlan>& WrapperProgram::outputs() const {
  TOROID_CHECK(!lines.empty() && lines.back().kind == Line::Kind::Return, "a Wrapper IR program ends with its return");
  return lines.back().outputs;
}

const std::string& kernel_name(const WrapperProgram& w, const Line& call) {
  size_t k = static_cast<size_t>(call.kernel);
  return !w.target.is_cuda() ? w.kernels.at(k).name : w.cuda_kernels.at(k).name;
}

std::vector<int> touched_slots(const Line& l) {
  std::vector<int> out;
  switch (l.kind) {
    case Line::Kind::KernelCall: out = l.args; break;
    case Line::Kind::ExternCall:
      for (const TensorRef& r : l.operands)
        if (r.slot >= 0) out.push_back(r.slot);
      out.push_back(l.result.slot);
      break;
    case Line::Kind::FallbackCall:
      for (const CallArg& a : l.call.args) add_arg_slots(a, out);
      for (const ReferenceCall::Result& r : l.call.results) out.push_back(r.ref.slot);
      break;
    case Line::Kind::ScalarRead:
    case Line::Kind::Cond:
    case Line::Kind::While:
      for (const TensorRef& r : l.operands)
        if (r.slot >= 0) out.push_back(r.slot);
      for (const TensorRef& r : l.results) out.push_back(r.slot);
      break;
    case Line::Kind::SymbolDefs:
      for (const SymbolDef& d : l.defs) out.push_back(d.slot);
      break;
    case Line::Kind::UserKernel:
      for (const TensorRef& r : l.launch.tensors) out.push_back(r.slot);
      break;
    case Line::Kind::Return:
      for (const OutputPlan& o : l.outputs)
        if (o.kind == OutputPlan::Kind::Tensor) out.push_back(o.tensor.slot);
      break;
    default: break;
  }
  std::vector<int> unique;
  for (int s : out)
    if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(s);
  return unique;
}

namespace {
void collect_programs(const WrapperProgram& w, std::vector<const WrapperProgram*>& out) {
  for (const Line& l : w.lines)
    for (const auto& p : l.programs) {
      out.push_back(p.get());
      collect_programs(*p, out);
    }
}
}  // namespace

std::vector<const WrapperProgram*> nested_programs(const WrapperProgram& w, bool self) {
  std::vector<const WrapperProgram*> out;
  if (self) out.push_back(&w);
  collect_programs(w, out);
  return out;
}

}  // namespace toroid::codegen::wrapper
