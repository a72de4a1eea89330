// The tools parse their command lines with CLI11; its parse errors, in the tools' words
// ("unknown option '--x'", "-o needs a value"), for toroid::usage_error. Header-only: only the
// tools (which link CLI11) include it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace toroid {

inline std::string cli_message(const CLI::ParseError& e) {
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {  // "The following argument(s) was/were not expected: X ..."
    std::string first = what.substr(what.find(": ") + 2);
    first = first.substr(0, first.find(' '));
    return (first.rfind('-', 0) == 0 ? "unknown option '" : "unexpected argument '") + first + "'";
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) && what.rfind("Could not convert: ", 0) == 0) {
    std::string rest = what.substr(std::string("Could not convert: ").size());  // "--arch = abc"
    size_t eq = rest.find(" = ");
    if (eq != std::string::npos) return rest.substr(0, eq) + " takes a number, got '" + rest.substr(eq + 3) + "'";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.find(" required ") != std::string::npos)
    return what.substr(0, what.find(':')) + " needs a value";  // "-o: 1 required TEXT missing"
  return what;
}

}  // namespace toroid
