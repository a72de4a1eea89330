// What the C++ and CUDA kernel emitters share: the kernel's arguments (each storage a member
// reads or writes, once), the names of kernel variables and size symbols in index code (the
// size symbols a kernel uses, with their slot in the `syms` array), temporaries, and the header
// comment naming each member and the graph nodes it computes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "toroid/codegen/kernel.h"
#include "toroid/codegen/scalar.h"
#include "toroid/loop/ir.h"
#include "toroid/sched/schedule.h"

namespace toroid::codegen {

class KernelEmitter : public ScalarDialect {
 protected:
  KernelEmitter(const sched::Kernel& k, const SymbolSlots& slots, const ShapeEnv& env);

  // Records every storage a member reads or writes as an argument, in first-use order.
  void collect_args();
  // An argument's pointer, named by its position ("p0", ...): kernels alike but for the storages
  // they read and write then have the same code (a combo kernel keeps one body for them).
  std::string ptr(const loop::Buffer* b) const;
  std::string sym_name(SymExpr s) const { return "sym" + std::to_string(slots_.at(s)); }
  bool is_kernel_var(SymExpr s) const;
  // A symbol in index code: a kernel variable by its name, a size symbol by its slot's name
  // (recorded as used; a UserError for one that no input binds).
  std::string name_of(SymExpr s);
  std::string tmp() { return "t" + std::to_string(tmp_++); }
  // "// kernel0: outer [..], inner [..]<detail>" and a line per member: its kind and origins.
  std::string header_comment(const std::string& detail) const;
  static std::string sizes_str(const std::vector<SymExpr>& v);
  // The value a pointwise member stores: its body, without a final Cast to the stored 16-bit
  // float type (the store converts with the same rounding; rounding twice costs a conversion
  // per element).
  static loop::Expr stored_body(const sched::Member& m);
  // The accumulator type of a reduction whose body computes in `d`.
  static const char* acc_type(loop::ReduceOp r, DType d);
  // Whether member x, a sum or mean of the values var's var reduction reads, can be taken from
  // var's Welford result (a layer norm's mean beside its variance) instead of a loop of its own.
  static bool welford_gives(const sched::Member& var, const sched::Member& x);
  bool rounds_16bit_casts() const override { return k_.emulate_precision_casts; }

  const sched::Kernel& k_;
  const SymbolSlots& slots_;
  const ShapeEnv& env_;
  std::vector<loop::Buffer*> args_;
  std::vector<std::pair<SymExpr, size_t>> used_syms_;
  std::vector<IndexSite> sites_;
  int tmp_ = 0;
};

}  // namespace toroid::codegen
