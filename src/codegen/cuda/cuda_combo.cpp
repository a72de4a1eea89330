#include <algorithm>
#include <sstream>

#include "toroid/codegen/cuda/cuda_kernel.h"
#include "toroid/support/error.h"

namespace toroid::codegen::cuda {

namespace {

// The union of the parts' storages and symbols, in first-use order.
struct Params {
  std::vector<int> args;
  std::vector<std::string> arg_types;
  std::vector<size_t> sym_slots;

  explicit Params(const std::vector<const CudaKernel*>& parts) {
    for (const CudaKernel* k : parts) {
      for (size_t i = 0; i < k->args.size(); ++i)
        if (std::find(args.begin(), args.end(), k->args[i]) == args.end()) {
          args.push_back(k->args[i]);
          arg_types.push_back(k->arg_types[i]);
        }
      for (size_t s : k->sym_slots)
        if (std::find(sym_slots.begin(), sym_slots.end(), s) == sym_slots.end()) sym_slots.push_back(s);
    }
  }
  size_t arg_index(int slot) const { return static_cast<size_t>(std::find(args.begin(), args.end(), slot) - args.begin()); }
  size_t sym_index(size_t slot) const {
    return static_cast<size_t>(std::find(sym_slots.begin(), sym_slots.end(), slot) - sym_slots.begin());
  }
};

std::string body_name(const std::string& combo, size_t g) { return combo + "_body" + std::to_string(g); }

}  // namespace

bool combinable(const CudaKernel& k) {
  return k.parts.empty() && k.shape == CudaKernel::Shape::Flat && k.index_sites.empty() &&
         k.arg_types.size() == k.args.size();
}

size_t combo_param_bytes(const std::vector<const CudaKernel*>& parts) {
  Params p(parts);
  return 8 * (p.args.size() + p.sym_slots.size()) + 4 * parts.size();
}

CudaKernel combine_cuda_kernels(const std::vector<const CudaKernel*>& parts, const std::string& name) {
  TOROID_CHECK(parts.size() >= 2, "a combo kernel needs two parts");
  for (const CudaKernel* k : parts) TOROID_CHECK(combinable(*k), k->name + " cannot be a combo kernel's part");
  Params p(parts);
  CudaKernel out;
  out.name = name;
  out.shape = CudaKernel::Shape::Flat;
  out.args = p.args;
  out.arg_types = p.arg_types;
  out.sym_slots = p.sym_slots;
  out.has_i32 = true;
  std::ostringstream defs;
  defs << "// " << name << ": a combo of";
  for (const CudaKernel* k : parts) defs << " " << k->name;
  defs << "\n";
  // Parts alike but for their storages (an optimizer's update of each parameter of one shape)
  // share one body, which several calls do not inline: NVRTC's time grows with the code inlined
  // into the entry (64 inlined copies of one Adam update took it 12 s).
  std::vector<std::string> bodies;
  std::vector<size_t> body_of, uses;
  for (const CudaKernel* k : parts) {
    auto it = std::find(bodies.begin(), bodies.end(), k->body);
    body_of.push_back(static_cast<size_t>(it - bodies.begin()));
    if (it == bodies.end()) {
      bodies.push_back(k->body);
      uses.push_back(0);
    }
    ++uses[body_of.back()];
  }
  for (size_t g = 0; g < bodies.size(); ++g) {
    for (size_t j = 0; j < parts.size(); ++j)
      if (body_of[j] == g) defs << parts[j]->comment;
    defs << "template <class I>\nstatic __device__ " << (uses[g] > 1 ? "__noinline__" : "__forceinline__") << " void "
         << body_name(name, g) << bodies[g];
  }
  for (const CudaKernel* k : parts) {
    out.has_i32 = out.has_i32 && k->has_i32;
    out.sources.insert(out.sources.end(), k->sources.begin(), k->sources.end());
    out.parts.push_back({k->name, k->elements, k->vector_width});
  }
  out.definitions = defs.str();
  std::string params;
  for (size_t i = 0; i < p.args.size(); ++i)
    params += (i ? ", " : "") + p.arg_types[i] + "* __restrict__ a" + std::to_string(i);
  for (size_t i = 0; i < p.sym_slots.size(); ++i) params += (params.empty() ? "" : ", ") + std::string("int64_t s") + std::to_string(i);
  for (size_t j = 0; j < parts.size(); ++j) params += (params.empty() ? "" : ", ") + std::string("unsigned nb") + std::to_string(j);
  for (const char* I : {"int32_t", "int64_t"}) {
    std::ostringstream e;
    e << "extern \"C\" __global__ void __launch_bounds__(1024) " << name << "_" << (I[3] == '3' ? "i32" : "i64") << "("
      << params << ") {\n  t_wait_on_stream();\n  unsigned b = blockIdx.x;\n";
    for (size_t j = 0; j < parts.size(); ++j) {
      const CudaKernel& k = *parts[j];
      std::string call;
      for (int slot : k.args) call += (call.empty() ? "a" : ", a") + std::to_string(p.arg_index(slot));
      for (size_t s : k.sym_slots) call += (call.empty() ? "s" : ", s") + std::to_string(p.sym_index(s));
      std::string nb = "nb" + std::to_string(j);
      e << "  if (b < " << nb << ") {\n    " << body_name(name, body_of[j]) << "<" << I << ">(" << call << (call.empty() ? "" : ", ") << "b, " << nb
        << ");\n    return;\n  }\n";
      if (j + 1 < parts.size()) e << "  b -= " << nb << ";\n";
    }
    e << "}\n";
    (I[3] == '3' ? out.entry_i32 : out.entry_i64) = e.str();
  }
  if (!out.has_i32) out.entry_i32.clear();
  out.source = out.definitions + out.entry_i32 + out.entry_i64;
  out.rows = out.elements = SymExpr::integer(0);  // the executor sizes a combo by its parts
  out.vector_width = 1;
  for (const CudaKernel* k : parts) out.vector_width = std::max(out.vector_width, k->vector_width);
  assign_symbol(out);
  return out;
}

}  // namespace toroid::codegen::cuda
