// The tools' command lines: options bound to variables, subcommands, and one parse step that
// handles -h/--help, --version and parse errors the same way in every tool. CLI11 parses; it is
// compiled once, in cli.cpp (its headers cost ~15 s of compile time in each file that uses them).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace toroid {

class CommandLine {
 public:
  // `tool` names the program in messages; `usage` is the hand-written help -h prints.
  CommandLine(const char* tool, const char* usage);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // NAME: a positional argument; -x or --name: an option taking one value.
  void option(const std::string& name, std::string& value);
  void option(const std::string& name, int& value);  // "--x takes a number, got 'y'" otherwise
  // An option that may be given many times, each value kept in order.
  void repeated_option(const std::string& name, std::vector<std::string>& values);
  void flag(const std::string& name, bool& value);
  // A subcommand with options of its own; at most one is given per command line.
  CommandLine& subcommand(const std::string& name);
  // For a subcommand: whether the command line named it.
  bool given() const;

  // Parses argv into the bound variables. -h/--help prints the usage and exits 0, --version the
  // version; a parse error is a usage error (exit 2) in the tool's words.
  void parse_or_exit(int argc, char** argv);

 private:
  CommandLine(const char* tool, const char* usage, CLI::App* sub);
  std::unique_ptr<CLI::App> root_;  // the tool's own; a subcommand's belongs to it
  CLI::App* app_;
  const char* tool_;
  const char* usage_;
  std::vector<std::unique_ptr<CommandLine>> subcommands_;
};

}  // namespace toroid
