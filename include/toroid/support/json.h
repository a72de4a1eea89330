// Writing JSON: a string as a quoted, escaped JSON string.
#pragma once

#include <string>
#include <string_view>

namespace toroid {

// `s` in double quotes, with quotes, backslashes and control characters escaped (\n, \t, \u00XX).
std::string json_quote(std::string_view s);

}  // namespace toroid
