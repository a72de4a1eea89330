// The in-process executor of a Wrapper IR program: runs its lines against the kernels of a
// loaded shared object. Everything that does not depend on the inputs' sizes (kernel symbols,
// buffer slots, constants) is resolved once, when the executor is built.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "toroid/codegen/wrapper/ir.h"
#include "toroid/ops/rt_value.h"
#include "toroid/runtime/so_cache.h"
#include "toroid/sym/shape_env.h"

namespace toroid::runtime {

struct RunStats {
  int64_t peak_bytes = 0;  // most bytes of buffers the program allocated that were live at once
  int64_t planned_peak_bytes = 0;  // the plan's estimate of the same, for this run's sizes
};

class Executor {
 public:
  Executor(const codegen::wrapper::WrapperProgram& program, const SharedObject& so);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs with `binding` (every backed symbol bound from the inputs; the caller checked the
  // guards). Inputs as graph_inputs orders them. Returns the outputs as interpret() does.
  // `outputs` (indexed like the graph's outputs, entries may be null) is caller memory that an
  // output's buffer is placed in where output_binding.h allows; the returned views show where
  // each output ended up.
  std::vector<ops::RtValue> run(const std::vector<ops::RtValue>& inputs, sym::Binding binding, RunStats* stats = nullptr,
                                const std::vector<std::shared_ptr<ops::HostStorage>>& outputs = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace toroid::runtime
