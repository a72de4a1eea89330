// What an operator implementation provides, and how the families register it.
//
// Each family file (src/ops/meta_<family>.cpp, src/ops/ref_<family>.cpp) exposes a function
// returning its table of MetaImpl or KernelImpl rows; all_meta_impls() (meta_families.cpp) and
// all_kernel_impls() (ref_families.cpp) gather them, and the registry joins them to the schemas
// by name. So an op gains a meta function or a kernel by adding one row.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/ops/rt_value.h"
#include "toroid/ops/schema.h"

namespace toroid::ops {

// ---------------------------------------------------------------------------------------------
// Binding a call's arguments to its schema.

// For each schema argument, where its value comes from: a positional index (>= 0), a keyword
// index encoded as -(k + 2), or -1 for "use the default". UserError (naming the op and the
// argument) for too many positionals, unknown or repeated keywords, or a missing required
// argument.
std::vector<int> bind_positions(const OpSchema& schema, size_t num_positional,
                                std::span<const std::string> kwarg_names);

// A graph call's arguments bound to its schema, defaults filled in (for meta functions).
class BoundArgs {
 public:
  BoundArgs(const OpSchema& schema, std::span<const Argument> args, std::span<const Kwarg> kwargs);
  const OpSchema& schema() const { return *schema_; }
  const Argument& get(std::string_view name) const;  // InternalError if the schema has no such argument
  const Argument& at(size_t i) const { return values_.at(i); }
  size_t size() const { return values_.size(); }

  // Typed accessors. A type mismatch is a UserError naming the op and argument.
  Value* tensor(std::string_view name) const;                    // Tensor (null if None)
  std::vector<Value*> tensor_list(std::string_view name) const;  // Tensor[] / Tensor?[] (nulls for None)
  SymExpr scalar(std::string_view name) const;   // int/float/bool constant or symbolic scalar value; null if None or unknown
  std::vector<SymExpr> int_list(std::string_view name) const;  // int[] (a single int repeats to list_size)
  bool is_none(std::string_view name) const;
  std::optional<DType> dtype(std::string_view name) const;
  std::optional<Device> device(std::string_view name) const;
  std::optional<MemoryFormat> memory_format(std::string_view name) const;
  std::string str(std::string_view name) const;

 private:
  const OpSchema* schema_;
  std::vector<Argument> values_;
};

// A run-time call's arguments bound to its schema, defaults filled in (for kernels).
class RtArgs {
 public:
  RtArgs(const OpSchema& schema, std::vector<RtValue> values);  // values already in schema order
  const OpSchema& schema() const { return *schema_; }
  const RtValue& get(std::string_view name) const;
  const RtValue& at(size_t i) const { return values_.at(i); }
  size_t size() const { return values_.size(); }

  const HostTensor& tensor(std::string_view name) const;  // UserError if None or not a tensor
  const HostTensor* opt_tensor(std::string_view name) const;  // null if None
  std::vector<HostTensor> tensor_list(std::string_view name) const;  // undefined tensors for None
  int64_t to_int(std::string_view name) const;
  std::optional<int64_t> opt_int(std::string_view name) const;
  double to_double(std::string_view name) const;
  bool to_bool(std::string_view name) const;
  std::vector<int64_t> int_list(std::string_view name) const;  // a single int repeats to list_size
  std::optional<std::vector<int64_t>> opt_int_list(std::string_view name) const;
  bool is_none(std::string_view name) const;
  std::optional<DType> dtype(std::string_view name) const;
  std::optional<MemoryFormat> memory_format(std::string_view name) const;  // null if None
  std::string str(std::string_view name) const;

 private:
  const OpSchema* schema_;
  std::vector<RtValue> values_;
};

// ---------------------------------------------------------------------------------------------
// Meta functions: results (dtype, sizes, strides, offset, storage) from the arguments' metas.

struct MetaContext {
  MetaContext(Graph& g, ShapeEnv& s, SourceLoc l = {}, std::string o = {}, bool dry = false)
      : graph(g), shapes(s), loc(std::move(l)), op(std::move(o)), dry_run(dry) {}

  Graph& graph;       // new storages come from graph.new_storage()
  ShapeEnv& shapes;   // guards (broadcasting s0 against s1) and unbacked symbols (nonzero)
  SourceLoc loc;      // where the call is, for errors
  std::string op;     // "aten.add.Tensor", for errors
  // Dry run (the verifier re-deriving a node's results): conditions are decided from ranges and
  // hints without recording guards, new storages are scratch ones owned by this context, and
  // unbacked symbols are placeholders (not added to the ShapeEnv) that match any expression.
  bool dry_run = false;
  std::vector<std::unique_ptr<Storage>> scratch_storages;
  std::vector<SymExpr> placeholders;

  // A fresh storage for a non-view result.
  Storage* new_storage();
  // Decides `cond` as ShapeEnv::guard does (recording a guard unless dry_run).
  bool guard(SymExpr cond);
  // Decided from ranges alone, or else from the hints; records nothing. nullopt when neither
  // can (an unbacked symbol is involved).
  std::optional<bool> known(SymExpr cond) const;
  // Size-oblivious test (PyTorch's guard_size_oblivious): a size of an unbacked symbol is
  // assumed not to be 0 or 1 unless its range says so; otherwise as guard().
  bool size_oblivious(SymExpr cond);
  // An unbacked integer symbol with `range` (a placeholder in a dry run).
  SymExpr create_unbacked(sym::ValueRange range);
  // An unbacked float symbol (a float item()).
  SymExpr create_unbacked_float();
  // UserError "<op>: message" at loc.
  [[noreturn]] void fail(const std::string& message) const;
};

// Returns one ResultSpec per result. A view result uses its input's storage.
using MetaFn = std::vector<ResultSpec> (*)(const BoundArgs& args, MetaContext& ctx);

// ---------------------------------------------------------------------------------------------
// Reference kernels: exact, simple CPU implementations.

struct KernelContext {
  uint64_t seed = 0;           // Philox key for random ops
  uint64_t* philox_offset;     // advanced by every random op, so two calls differ
};

// Returns one RtValue per result (for a list return, one per element). View kernels return
// tensors sharing the input's storage; in-place kernels write into their input and return it.
using KernelFn = std::vector<RtValue> (*)(const RtArgs& args, KernelContext& ctx);

struct MetaImpl {
  const char* name;  // "aten.add.Tensor"
  MetaFn meta;
};
struct KernelImpl {
  const char* name;
  KernelFn kernel;
};

// Every family's rows (an op named twice, or a name with no schema, is an InternalError when
// the registry is built).
std::vector<MetaImpl> all_meta_impls();
std::vector<KernelImpl> all_kernel_impls();

}  // namespace toroid::ops
