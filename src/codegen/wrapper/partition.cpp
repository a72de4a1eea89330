// Graph partitions: the runs of lines a device could capture and replay as one graph.
#include "toroid/codegen/wrapper/wrapper.h"

namespace toroid::codegen::wrapper {

void partition_program(WrapperProgram& w) {
  w.partitions.clear();
  if (!w.target.is_cuda()) return;  // what a device captures (CUDA graphs)
  Partition open;
  bool in_run = false;
  auto close = [&](size_t end) {
    while (end > open.begin && w.lines[end - 1].kind == Line::Kind::Comment) --end;  // the next call's
    if (in_run && open.launches > 0) {
      open.end = end;
      w.partitions.push_back(open);
    }
    in_run = false;
  };
  for (size_t i = 0; i < w.lines.size(); ++i) {
    const Line& l = w.lines[i];
    for (const auto& p : l.programs) partition_program(*p);
    if (capture_barrier(l)) {
      close(i);
      continue;
    }
    if (l.kind == Line::Kind::Comment) continue;  // belongs to the call after it
    if (!in_run) {
      open = Partition{i, i, 0};
      in_run = true;
    }
    bool launch = l.kind == Line::Kind::KernelCall || l.kind == Line::Kind::ExternCall || l.kind == Line::Kind::UserKernel;
    open.launches += launch ? 1 : 0;
  }
  close(w.lines.size());
}

}  // namespace toroid::codegen::wrapper
