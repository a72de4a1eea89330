// The driver's in-memory module cache: compiling the same text with the same options again
// reuses the compiled graph and specializations (and is faster), different options or text do
// not, and modules sharing a compilation each run right and check the graph's guards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "toroid/driver/compile.h"
#include "toroid/interp/interpreter.h"

namespace {

using toroid::driver::CompiledModule;
using toroid::ops::RtValue;

constexpr const char* kCachedGraph = R"(graph @cached functional {
  sym s0 : hint=8, range=[1, inf]
  guard s0 <= 64
  %x = input : f32[s0, 16]
  %y = aten.mul.Tensor(%x, %x) : f32[s0, 16]
  %s = aten.sum.dim_IntList(%y, [1], false) : f32[s0]
  output %s
})";

class ModuleCache : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("toroid-module-cache-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static void expect_matches(CompiledModule& m, int64_t rows, uint64_t seed) {
    const toroid::Graph& g = m.graph();
    std::vector<RtValue> in{toroid::ops::HostTensor::zeros(toroid::DType::Float32, {rows, 16})};
    for (int64_t i = 0; i < rows * 16; ++i) in[0].tensor().set_double(i, static_cast<double>((i * 7 + seed) % 11) - 5);
    std::vector<RtValue> want = toroid::interp::interpret(g, in);
    std::vector<RtValue> got = m.run(in);
    ASSERT_EQ(got.size(), 1u);
    for (int64_t i = 0; i < rows; ++i) EXPECT_EQ(got[0].tensor().get_double(i), want[0].tensor().get_double(i));
  }
  static inline std::filesystem::path dir_;
};

TEST_F(ModuleCache, SameTextAndOptionsReuseTheCompilation) {
  auto a = CompiledModule::compile(kCachedGraph, "cached.tir");
  auto b = CompiledModule::compile(kCachedGraph, "cached.tir");
  EXPECT_TRUE(b->reused());
  EXPECT_EQ(&a->current(), &b->current());
  EXPECT_LT(b->compile_ms(), a->compile_ms());
  expect_matches(*a, 8, 1);
  expect_matches(*b, 5, 2);
  expect_matches(*b, 40, 3);
  // The graph's own guard still holds for every module sharing the compilation.
  std::vector<RtValue> too_big{toroid::ops::HostTensor::zeros(toroid::DType::Float32, {65, 16})};
  EXPECT_THROW(a->run(too_big), toroid::UserError);
  EXPECT_THROW(b->run(too_big), toroid::UserError);
}

TEST_F(ModuleCache, OtherOptionsOrTextCompileAgain) {
  auto a = CompiledModule::compile(kCachedGraph, "cached.tir");
  toroid::driver::CompileOptions verify;
  verify.verify_each = true;
  EXPECT_FALSE(CompiledModule::compile(kCachedGraph, "cached.tir", verify)->reused());
  EXPECT_FALSE(CompiledModule::compile(kCachedGraph, "other-name.tir")->reused());
  std::string changed = std::string(kCachedGraph);
  changed.replace(changed.find("hint=8"), 6, "hint=9");
  EXPECT_FALSE(CompiledModule::compile(changed, "cached.tir")->reused());
  // Modules that are not loaded (text forms, compile checks) are never cached.
  toroid::driver::CompileOptions no_load;
  no_load.load = false;
  EXPECT_FALSE(CompiledModule::compile(kCachedGraph, "cached.tir", no_load)->reused());
  EXPECT_FALSE(CompiledModule::compile(kCachedGraph, "cached.tir", no_load)->reused());
}

TEST_F(ModuleCache, BadTextIsNotCached) {
  const char* bad = "graph @bad functional {\n  %x = input : f32[4]\n  %y = aten.nosuchop.default(%x) : f32[4]\n  output %y\n}\n";
  EXPECT_THROW(CompiledModule::compile(bad, "bad.tir"), toroid::UserError);
  EXPECT_THROW(CompiledModule::compile(bad, "bad.tir"), toroid::UserError);
}

}  // namespace
