// toroid-opt: read a .tir graph, run passes over it, print the result.
//
//   toroid-opt FILE [--passes=dce,cse] [--print-after-all] [--verify-each] [--no-verify] [-o OUT]
//
// Exit status: 0 on success, 1 on bad input (parse or verification errors, printed as
// "file:line:col: error: message"), 2 on bad command-line usage, 3 on an internal error.
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/ops/registry.h"
#include "toroid/passes/pass_manager.h"
#include "toroid/support/error.h"
#include "toroid/support/tool.h"
#include "toroid/support/file.h"

namespace {

constexpr const char* kUsage =
    "usage: toroid-opt FILE [options]\n"
    "\n"
    "Reads a .tir graph (FILE '-' reads standard input), runs passes, prints the graph.\n"
    "\n"
    "options:\n"
    "  --passes=P1,P2     passes to run, in order (see --list-passes)\n"
    "  --verify-each      verify before the first pass and after every pass, including the\n"
    "                     check that no pass creates new aliasing of graph outputs\n"
    "  --no-verify        do not verify the parsed graph or the result\n"
    "  --print-after-all  print the graph to stderr after every pass\n"
    "  -o OUT             write the result to OUT instead of standard output\n"
    "  --list-passes      list the passes and exit\n"
    "  --version          print toroid-opt's version\n"
    "  -h, --help         show this help\n";

struct Options {
  std::string input;
  std::string output;
  std::string passes;
  bool verify_each = false;
  bool verify = true;
  bool print_after_all = false;
};

[[noreturn]] void usage_error(const std::string& message) { toroid::usage_error("toroid-opt", message, kUsage); }

Options parse_command_line(int argc, char** argv) {
  Options o;
  bool no_verify = false;
  toroid::CommandLine app{"toroid-opt", kUsage};
  app.option("FILE", o.input);
  app.option("--passes", o.passes);
  app.flag("--verify-each", o.verify_each);
  app.flag("--no-verify", no_verify);
  app.flag("--print-after-all", o.print_after_all);
  app.option("-o", o.output);
  bool list = false;
  app.flag("--list-passes", list);
  app.parse_or_exit(argc, argv);
  if (list) {
    for (const toroid::PassInfo& p : toroid::registered_passes()) std::cout << p.name << "\t" << p.summary << "\n";
    std::exit(0);
  }
  o.verify = !no_verify;
  if (o.input.empty()) usage_error("no input file (use '-' for standard input)");
  try {
    toroid::parse_pass_list(o.passes);  // an unknown pass is a command-line mistake
  } catch (const toroid::UserError& e) {
    usage_error(e.message());
  }
  return o;
}

int run(const Options& o) {
  toroid::ops::install_schema_op_info();
  std::string text = toroid::read_file(o.input);
  std::string name = o.input == "-" ? "<stdin>" : o.input;
  std::unique_ptr<toroid::Graph> graph = toroid::parse_graph(text, name);
  std::vector<const toroid::PassInfo*> passes = toroid::parse_pass_list(o.passes);

  if (o.verify && !o.verify_each) toroid::verify_or_throw(*graph);
  toroid::PassManagerOptions pm;
  pm.verify_each = o.verify_each;
  pm.print_after_all = o.print_after_all;
  toroid::run_passes(*graph, passes, pm);
  if (o.verify && !o.verify_each && !passes.empty()) toroid::verify_or_throw(*graph, "after the passes");

  std::string printed = toroid::print_graph(*graph);
  if (o.output.empty()) {
    std::cout << printed;
    std::cout.flush();
  } else {
    toroid::write_file_atomic(o.output, printed);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_command_line(argc, argv);
  return toroid::run_tool("toroid-opt", [&] { return run(options); });
}
