// The loop IR verifier: lowered programs pass it; programs broken on purpose fail it with a
// message naming the buffer and the broken rule.
#include <gtest/gtest.h>

#include <algorithm>

#include "toroid/graph/text.h"
#include "toroid/loop/ir.h"
#include "toroid/loop/lower.h"
#include "toroid/ops/registry.h"
#include "toroid/support/error.h"

namespace toroid::loop {
namespace {

constexpr const char* kGraph = R"(graph @g functional {
  sym s0 : hint=4, range=[1, inf]
  %x = input : f32[s0, 64]
  %w = input : f32[64, 32]
  %m = aten.mm.default(%x, %w) : f32[s0, 32]
  %e = aten.exp.default(%m) : f32[s0, 32]
  %s = aten.sum.dim_IntList(%e, [1], true) : f32[s0, 1]
  %y = aten.div.Tensor(%e, %s) : f32[s0, 32]
  output %y
})";

class LoopVerify : public ::testing::Test {
 protected:
  void SetUp() override {
    ops::install_schema_op_info();
    graph_ = parse_graph(kGraph);
    LowerOptions o;
    o.verify_each = true;  // after lowering and after split_reductions
    program_ = lower(*graph_, o);
  }
  std::string error() {
    try {
      verify_program(*program_);
    } catch (const InternalError& e) {
      return e.what();
    }
    return "";
  }
  Buffer& find(BufferKind kind) {
    for (auto& b : program_->buffers)
      if (b->kind == kind) return *b;
    throw std::runtime_error("no such buffer");
  }
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<LoopProgram> program_;
};

TEST_F(LoopVerify, LoweredProgramsPass) { EXPECT_EQ(error(), ""); }

TEST_F(LoopVerify, ABufferThatReadsALaterOneIsCaught) {
  auto& bufs = program_->buffers;
  auto reduction = std::find_if(bufs.begin(), bufs.end(), [](const auto& b) { return b->kind == BufferKind::Reduction; });
  ASSERT_NE(reduction, bufs.end());
  std::string name = (*reduction)->name;
  std::rotate(bufs.begin() + 2, reduction, reduction + 1);  // before the mm it reads (after the inputs)
  std::string e = error();
  EXPECT_NE(e.find(name + " (reduction): reads"), std::string::npos) << e;
  EXPECT_NE(e.find("which comes later"), std::string::npos) << e;
}

TEST_F(LoopVerify, AnIndexVariableOutsideTheBufferIsCaught) {
  Buffer& r = find(BufferKind::Reduction);
  r.body = binary(Op::Add, r.body, cast(index_value(index_var(5)), r.body.dtype()));
  std::string e = error();
  EXPECT_NE(e.find("uses i5, which is neither a symbol of the graph nor an index variable of this buffer"), std::string::npos)
      << e;
}

TEST_F(LoopVerify, ALibraryCallTheTableHasNotIsCaught) {
  find(BufferKind::Extern).library = LibraryCall::Convolution;
  std::string e = error();
  EXPECT_NE(e.find("calls the library's convolution, which the table has not for aten.mm.default in f32 on cpu"),
            std::string::npos)
      << e;
}

TEST_F(LoopVerify, RankMismatchAndForeignStorageAreCaught) {
  Buffer& r = find(BufferKind::Reduction);
  r.strides.pop_back();
  EXPECT_NE(error().find("2 sizes but 1 strides"), std::string::npos) << error();
  r.strides.push_back(SymExpr::integer(1));
  Buffer other;
  r.storage = &other;
  EXPECT_NE(error().find("its storage is not a buffer of the program"), std::string::npos) << error();
}

}  // namespace
}  // namespace toroid::loop
