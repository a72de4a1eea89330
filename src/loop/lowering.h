// Internal to the loop layer: the state of lowering one graph, shared by the per-family files.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/loop/ir.h"
#include "toroid/loop/lower.h"
#include "toroid/ops/impl.h"

namespace toroid::loop {

using Index = std::vector<SymExpr>;
using IndexFn = std::function<Index(std::span<const SymExpr>)>;

class Lowering {
 public:
  Lowering(const Graph& g, LoopProgram& prog, const LowerOptions& options);

  const Graph& graph;
  LoopProgram& prog;
  const LowerOptions& options;

  // The value of element `idx` of tensor `v`.
  Expr load(const Value* v, std::span<const SymExpr> idx);
  // Makes `v`'s storage a buffer in memory (realizing a pointwise value or a view's base) and
  // returns the owner.
  Buffer* realize(const Value* v);

  // Results of lowered calls.
  // A pointwise value: element (i0..in) of `v` is `body` over index_var(k). It stays virtual
  // (inlined into its readers) unless the realization rules say otherwise.
  void define_pointwise(const Value* v, Expr body);
  // A realized buffer holding `v` (reductions, externs, fallbacks): registered as the owner of
  // v's storage and appended to the program.
  Buffer* define_buffer(const Value* v, std::unique_ptr<Buffer> b);
  // A view of `base` whose element idx is base's element fn(idx); null fn: storage positions
  // only (the base is realized).
  void define_view(const Value* v, const Value* base, IndexFn fn);

  // Element idx of `v` where each dims[k].dim reads at the loaded position dims[k].pos instead
  // (idx there is ignored): an IndirectLoad, checked against v's sizes and raising `site`'s index
  // error. A virtual pointwise `v` is inlined when its loads are linear in those dims (so
  // log_softmax feeding a gather is never stored); otherwise v is realized.
  struct IndirectDim {
    size_t dim;
    Expr pos;
  };
  Expr load_indirect(const Value* v, Index idx, std::span<const IndirectDim> dims, const Node* site, bool wrap);
  // Runs `n` as a fallback: its reference kernel on realized operands. `why`: what its lowering
  // rule (if any) could not compile, for the log and the error with reference kernels off.
  void fallback(const Node* n, const std::string& why = "no lowering rule");
  // The buffer holding `n`'s first operand when `n` (a call returning that operand with some
  // elements updated, result `r`) may run in its memory: an intermediate owning it in r's
  // layout, read by nothing else (`n` is its only use and no other value views it). Embedding's
  // backward then accumulates into its zeros instead of into a copy of them. Null otherwise.
  Buffer* updatable_operand(const Node* n, const Value* r);

  // A fresh buffer laid out as v's meta says (sizes, strides, offset; storage extent), named,
  // with v's node as origin. Not yet added to the program.
  std::unique_ptr<Buffer> new_buffer(const Value* v, BufferKind kind);

  // A buffer for a host step of call `n` (a Scalar step) that holds no memory.
  std::unique_ptr<Buffer> new_step(const Node* n, BufferKind kind);

  // Index variables i0..i(rank-1).
  static Index vars(size_t rank);
  // The index of `operand` (broadcast to `out_sizes`) at output index idx: right-aligned,
  // constant-1 dims that the output does not have as 1 read index 0.
  static Index broadcast_index(const TensorMeta& operand, const std::vector<SymExpr>& out_sizes,
                               std::span<const SymExpr> idx);

  // Provenance: the calls inlined into the next buffer defined are its origins too. Cleared
  // before each call is lowered.
  void begin_call() { inlined_.clear(); }
  void note_inlined(const Buffer* virtual_buffer);

  [[noreturn]] void fail(const Node* n, const std::string& message) const;
  // A call that will run its reference kernel (`why`: what has no compiled form): logged, and an
  // error when options.reference_kernels is off.
  void note_reference_kernel(const Node* n, const std::string& why) const;

 private:
  struct Box {
    Buffer* virtual_buffer = nullptr;  // an unrealized pointwise value
    const Value* base = nullptr;       // a view
    IndexFn view;
  };
  std::unordered_map<const Value*, Box> boxes_;
  std::unordered_set<const Storage*> output_storages_;  // the graph's outputs' storages
  std::unordered_map<Buffer*, std::unique_ptr<Buffer>> virtuals_;  // unrealized pointwise bodies
  int next_id_ = 0;
  std::vector<const Node*> inlined_;  // origins of the virtual bodies loaded since begin_call
  void take_inlined(Buffer& b);

  bool should_realize(const Value* v, Expr body) const;
  Expr inline_indirect(Expr body, const Index& idx, std::span<const IndirectDim> dims, const Value* v,
                       const Node* site, bool wrap);
};

// One lowering per op overload; `args` are bound to the schema with defaults filled in.
using LowerFn = void (*)(Lowering& L, const Node* n, const ops::BoundArgs& args);
struct LowerRule {
  const char* op;
  LowerFn fn;
};
std::span<const LowerRule> pointwise_rules();
std::span<const LowerRule> reduction_rules();
std::span<const LowerRule> view_rules();
std::span<const LowerRule> misc_rules();
std::span<const LowerRule> indexing_rules();
std::span<const LowerRule> pool_rules();

// Result r of n as the sum of `in` over `dims` (ascending), in r's compute dtype: a Reduction
// buffer (lower_reduction.cpp), for lowerings of other families (convolution_backward's bias).
void define_sum(Lowering& L, const Node* n, const Value* r, const Value* in, const std::vector<int64_t>& dims);

// Host steps and control flow (lower_control.cpp): item() (_local_scalar_dense), the asserts
// (_assert_scalar, sym_constrain_range*), and cond / while_loop with their subgraphs lowered on
// their own.
void lower_scalar_read(Lowering& L, const Node* n);
void lower_assert(Lowering& L, const Node* n);
void lower_control(Lowering& L, const Node* n);
bool is_assert(const std::string& op);
// higher_order.user_kernel_functional (lower_user_kernel.cpp): UserKernel buffers writing clones
// or the tensors themselves.
void lower_user_kernel(Lowering& L, const Node* n);

// Shared by the families: the value of argument `name` at output index idx, cast to `dtype`
// (a tensor broadcast to the output, or a number).
Expr operand_at(Lowering& L, const Node* n, const ops::BoundArgs& args, std::string_view name,
                std::span<const SymExpr> idx, DType dtype);
// A scalar (constant or symbolic) as an expression of `dtype`.
Expr scalar_expr(SymExpr s, DType dtype);
// The dtype pointwise ops compute in: float for bf16/f16, else the dtype itself.
DType compute_dtype(DType d);

}  // namespace toroid::loop
