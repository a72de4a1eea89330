// The tools parse their command lines with CLI11; its parse errors, in the tools' words
// ("unknown option '--x'", "-o needs a value"), for toroid::usage_error. Header-only: only the
// tools (which link CLI11) include it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

#include "toroid/support/tool.h"

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

// Parses `argv` into `app` (whose options the tool added) with -h/--help and --version on it and
// on its subcommands: the help is `usage` (hand-written), the version print_version's; a parse
// error is a usage_error in the tool's words. Exits for all three.
inline void parse_command_line_or_exit(CLI::App& app, int argc, char** argv, const char* tool, const char* usage) {
  bool help = false, version = false;
  std::vector<CLI::App*> apps = app.get_subcommands([](CLI::App*) { return true; });
  apps.push_back(&app);
  for (CLI::App* a : apps) {
    a->set_help_flag();
    a->add_flag("-h,--help", help);
    a->add_flag("--version", version);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    usage_error(tool, cli_message(e), usage);
  }
  if (help) {
    std::cout << usage;
    std::exit(0);
  }
  if (version) {
    print_version(tool);
    std::exit(0);
  }
}

}  // namespace toroid
