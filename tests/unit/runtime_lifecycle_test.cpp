// The Wrapper IR's lifecycle checks: the compile-time verifier (verify_wrapper) catches plans
// that use, free or reuse memory out of order, and the executors catch a broken plan at run
// time with the line at fault (with $TOROID_VERIFY_LIFECYCLE=1, also a peak above the plan's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "toroid/bind/inputs.h"
#include "toroid/driver/compile.h"
#include "toroid/interp/interpreter.h"
#include "toroid/runtime/executor.h"
#include "toroid/support/error.h"

namespace {

using toroid::codegen::wrapper::Line;
using toroid::codegen::wrapper::WrapperProgram;
using toroid::ops::HostTensor;
using toroid::ops::RtValue;

// Two chains of pointwise, reduction and library calls whose intermediates are freed and
// reused; both outputs stay live.
constexpr const char* kLifecycleGraph = R"(graph @g functional {
  %x = input : f32[32, 32]
  %w = input : f32[32, 32]
  %a = aten.exp.default(%x) : f32[32, 32]
  %m = aten.mm.default(%a, %w) : f32[32, 32]
  %c = aten.sin.default(%m) : f32[32, 32]
  %d = aten.mm.default(%c, %w) : f32[32, 32]
  %e = aten.cos.default(%d) : f32[32, 32]
  %s = aten.sum.dim_IntList(%e, [1]) : f32[32]
  output %d, %s
})";

// nonzero's count u0 sizes two intermediates (pooled: a pool allocated once u0 is bound) and a
// static output.
constexpr const char* kPooledGraph = R"(graph @pooled functional {
  sym s0 : hint=32, range=[1, inf]
  sym u0 : unbacked, range=[0, inf]
  %x = input : f32[s0]
  %t = input : f32[s0, 8]
  %w = input : f32[8, 8]
  %m = aten.gt.Scalar(%x, 0) : bool[s0]
  %nz = aten.nonzero.default(%m) : i64[u0, 1]
  %i = aten.view.default(%nz, [-1]) : i64[u0]{storage=%nz}
  %rows = aten.index_select.default(%t, 0, %i) : f32[u0, 8]
  %r2 = aten.mul.Tensor(%rows, 2.0) : f32[u0, 8]
  %h = aten.mm.default(%r2, %w) : f32[u0, 8]
  %a = aten.relu.default(%h) : f32[u0, 8]
  %s = aten.sum.dim_IntList(%a, [0]) : f32[8]
  output %s
})";

class Lifecycle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("toroid-lifecycle-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    ::unsetenv("TOROID_VERIFY_LIFECYCLE");
  }
  static std::unique_ptr<toroid::driver::CompiledModule> compile(bool kernels, const char* graph = kLifecycleGraph) {
    toroid::driver::CompileOptions o;
    o.compile = kernels;
    return toroid::driver::CompiledModule::compile(graph, "lifecycle.tir", o);
  }
  // kPooledGraph's inputs: x with `positive` entries > 0.
  static std::vector<RtValue> pooled_inputs(int64_t positive) {
    HostTensor x = HostTensor::zeros(toroid::DType::Float32, {32});
    HostTensor t = HostTensor::zeros(toroid::DType::Float32, {32, 8});
    HostTensor w = HostTensor::zeros(toroid::DType::Float32, {8, 8});
    for (int64_t i = 0; i < 32; ++i) x.set_double(i, i % 3 == 0 && i / 3 < positive ? 1.0 : -1.0);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, 0.01 * static_cast<double>(i % 23) - 0.1);
    for (int64_t i = 0; i < w.numel(); ++i) w.set_double(i, 0.1 * static_cast<double>(i % 7) - 0.3);
    return {RtValue(x), RtValue(t), RtValue(w)};
  }
  static std::vector<RtValue> inputs() {
    HostTensor x = HostTensor::zeros(toroid::DType::Float32, {32, 32});
    HostTensor w = HostTensor::zeros(toroid::DType::Float32, {32, 32});
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.set_double(i, 0.01 * static_cast<double>(i % 17));
      w.set_double(i, 0.02 * static_cast<double>(i % 5) - 0.04);
    }
    return {RtValue(x), RtValue(w)};
  }
  static std::filesystem::path dir_;
};
std::filesystem::path Lifecycle::dir_;

size_t find_line(const WrapperProgram& w, Line::Kind kind, size_t from = 0) {
  for (size_t i = from; i < w.lines.size(); ++i)
    if (w.lines[i].kind == kind) return i;
  ADD_FAILURE() << "no such line";
  return 0;
}

// The text of the InternalError `f` throws ("" if none).
template <class F>
std::string internal_error(F f) {
  try {
    f();
  } catch (const toroid::InternalError& e) {
    return e.what();
  }
  return "";
}

TEST_F(Lifecycle, ThePlanVerifies) {
  auto m = compile(false);
  const WrapperProgram& w = m->current().wrapper;
  EXPECT_NO_THROW(toroid::codegen::wrapper::verify_wrapper(w));
  // The second chain reuses the first one's blocks.
  bool reuses = false;
  for (const Line& l : w.lines) reuses |= l.kind == Line::Kind::Reuse;
  EXPECT_TRUE(reuses);
  // Two 4 KiB blocks at once: exp's (then sin's) and the first mm's (then the second's); cos
  // and the sum fuse into one kernel whose 128-byte result comes after sin's block is freed.
  ASSERT_TRUE(w.planned_peak_bytes.is_constant());
  EXPECT_EQ(w.planned_peak_bytes.int_value(), 2 * 4096);
}

TEST_F(Lifecycle, VerifierCatchesAFreeBeforeALaterUse) {
  auto m = compile(false);
  WrapperProgram w = m->current().wrapper;
  size_t f = find_line(w, Line::Kind::Free);
  Line free_line = w.lines[f];
  w.lines.erase(w.lines.begin() + static_cast<long>(f));
  // Free it before the first call that touches anything.
  size_t call = find_line(w, Line::Kind::KernelCall);
  w.lines.insert(w.lines.begin() + static_cast<long>(call), free_line);
  std::string e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(w); });
  EXPECT_NE(e.find("wrapper verifier: line"), std::string::npos) << e;
  EXPECT_TRUE(e.find("before it is allocated") != std::string::npos || e.find("freed it") != std::string::npos) << e;
}

TEST_F(Lifecycle, VerifierCatchesAMissingAlloc) {
  auto m = compile(false);
  WrapperProgram w = m->current().wrapper;
  size_t a = find_line(w, Line::Kind::Alloc);
  std::string name = w.slots[static_cast<size_t>(w.lines[a].slot)].name;
  w.lines.erase(w.lines.begin() + static_cast<long>(a));
  std::string e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(w); });
  EXPECT_NE(e.find(name + " is used before it is allocated"), std::string::npos) << e;
}

TEST_F(Lifecycle, VerifierCatchesATooSmallReuseAndAFreedOutput) {
  auto m = compile(false);
  WrapperProgram w = m->current().wrapper;
  size_t r = find_line(w, Line::Kind::Reuse);
  // The block it reuses cannot hold twice the buffer.
  WrapperProgram big = w;
  big.lines[r].nbytes = big.lines[r].nbytes * 2;
  std::string e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(big); });
  EXPECT_NE(e.find("not provably the"), std::string::npos) << e;
  // Freeing the graph's output.
  Line f;
  f.kind = Line::Kind::Free;
  f.slot = w.outputs()[0].tensor.slot;
  w.lines.insert(w.lines.end() - 1, f);
  e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(w); });
  EXPECT_NE(e.find("which the graph returns"), std::string::npos) << e;
}

TEST_F(Lifecycle, ExecutorNamesTheLineThatFreedWhatACallReads) {
  auto m = compile(true);
  const toroid::driver::Specialization& s = m->current();
  WrapperProgram w = s.wrapper;
  // Move the first Free up to just before the call that last reads its buffer.
  size_t f = find_line(w, Line::Kind::Free);
  Line free_line = w.lines[f];
  size_t reader = f;
  while (reader > 0 && w.lines[reader].kind != Line::Kind::KernelCall && w.lines[reader].kind != Line::Kind::ExternCall)
    --reader;
  w.lines.erase(w.lines.begin() + static_cast<long>(f));
  w.lines.insert(w.lines.begin() + static_cast<long>(reader), free_line);
  std::unique_ptr<toroid::runtime::Executor> broken = toroid::runtime::make_cpu_executor(w, s.so);
  toroid::sym::Binding b = toroid::bind::bind_inputs(*s.graph, inputs());
  std::string e = internal_error([&] { broken->run(inputs(), b); });
  EXPECT_NE(e.find("lifecycle: line " + std::to_string(reader + 2) + " uses " +
                       w.slots[static_cast<size_t>(free_line.slot)].name +
                   ", which line " + std::to_string(reader + 1) + " freed"),
            std::string::npos)
      << e;
}

TEST_F(Lifecycle, VerifiedRunsMatchAndStayUnderThePlan) {
  ::setenv("TOROID_VERIFY_LIFECYCLE", "1", 1);
  auto m = compile(true);
  std::vector<RtValue> in = inputs();
  toroid::runtime::RunStats stats;
  std::vector<RtValue> got = m->run(in, &stats);
  std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t k = 0; k < got[i].tensor().numel(); ++k)
      ASSERT_NEAR(got[i].tensor().get_double(k), want[i].tensor().get_double(k), 1e-3);
  EXPECT_GT(stats.peak_bytes, 0);
  EXPECT_LE(stats.peak_bytes, stats.planned_peak_bytes);
  // A plan that claims less than the run holds is caught.
  const toroid::driver::Specialization& s = m->current();
  WrapperProgram w = s.wrapper;
  w.planned_peak_bytes = toroid::SymExpr::integer(stats.peak_bytes - 1);
  std::unique_ptr<toroid::runtime::Executor> lying = toroid::runtime::make_cpu_executor(w, s.so);
  std::string e =
      internal_error([&] { lying->run(in, toroid::bind::bind_inputs(*s.graph, in)); });
  EXPECT_NE(e.find("more than the " + std::to_string(stats.peak_bytes - 1) + " its plan allows"), std::string::npos) << e;
  ::unsetenv("TOROID_VERIFY_LIFECYCLE");
}

// %x is donated: its memory goes to %r's buffer after the product reads it last.
constexpr const char* kDonatedGraph = R"(graph @donated functional {
  %x = input donated : f32[32, 32]
  %w = input : f32[32, 32]
  %m = aten.mm.default(%x, %w) : f32[32, 32]
  %p = aten.mm.default(%m, %w) : f32[32, 32]
  %r = aten.sin.default(%p) : f32[32, 32]
  %s = aten.sum.dim_IntList(%r, [1]) : f32[32]
  output %m, %s
})";

TEST_F(Lifecycle, DonatedInputsAreFreedAndReusedAfterTheirLastRead) {
  auto m = compile(false, kDonatedGraph);
  const WrapperProgram& w = m->current().wrapper;
  EXPECT_NO_THROW(toroid::codegen::wrapper::verify_wrapper(w));
  const int x = w.inputs.at(0).slot;
  size_t r = find_line(w, Line::Kind::Reuse);
  EXPECT_EQ(w.lines[r].from, x);
  // An input its caller did not donate is never freed.
  WrapperProgram kept = w;
  kept.slots[static_cast<size_t>(x)].donated = false;
  std::string e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(kept); });
  EXPECT_NE(e.find("which is an input or constant its caller did not donate"), std::string::npos) << e;
  // An output in the donated memory is returned as a view of that input, nothing else.
  WrapperProgram returned = w;
  returned.lines.back().outputs[0].tensor.slot = w.lines[r].slot;
  e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(returned); });
  EXPECT_NE(e.find("in the memory of donated input arg0, but not as a view of it"), std::string::npos) << e;
  // Run with the lifecycle checks (freed blocks poisoned): the results match, the donated input
  // was written (its memory held %p), and its bytes count in no peak.
  ::setenv("TOROID_VERIFY_LIFECYCLE", "1", 1);
  auto run = compile(true, kDonatedGraph);
  std::vector<RtValue> in = inputs();
  std::vector<RtValue> want = toroid::interp::interpret(run->graph(), {RtValue(in[0].tensor().clone()), in[1]});
  HostTensor x_before = in[0].tensor().clone();
  toroid::runtime::RunStats stats;
  std::vector<RtValue> got = run->run(in, &stats);
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t k = 0; k < got[i].tensor().numel(); ++k)
      ASSERT_NEAR(got[i].tensor().get_double(k), want[i].tensor().get_double(k), 1e-3);
  bool written = false;
  for (int64_t k = 0; k < x_before.numel(); ++k) written |= x_before.get_double(k) != in[0].tensor().get_double(k);
  EXPECT_TRUE(written);
  EXPECT_LE(stats.peak_bytes, stats.planned_peak_bytes);
  ::unsetenv("TOROID_VERIFY_LIFECYCLE");
}

TEST_F(Lifecycle, UnbackedSizesArePooledAfterTheLineThatBindsThem) {
  auto m = compile(false, kPooledGraph);
  const WrapperProgram& w = m->current().wrapper;
  EXPECT_NO_THROW(toroid::codegen::wrapper::verify_wrapper(w));
  ASSERT_EQ(w.pools.size(), 1u);
  size_t defs = find_line(w, Line::Kind::SymbolDefs);
  size_t pool = find_line(w, Line::Kind::PoolAlloc);
  size_t pool_free = find_line(w, Line::Kind::PoolFree);
  ASSERT_EQ(w.lines[defs].defs.size(), 1u);
  EXPECT_EQ(w.lines[defs].defs[0].symbol.str(), "u0");
  EXPECT_LT(defs, pool);
  int pooled = 0;
  for (size_t i = 0; i < w.lines.size(); ++i)
    if (w.lines[i].kind == Line::Kind::Alloc && w.lines[i].pool == 0) {
      ++pooled;
      EXPECT_GT(i, pool);
      EXPECT_LT(i, pool_free);
    }
  EXPECT_EQ(pooled, 2);  // index_select's and mm's results; the static sum is not pooled

  // The pool allocated before u0 is bound: its size reads u0 too early.
  WrapperProgram early = w;
  Line p = early.lines[pool];
  early.lines.erase(early.lines.begin() + static_cast<long>(pool));
  early.lines.insert(early.lines.begin() + static_cast<long>(defs), p);
  std::string e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(early); });
  EXPECT_NE(e.find("reads u0 before a line binds it"), std::string::npos) << e;
  // Freed while a buffer in it is live.
  WrapperProgram freed = w;
  Line f = freed.lines[pool_free];
  freed.lines.erase(freed.lines.begin() + static_cast<long>(pool_free));
  freed.lines.insert(freed.lines.begin() + static_cast<long>(pool) + 2, f);
  e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(freed); });
  EXPECT_NE(e.find("frees pool0 while"), std::string::npos) << e;
  // A block past the pool's end.
  WrapperProgram outside = w;
  for (Line& l : outside.lines)
    if (l.kind == Line::Kind::Alloc && l.pool == 0) l.offset = outside.pools[0].nbytes;
  e = internal_error([&] { toroid::codegen::wrapper::verify_wrapper(outside); });
  EXPECT_NE(e.find("is not provably inside pool0"), std::string::npos) << e;
}

TEST_F(Lifecycle, PooledRunsMatchForEveryCountAndStayUnderThePlan) {
  ::setenv("TOROID_VERIFY_LIFECYCLE", "1", 1);
  auto m = compile(true, kPooledGraph);
  for (int64_t positive : {0, 1, 5, 11}) {
    std::vector<RtValue> in = pooled_inputs(positive);
    toroid::runtime::RunStats stats;
    std::vector<RtValue> got = m->run(in, &stats);
    std::vector<RtValue> want = toroid::interp::interpret(m->graph(), in);
    for (int64_t k = 0; k < 8; ++k)
      ASSERT_NEAR(got[0].tensor().get_double(k), want[0].tensor().get_double(k), 1e-4) << positive;
    EXPECT_LE(stats.peak_bytes, stats.planned_peak_bytes) << positive;
  }
  ::unsetenv("TOROID_VERIFY_LIFECYCLE");
}

}  // namespace

namespace {

// Graph partitions (CUDA programs): the runs between lines a captured graph cannot replay.
TEST_F(Lifecycle, PartitionsStopAtSyncsAndDataSizedMemory) {
  toroid::driver::CompileOptions o;
  o.compile = false;
  o.target = toroid::Target::cuda();
  auto m = toroid::driver::CompiledModule::compile(kPooledGraph, "pooled.tir", o);
  WrapperProgram w = m->current().wrapper;
  ASSERT_GE(w.partitions.size(), 2u);
  for (const toroid::codegen::wrapper::Partition& p : w.partitions) {
    EXPECT_GT(p.launches, 0);
    for (size_t i = p.begin; i < p.end; ++i) EXPECT_EQ(toroid::codegen::wrapper::capture_barrier(w.lines[i]), nullptr);
  }
  EXPECT_NO_THROW(toroid::codegen::wrapper::verify_wrapper(w));
  // A partition stretched over the nonzero line (a device kernel that allocates its results):
  size_t device = find_line(w, Line::Kind::FallbackCall);
  w.partitions[0].end = device + 1;
  EXPECT_NE(internal_error([&] { toroid::codegen::wrapper::verify_wrapper(w); }).find("which cannot be captured"),
            std::string::npos);
  // The CPU has none.
  EXPECT_TRUE(compile(false, kPooledGraph)->current().wrapper.partitions.empty());
}

}  // namespace
