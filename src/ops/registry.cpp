#include "toroid/ops/registry.h"

#include "toroid/support/error.h"

namespace toroid::ops {
namespace {

struct SchemaRow {
  const char* overload;
  const char* treatment;
  const char* schema;
};

constexpr SchemaRow kCoreRows[] = {
#include "core_schemas.inc"
};

constexpr SchemaRow kExtraRows[] = {
#include "extra_schemas.inc"
};

// The ops whose metas and kernels handle complex tensors: they only move or cast elements.
constexpr const char* kComplexOps[] = {
    "aten._fft_r2c.default", "aten._fft_c2r.default", "aten._to_copy.default", "aten.clone.default",
    "aten.lift_fresh_copy.default", "aten.copy.default", "aten.copy_.default", "aten.view.default",
    "aten.reshape.default", "aten._unsafe_view.default", "aten.expand.default", "aten.permute.default",
    "aten.transpose.int", "aten.t.default", "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
    "aten.unsqueeze.default", "aten.select.int", "aten.slice.Tensor", "aten.diagonal.default",
    "aten.alias.default", "aten.detach.default", "aten.as_strided.default", "aten.split_with_sizes.default",
    "aten.split.Tensor", "aten.unbind.int", "aten.sym_size.int", "aten.sym_stride.int", "aten.sym_numel.default",
    "aten.sym_storage_offset.default",
};

[[noreturn]] void complex_unsupported(const OpEntry& e, DType d) {
  user_error(e.name + ": " + dtype_short_name(d) +
             " is not supported (toroid's complex support covers only the fft ops, casts and views)");
}

void check_argument(const OpEntry& e, const Argument& a) {
  if (a.kind() == Argument::Kind::DType && is_complex(a.dtype())) complex_unsupported(e, a.dtype());
  a.for_each_value([&](const Value* v) {
    if (v && v->is_tensor() && v->has_meta() && is_complex(v->meta().dtype)) complex_unsupported(e, v->meta().dtype);
  });
  if (a.is_list())
    for (const Argument& x : a.list()) check_argument(e, x);
}

void check_rt(const OpEntry& e, const RtValue& v) {
  if (v.kind() == RtValue::Kind::DType && is_complex(v.dtype())) complex_unsupported(e, v.dtype());
  if (v.is_tensor() && v.tensor().defined() && is_complex(v.tensor().dtype())) complex_unsupported(e, v.tensor().dtype());
  if (v.kind() == RtValue::Kind::List)
    for (const RtValue& x : v.list()) check_rt(e, x);
}

}  // namespace

void check_complex_args(const OpEntry& e, const std::vector<Argument>& args, const std::vector<Kwarg>& kwargs) {
  if (e.complex) return;
  for (const Argument& a : args) check_argument(e, a);
  for (const Kwarg& k : kwargs) check_argument(e, k.value);
}

void check_complex_args(const OpEntry& e, const RtArgs& args) {
  if (e.complex) return;
  for (size_t i = 0; i < args.size(); ++i) check_rt(e, args.at(i));
}

std::vector<RtValue> run_kernel(const OpEntry& e, const RtArgs& args, KernelContext& ctx) {
  if (!e.kernel) TOROID_INTERNAL_ERROR("no reference kernel for " + e.name);
  check_complex_args(e, args);
  return e.kernel(args, ctx);
}

OpRegistry::OpRegistry() {
  auto add = [&](const SchemaRow& row, bool core) {
    OpEntry e{row.overload, parse_schema(row.schema, row.overload), row.treatment, core};
    if (e.schema.qualified_name() != e.name)
      TOROID_INTERNAL_ERROR("schema of " + e.name + " names " + e.schema.qualified_name());
    if (!index_.emplace(e.name, entries_.size()).second) TOROID_INTERNAL_ERROR("duplicate schema " + e.name);
    entries_.push_back(std::move(e));
  };
  for (const SchemaRow& row : kCoreRows) add(row, true);
  for (const SchemaRow& row : kExtraRows) add(row, false);
  for (const MetaImpl& m : all_meta_impls()) {
    auto it = index_.find(m.name);
    if (it == index_.end()) TOROID_INTERNAL_ERROR(std::string("meta function for unregistered op ") + m.name);
    if (entries_[it->second].meta) TOROID_INTERNAL_ERROR(std::string("two meta functions for ") + m.name);
    entries_[it->second].meta = m.meta;
  }
  for (const KernelImpl& k : all_kernel_impls()) {
    auto it = index_.find(k.name);
    if (it == index_.end()) TOROID_INTERNAL_ERROR(std::string("kernel for unregistered op ") + k.name);
    if (entries_[it->second].kernel) TOROID_INTERNAL_ERROR(std::string("two kernels for ") + k.name);
    entries_[it->second].kernel = k.kernel;
  }
  for (const char* name : kComplexOps) {
    auto it = index_.find(name);
    if (it == index_.end()) TOROID_INTERNAL_ERROR(std::string("complex op not registered: ") + name);
    entries_[it->second].complex = true;
  }
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry* registry = new OpRegistry();
  return *registry;
}

const OpEntry* OpRegistry::find(std::string_view qualified_name) const {
  auto it = index_.find(std::string(qualified_name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

}  // namespace toroid::ops
