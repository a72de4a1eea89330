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

}  // namespace

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
