#include "cli.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "toroid/support/tool.h"

namespace toroid {

namespace {

// CLI11's parse errors in the tools' words ("unknown option '--x'", "-o needs a value").
std::string cli_message(const CLI::ParseError& e) {
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

}  // namespace

CommandLine::CommandLine(const char* tool, const char* usage)
    : root_(std::make_unique<CLI::App>("", tool)), app_(root_.get()), tool_(tool), usage_(usage) {}

CommandLine::CommandLine(const char* tool, const char* usage, CLI::App* sub) : app_(sub), tool_(tool), usage_(usage) {}

CommandLine::~CommandLine() = default;

void CommandLine::option(const std::string& name, std::string& value) { app_->add_option(name, value); }

void CommandLine::option(const std::string& name, int& value) { app_->add_option(name, value); }

void CommandLine::repeated_option(const std::string& name, std::vector<std::string>& values) {
  app_->add_option(name, values)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void CommandLine::flag(const std::string& name, bool& value) { app_->add_flag(name, value); }

CommandLine& CommandLine::subcommand(const std::string& name) {
  app_->require_subcommand(0, 1);
  CLI::App* sub = app_->add_subcommand(name);
  subcommands_.push_back(std::unique_ptr<CommandLine>(new CommandLine(tool_, usage_, sub)));
  return *subcommands_.back();
}

bool CommandLine::given() const { return app_->parsed(); }

void CommandLine::parse_or_exit(int argc, char** argv) {
  bool help = false, version = false;
  std::vector<CLI::App*> apps = app_->get_subcommands([](CLI::App*) { return true; });
  apps.push_back(app_);
  for (CLI::App* a : apps) {
    a->set_help_flag();
    a->add_flag("-h,--help", help);
    a->add_flag("--version", version);
  }
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    usage_error(tool_, cli_message(e), usage_);
  }
  if (help) {
    std::cout << usage_;
    std::exit(0);
  }
  if (version) {
    print_version(tool_);
    std::exit(0);
  }
}

}  // namespace toroid
