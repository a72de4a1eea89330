// A user kernel's functional form: each written tensor gets the memory the kernel writes (a
// clone in the tensor's own layout, the tensor itself where nothing else reads it, or fresh
// memory for an `empty` tensor), and one UserKernel buffer per result says so.
#include <algorithm>

#include "lowering.h"
#include "toroid/ops/user_kernel.h"

namespace toroid::loop {

namespace {

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
  std::string kind = ops::user_kernel_source(*n).value().kind;
  bool cuda = L.options.target.is_cuda();
  if (cuda == (kind == "cpp"))
    L.fail(n, "a " + kind + " user kernel runs on " + (kind == "cpp" ? "the CPU" : "a CUDA device") +
                  ", but this program is compiled for the " + L.options.target.device_name());
  if (kind == "cubin")
    L.fail(n, "a cubin user kernel cannot be launched on its own: toroid reads the parameter types from PTX, so give "
              "the kernel's PTX (kind=\"ptx\", the cubin as its kernel-table entry's cubin=) or CUDA C++ (kind=\"cuda\")");
  for (const Argument& a : n->args().at(2).list())
    if (a.is_value() && a.value()->scalar_value().is_null())
      L.fail(n, "scalar argument " + describe_value(a.value()) +
                    " has no value the compiled program can compute (declare it with a symbol: {value=s1})");
  const Argument::List& tensors = n->args().at(1).list();
  std::vector<size_t> writes = ops::user_kernel_positions(*n, "writes"),
                      cloned = ops::user_kernel_positions(*n, "tensors_to_clone");
  auto is_cloned = [&](size_t p) { return std::find(cloned.begin(), cloned.end(), p) != cloned.end(); };
  auto is_written = [&](size_t p) { return std::find(writes.begin(), writes.end(), p) != writes.end(); };
  std::vector<Buffer*> operands;
  for (size_t p = 0; p < tensors.size(); ++p) {
    if (is_written(p) && !is_cloned(p) && uninitialized(tensors[p].value())) continue;  // never filled
    Buffer* b = L.realize(tensors[p].value());
    if (std::find(operands.begin(), operands.end(), b) == operands.end()) operands.push_back(b);
  }
  // The memory each written tensor is written in; every clone before the launch's buffers, so the
  // one step that launches the kernel comes after all of them.
  std::vector<Buffer*> storage(writes.size(), nullptr);
  for (size_t r = 0; r < writes.size(); ++r) {
    const Value* in = tensors.at(writes[r]).value();
    if (is_cloned(writes[r])) {
      // The old value is read later: the kernel writes a clone, laid out as the tensor is.
      std::unique_ptr<Buffer> c = L.new_buffer(n->result(r), BufferKind::Pointwise);
      c->body = cast(L.load(in, Lowering::vars(in->meta().sizes.size())), in->meta().dtype);
      c->origins = {n};
      c->clone_of = in;
      storage[r] = L.prog.add(std::move(c));
      operands.push_back(storage[r]);
    } else if (!uninitialized(in)) {
      storage[r] = L.realize(in);  // nothing reads it after the kernel (in_place_hazard)
    }
  }
  for (size_t r = 0; r < writes.size(); ++r) {
    std::unique_ptr<Buffer> u = L.new_buffer(n->result(r), BufferKind::UserKernel);
    u->node = n;
    u->result_index = static_cast<unsigned>(r);
    u->extern_inputs = operands;
    if (storage[r]) u->storage = storage[r];  // else memory of its own (an empty tensor's)
    L.define_buffer(n->result(r), std::move(u));
  }
}

}  // namespace toroid::loop
