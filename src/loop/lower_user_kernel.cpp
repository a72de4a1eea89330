// A user kernel's functional form: each written tensor gets the memory the kernel writes (a
// clone in the tensor's own layout, the tensor itself where nothing else reads it, or fresh
// memory for an `empty` tensor), and one UserKernel buffer per result says so.
#include <algorithm>

#include "lowering.h"
#include "toroid/ops/user_kernel.h"

namespace toroid::loop {

namespace {

std::vector<size_t> positions(const Node* n, const char* kwarg) {
  std::vector<size_t> out;
  if (const Argument* a = n->kwarg(kwarg); a && a->is_list())
    for (const Argument& e : a->list()) out.push_back(static_cast<size_t>(e.scalar().int_value()));
  return out;
}

// An uninitialized tensor: the kernel may write it where it is, with no fill before.
bool uninitialized(const Value* v) {
  const Node* n = v->node();
  return n->is_call() && (n->target() == "aten.empty.memory_format" || n->target() == "aten.empty_strided.default");
}

}  // namespace

void lower_user_kernel(Lowering& L, const Node* n) {
  if (n->target() == ops::kUserKernelMutation)
    L.fail(n, "the in-place form of a user kernel is compiled only after the pass functionalize_user_kernels (the "
              "compile pipeline's first)");
  const Argument* kind_arg = n->kwarg("kind");
  std::string kind = kind_arg ? kind_arg->str() : "";
  bool cuda = L.options.target.is_cuda();
  if (kind == "cpp" || !cuda)
    L.fail(n, kind == "cpp" ? "a C++ user kernel (kind=\"cpp\") cannot be compiled yet; give a CUDA C++ or PTX kernel for a "
                              "CUDA device"
                            : "a " + kind + " user kernel runs on a CUDA device, but this program is compiled for the " +
                                  L.options.target.device_name());
  if (kind == "cubin")
    L.fail(n, "a cubin user kernel cannot be launched: toroid reads the parameter types from PTX, so give the kernel's "
              "PTX (kind=\"ptx\") or CUDA C++ (kind=\"cuda\")");
  const Argument::List& tensors = n->args().at(1).list();
  std::vector<size_t> writes = positions(n, "writes"), cloned = positions(n, "tensors_to_clone");
  auto is_cloned = [&](size_t p) { return std::find(cloned.begin(), cloned.end(), p) != cloned.end(); };
  auto is_written = [&](size_t p) { return std::find(writes.begin(), writes.end(), p) != writes.end(); };
  std::vector<Buffer*> operands;
  for (size_t p = 0; p < tensors.size(); ++p) {
    if (is_written(p) && !is_cloned(p) && uninitialized(tensors[p].value())) continue;  // never filled
    Buffer* b = L.realize(tensors[p].value());
    if (std::find(operands.begin(), operands.end(), b) == operands.end()) operands.push_back(b);
  }
  for (size_t r = 0; r < writes.size(); ++r) {
    const Value* in = tensors.at(writes[r]).value();
    const Value* result = n->result(r);
    std::unique_ptr<Buffer> u = L.new_buffer(result, BufferKind::UserKernel);
    u->node = n;
    u->result_index = static_cast<unsigned>(r);
    u->extern_inputs = operands;
    if (is_cloned(writes[r])) {
      // The old value is read later: the kernel writes a clone, laid out as the tensor is.
      std::unique_ptr<Buffer> c = L.new_buffer(result, BufferKind::Pointwise);
      c->body = cast(L.load(in, Lowering::vars(in->meta().sizes.size())), in->meta().dtype);
      c->origins = {n};
      Buffer* clone = L.prog.add(std::move(c));
      u->storage = clone;
      u->extern_inputs.push_back(clone);
    } else if (!uninitialized(in)) {
      u->storage = L.realize(in);  // nothing reads it after the kernel (in_place_hazard)
    }
    L.define_buffer(result, std::move(u));
  }
}

}  // namespace toroid::loop
