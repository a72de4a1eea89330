// toroid's environment variables, read one way: unset or empty means the default, and a value
// that is not of the variable's kind is a UserError naming the variable and what it takes
// (docs/environment.md lists every variable).
#pragma once

#include <cstdint>
#include <optional>

namespace toroid {

// "0" or "1"; nullopt when unset or empty.
std::optional<bool> env_flag(const char* name);
// A positive integer (at most 2^40); nullopt when unset or empty.
std::optional<int64_t> env_count(const char* name);

}  // namespace toroid
