// toroid-kernel-ir: which parameters a user's CUDA kernels write, from their PTX (the mutation
// analysis a user kernel's functional form relies on; docs/user_kernels.md).
//
//   toroid-kernel-ir FILE.cu|FILE.ptx|FILE.ttir|FILE.tir [--arch N] [--emit=ptx]
//
// Exit status: 0 on success, 1 on bad input (a source NVRTC rejects, PTX that cannot be read),
// 2 on bad command-line usage, 3 on an internal error.
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli.h"
#include "toroid/codegen/cuda/kernel_ir_analysis.h"
#include "toroid/driver/user_kernels.h"
#include "toroid/graph/graph.h"
#include "toroid/graph/text.h"
#include "toroid/graph/verify.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"
#include "toroid/support/tool.h"
#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/nvrtc.h"
#endif

namespace {

constexpr const char* kUsage =
    "usage: toroid-kernel-ir FILE [options]\n"
    "\n"
    "Prints, for each kernel of a CUDA C++ file (.cu, compiled to PTX with NVRTC), a PTX file\n"
    "(.ptx; FILE '-' reads PTX from standard input) or a Triton TTIR file (.ttir), the parameters\n"
    "it writes and reads, and each place the analysis was conservative. For a graph (.tir): each\n"
    "user-kernel call's kernel analysed against its tensors, and an error at a call whose kernel\n"
    "writes a tensor its writes= / tensors_to_clone= does not name.\n"
    "\n"
    "options:\n"
    "  --arch N      compile .cu sources for compute_N (default 90)\n"
    "  --emit=ptx    print the PTX a .cu source compiles to instead\n"
    "  --version     print toroid-kernel-ir's version\n"
    "  -h, --help    show this help\n";

struct Options {
  std::string input;
  int arch = 90;
  bool emit_ptx = false;
};

[[noreturn]] void usage_error(const std::string& message) { toroid::usage_error("toroid-kernel-ir", message, kUsage); }

Options parse_command_line(int argc, char** argv) {
  Options o;
  std::string emit;
  toroid::CommandLine app{"toroid-kernel-ir", kUsage};
  app.option("FILE", o.input);
  app.option("--arch", o.arch);
  app.option("--emit", emit);
  app.parse_or_exit(argc, argv);
  if (o.arch < 50 || o.arch > 200) usage_error("--arch takes a compute capability such as 90");
  if (!emit.empty() && emit != "ptx") usage_error("--emit takes ptx, got '" + emit + "'");
  o.emit_ptx = emit == "ptx";
  if (o.input.empty()) usage_error("no input file (use '-' for PTX on standard input)");
  return o;
}

std::string positions(const std::vector<size_t>& v) {
  std::string s;
  for (size_t i : v) s += (s.empty() ? "" : ", ") + std::to_string(i);
  return s.empty() ? "none" : s;
}

bool ends_with(const std::string& s, const char* suffix) {
  std::string x = suffix;
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

bool is_cuda_source(const std::string& path) { return ends_with(path, ".cu") || ends_with(path, ".cuh"); }

int run_graph(const Options& o, const std::string& text) {
  toroid::ops::install_schema_op_info();
  std::unique_ptr<toroid::Graph> g = toroid::parse_graph(text, o.input);
  toroid::verify_or_throw(*g);
  for (const toroid::driver::UserKernelCall& c : toroid::driver::check_user_kernels(*g, o.arch)) {
    std::cout << c.node->target() << " \"" << c.node->args()[0].str() << "\" (line " << c.node->loc().line
              << "): writes tensors " << positions(c.written) << "; reads " << positions(c.read) << "\n";
    for (const std::string& n : c.notes) std::cout << "  note: " << n << "\n";
  }
  return 0;
}

int run(const Options& o) {
  std::string text = toroid::read_file(o.input);
  if (ends_with(o.input, ".tir")) return run_graph(o, text);
  std::string ptx = text;
  if (is_cuda_source(o.input)) {
#ifdef TOROID_WITH_CUDA
    ptx = toroid::runtime::cuda::compile_user_ptx(text, o.input, o.arch);
#else
    toroid::user_error(o.input + ": compiling CUDA C++ needs a toroid built with the CUDA toolkit (give its PTX instead)");
#endif
  } else if (o.emit_ptx) {
    toroid::user_error("--emit=ptx needs a .cu source");
  }
  if (o.emit_ptx) {
    std::cout << ptx;
    return 0;
  }
  std::string name = o.input == "-" ? "<stdin>" : o.input;
  if (is_cuda_source(o.input)) name += " (its PTX)";
  bool ttir = ends_with(o.input, ".ttir");
  namespace cuda = toroid::codegen::cuda;
  std::cout << cuda::print_kernel_mutations(ttir ? cuda::analyze_ttir_mutations(text, name)
                                                 : cuda::analyze_ptx_mutations(ptx, name));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse_command_line(argc, argv);
  return toroid::run_tool("toroid-kernel-ir", [&] { return run(options); });
}
