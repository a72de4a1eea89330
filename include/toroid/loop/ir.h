// The loop-level IR (the role of Inductor's ir.py): the buffers a graph computes.
//
// A Buffer is a tensor that lives in memory (is "realized"): a graph input or constant, or the
// result of a Pointwise body, a Reduction, an Extern library call, or a Fallback kernel. Views
// create no buffer: a load through a view is index arithmetic on its base's storage. Pointwise
// values that are not realized are inlined into their consumers' bodies during lowering.
//
// Bodies are loop::Exprs over the shared index variables: index_var(k) for the buffer's k-th
// dimension and, in reductions, reduction_var(k) for the k-th reduced dimension. A buffer stores
// element (i0, ..., in) at flat position offset + sum(ik * strides[k]) of its storage.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/target.h"
#include "toroid/loop/expr.h"
#include "toroid/loop/library.h"

namespace toroid::loop {

struct LoopProgram;

// A Scalar buffer holds no memory: a host step of the program (an item() read, an assert).
// Control buffers are the tensor results of a higher-order op (cond, while_loop).
// UserKernel buffers are the results of a user's kernel (higher_order.user_kernel_functional),
// each in the memory of its `storage`: a clone, the written tensor itself, or its own.
enum class BufferKind : uint8_t { Input, Constant, Pointwise, Reduction, Extern, Fallback, Scalar, Control, UserKernel };
const char* buffer_kind_name(BufferKind k);

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, ArgMax, ArgMin, Any, All, Mean, Var };
const char* reduce_op_name(ReduceOp r);

struct Buffer {
  int id = 0;
  std::string name;  // "buf3", "arg0" (inputs); for printing
  BufferKind kind = BufferKind::Pointwise;
  DType dtype = DType::Float32;
  Device device;
  // The value's logical sizes and where each element is stored.
  std::vector<SymExpr> sizes;
  std::vector<SymExpr> strides;
  SymExpr offset = SymExpr::integer(0);
  // The buffer whose memory this one writes: itself, a graph input for the copy_ epilogue, or
  // (UserKernel) an earlier buffer owning its memory.
  Buffer* storage = this;
  // Elements to allocate when this buffer owns its storage.
  SymExpr storage_numel;

  // Pointwise and Reduction: the body.
  Expr body;
  std::vector<SymExpr> reduction_sizes;  // Reduction: sizes of reduction_var(0..)
  ReduceOp reduce = ReduceOp::Sum;
  double correction = 1.0;  // Var

  // Extern, Fallback, UserKernel: the graph call and which of its results this buffer holds. Fallback
  // buffers of one node are computed by one call (the first of them).
  const Node* node = nullptr;
  unsigned result_index = 0;
  std::vector<Buffer*> extern_inputs;  // Extern: operand buffers in the call's order
  // Extern: the library kernel, its tensor operands in its own order (Mm, Bmm: a, b; Addmm:
  // self, a, b; Convolution: input, weight, bias or null) and its scalar arguments.
  LibraryCall library = LibraryCall::Mm;
  std::vector<const Value*> library_operands;
  LibraryParams library_params;
  // Fallback: the device's library kernel `library` runs the call (it allocates its results, of
  // data-dependent size), not the reference kernel on host copies.
  bool on_device = false;
  // ... in its form whose results never vary between runs (the deterministic compile option).
  bool deterministic = false;
  // Fallback: why no compiled kernel or library call computes it (debug reports, provenance).
  std::string fallback_reason;

  // Input: the position among the graph inputs (Input nodes, then Param nodes), and whether its
  // caller gave up its memory (`input donated`).
  int input_index = -1;
  bool donated = false;
  // Constant: the data, laid out as `strides` say (row-major contiguous).
  const Node* constant = nullptr;

  // Scalar: reads element 0 of `library_operands[0]` (item()) and binds or checks `scalar`, the
  // value the graph gives its result; with no operand, checks that `scalar` (a condition) holds,
  // else fails with `message` (an assert).
  SymExpr scalar;
  std::string message;
  // Control (the first result's buffer): each subgraph of `node` lowered on its own (cond: true_branch, false_branch;
  // while_loop: cond_fn, body_fn), in that order. `library_operands` are the node's operands
  // (the predicate first, for cond), `extern_inputs` their buffers.
  std::vector<std::shared_ptr<LoopProgram>> subprograms;

  // The graph values this buffer holds (the node whose result it is first), for provenance.
  std::vector<const Node*> origins;
  // A user kernel's clone (Pointwise): the tensor it copies, whose old value is read later.
  const Value* clone_of = nullptr;

  bool is_computed() const { return kind == BufferKind::Pointwise || kind == BufferKind::Reduction; }
  bool holds_memory() const { return kind != BufferKind::Scalar; }
  // Every buffer this one reads (from its body's loads, or its extern/fallback operands).
  std::vector<Buffer*> reads() const;
};

// A graph output: the value's meta gives the view of the storage of `buffer` that is returned.
struct OutputRef {
  const Value* value = nullptr;  // null for a None or scalar output
  Buffer* buffer = nullptr;      // owner of the value's storage
  SymExpr scalar;                // a scalar output's value
  int input_index = -1;          // a scalar output that is graph input #k, with no symbolic value
};

struct LoopProgram {
  const Graph* graph = nullptr;
  Target target;  // lowering's: what the kernels and library calls are for
  std::vector<std::unique_ptr<Buffer>> buffers;  // in dependency order
  std::vector<Buffer*> inputs;                   // one per graph input, in graph_inputs() order
  std::vector<OutputRef> outputs;
  // The buffer that owns each realized storage (views of it load through their own metas).
  std::unordered_map<const Storage*, Buffer*> owners;

  Buffer* add(std::unique_ptr<Buffer> b);
};

// The loop IR verifier (verify.cpp): ids unique, buffers in dependency order (each reads only
// earlier ones of the program), ranks and symbols consistent (sizes over the graph's symbols,
// bodies over their own index variables), storage owners, inputs and outputs in the program,
// library calls the table has for their op, dtype and the target's device. An InternalError
// naming the first buffer that breaks one.
void verify_program(const LoopProgram& p);

// The --emit=loop text: one line per buffer.
std::string print_program(const LoopProgram& p);

// The flat storage position of element `index` of a tensor laid out as `meta` says.
SymExpr position(const std::vector<SymExpr>& strides, SymExpr offset, std::span<const SymExpr> index);

}  // namespace toroid::loop
