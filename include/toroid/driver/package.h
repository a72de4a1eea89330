// AOT packages (.toroidpkg): a graph with its Wrapper IR, weights and compiled kernels in one
// file, run with no Python and no compiler. Writing one compiles the graph (kernels kept: the
// CPU's shared object, built with -march=native, and every CUDA cubin, both entry points);
// loading one runs the pipeline up to the Wrapper IR again (milliseconds), checks that it is the
// packaged program line for line, and takes the kernels from the file by the hash of the source
// they were built from, so a package from another toroid version or for other sizes is
// refused, not run wrongly.
//
// The file: a text manifest ("toroidpkg 1" ... "end"), then the blobs it names by offset and
// size (the graph's text, each parameter's bytes, each kernel image), 64-byte aligned.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "toroid/driver/compile.h"
#include "toroid/ops/rt_value.h"

namespace toroid::driver {

// Compiles `text` with `options` (its target, dynamic shapes, numerics flags; keep_kernels is
// set, and nothing is loaded, so packaging for CUDA needs NVRTC but no GPU) and writes the
// package to `path` with `params`, the graph's parameters in graph_inputs order (contiguous
// copies are written). A UserError when a parameter does not match its node's dtype and static
// sizes, or the file cannot be written.
void write_package(const std::string& path, const std::string& text, const std::string& filename,
                   const CompileOptions& options, const std::vector<ops::HostTensor>& params);

class Package {
 public:
  // Reads and checks a package, compiles its graph with the packaged kernels (no compiler runs)
  // and loads its parameters (onto the GPU once, for a CUDA package). UserError for a file that
  // is not a package, is truncated, or whose kernels do not fit this toroid or this CPU.
  static std::unique_ptr<Package> load(const std::string& path);

  // The graph's `input` nodes (its parameters come from the package).
  size_t num_inputs() const { return num_inputs_; }
  const CompiledModule& module() const { return *module_; }
  const std::string& text() const { return text_; }  // the graph's .tir text
  // The parameters' values on the host, in graph_inputs order (after the inputs).
  const std::vector<ops::RtValue>& host_params() const { return host_params_; }
  // Whether the file at `path` starts as a package does.
  static bool is_package(const std::string& path);
  const std::string& device() const { return device_; }

  // Host inputs in, host outputs out (a CUDA package copies them to the GPU and back).
  std::vector<ops::RtValue> run(const std::vector<ops::RtValue>& inputs);

 private:
  Package() = default;
  std::unique_ptr<CompiledModule> module_;
  std::vector<ops::RtValue> params_;  // on the module's device
  std::vector<ops::RtValue> host_params_;
  std::string text_;
  size_t num_inputs_ = 0;
  std::string device_;
};

}  // namespace toroid::driver
