// The default, name-based OpInfoProvider (until the ops layer installs a schema-backed one).
#include "toroid/graph/op_info.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "toroid/graph/graph.h"

namespace toroid {

namespace {

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

bool is_inplace_base(std::string_view base) {
  if (base.size() > 4 && base.starts_with("__") && base.ends_with("__")) {
    // Python in-place dunders: __iand__, __ior__, __ixor__, __ilshift__, __irshift__, ...
    static constexpr std::array<std::string_view, 12> kInplaceDunders = {
        "__iadd__", "__isub__", "__imul__", "__idiv__", "__itruediv__", "__ifloordiv__",
        "__imod__", "__iand__", "__ior__",  "__ixor__", "__ilshift__",  "__irshift__"};
    return std::find(kInplaceDunders.begin(), kInplaceDunders.end(), base) != kInplaceDunders.end();
  }
  return base.size() > 1 && base.ends_with('_') && !base.ends_with("__");
}

bool is_out_overload(std::string_view overload) {
  return overload.starts_with("out") || overload.ends_with("_out");
}

bool is_out_kwarg(std::string_view name) {
  if (!name.starts_with("out")) return false;
  return std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_random_base(std::string_view base) {
  static constexpr std::array<std::string_view, 12> kRandom = {
      "rand",     "dropout", "bernoulli", "normal",  "uniform",   "exponential",
      "multinomial", "poisson", "cauchy", "geometric", "log_normal", "randperm"};
  return std::any_of(kRandom.begin(), kRandom.end(),
                     [&](std::string_view r) { return base.find(r) != std::string_view::npos; });
}

bool is_effectful_base(std::string_view base) {
  static constexpr std::array<std::string_view, 3> kEffects = {"print", "sym_constrain_range", "record_stream"};
  if (base.starts_with("_assert") || base.starts_with("assert")) return true;
  return std::any_of(kEffects.begin(), kEffects.end(), [&](std::string_view e) {
    return base == e || (base.size() > e.size() && base.starts_with(e) && base[e.size()] == '_') ||
           (base.size() == e.size() + 1 && base[0] == '_' && base.substr(1) == e);
  });
}

std::unique_ptr<OpInfoProvider>& provider_slot() {
  static std::unique_ptr<OpInfoProvider> provider;
  return provider;
}

}  // namespace

std::string op_base_name(const std::string& target) {
  std::vector<std::string_view> parts = split_dots(target);
  if (parts.size() == 1) return std::string(parts[0]);
  if (parts.size() == 2) return std::string(parts[1]);
  return std::string(parts[parts.size() - 2]);
}

std::string op_overload_name(const std::string& target) {
  std::vector<std::string_view> parts = split_dots(target);
  if (parts.size() < 3) return {};
  return std::string(parts.back());
}

std::vector<size_t> OpInfoProvider::mutated_args(const Node& call) const {
  if (!call.is_call()) return {};
  if (is_inplace_base(op_base_name(call.target())) && !call.args().empty()) return {0};
  return {};
}

std::vector<std::string> OpInfoProvider::mutated_kwargs(const Node& call) const {
  std::vector<std::string> out;
  if (!call.is_call() || !is_out_overload(op_overload_name(call.target()))) return out;
  for (const Kwarg& k : call.kwargs()) {
    if (is_out_kwarg(k.name)) out.push_back(k.name);
  }
  return out;
}

bool OpInfoProvider::has_side_effects(const Node& call) const {
  if (!call.is_call()) return false;
  if (!mutated_args(call).empty() || !mutated_kwargs(call).empty()) return true;
  return is_effectful_base(op_base_name(call.target()));
}

bool OpInfoProvider::is_deterministic(const Node& call) const {
  if (!call.is_call()) return true;
  return !is_random_base(op_base_name(call.target()));
}

void OpInfoProvider::check_call(const Node&, Diagnostics&) const {}

const OpInfoProvider& op_info() {
  static const OpInfoProvider kDefault;
  const auto& slot = provider_slot();
  return slot ? *slot : kDefault;
}

void set_op_info(std::unique_ptr<OpInfoProvider> provider) { provider_slot() = std::move(provider); }

}  // namespace toroid
