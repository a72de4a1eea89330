// The C ABI (include/toroid/c_api.h) as a C caller uses it: compile options, output metadata,
// running into the caller's output memory, aliasing outputs, and bad input (non-zero return and
// a message naming the problem).
#include "toroid/c_api.h"

#include "capi_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#ifdef TOROID_WITH_CUDA
#include "toroid/runtime/cuda/driver.h"  // device memory for the GPU test (exported by libtoroid.so)
#endif

namespace {

// x[s0, 8] * 2 + y, its row count as a scalar output, and a view of the first output.
constexpr const char* kGraph = R"(graph @g functional {
  sym s0 : hint=4, range=[1, inf]
  %x = input : f32[s0, 8]
  %y = input : f32[s0, 8]
  %m = aten.mul.Tensor(%x, 2) : f32[s0, 8]
  %a = aten.add.Tensor(%m, %y) : f32[s0, 8]
  %v = aten.view.default(%a, [8*s0]) : f32[8*s0]{storage=%a}
  output %a, s0, %v
})";

// An output that views an input (the transpose), and one that views an intermediate at an
// offset (a column slice), which the run copies into the caller's memory.
constexpr const char* kViews = R"(graph @views functional {
  %x = input : f32[4, 8]
  %t = aten.t.default(%x) : f32[8, 4]{strides=[1, 8], storage=%x}
  %e = aten.exp.default(%x) : f32[4, 8]
  %s = aten.slice.Tensor(%e, 1, 2, 6) : f32[4, 4]{strides=[8, 1], offset=2, storage=%e}
  output %t, %s
})";

using toroid_test::tensor;

std::string error() { return toroid_last_error(); }

class CApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_ = new toroid_test::PrivateKernelCache("toroid-capi-test"); }
  static void TearDownTestSuite() { delete cache_; }

  toroid_module* compile(const char* text, int dynamic = 1, const char* dump = nullptr) {
    toroid_compile_options o;
    toroid_compile_options_init(&o);
    o.dynamic = dynamic;
    o.dump_dir = dump;
    toroid_module* m = nullptr;
    EXPECT_EQ(toroid_compile_with_options(text, "test.tir", &o, &m), 0) << error();
    return m;
  }
  static toroid_test::PrivateKernelCache* cache_;
};
toroid_test::PrivateKernelCache* CApi::cache_ = nullptr;

TEST_F(CApi, VersionAndOps) {
  EXPECT_EQ(toroid_abi_version(), TOROID_ABI_VERSION);
  EXPECT_NE(std::string(toroid_version()), "");
  EXPECT_EQ(toroid_op_supported("aten.add.Tensor"), 1);
  EXPECT_EQ(toroid_op_supported("aten._softmax.default"), 1);
  EXPECT_EQ(toroid_op_supported("aten.no_such_op.default"), 0);
  EXPECT_EQ(toroid_op_supported(nullptr), 0);
  // Only ops with generated code or a library kernel: _cdist_forward runs its reference kernel,
  // so a frontend runs it in PyTorch instead; cumsum and sort have library kernels on both.
  EXPECT_EQ(toroid_op_supported_on("aten.add.Tensor", "cuda"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten.convolution.default", "cuda"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten._softmax.default", "cuda"), 1);  // decomposed
  EXPECT_EQ(toroid_op_supported_on("aten.t.default", "cuda"), 1);         // a view
  EXPECT_EQ(toroid_op_supported_on("aten._cdist_forward.default", "cuda"), 0);
  EXPECT_EQ(toroid_op_supported_on("aten.sort.default", "cuda"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten.sort.default", "cpu"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten._cdist_forward.default", "cpu"), 0);
  EXPECT_EQ(toroid_op_supported_on("aten.add.Tensor", "cpu"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten.cumsum.default", "cuda"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten.cumsum.default", "cpu"), 1);
  EXPECT_EQ(toroid_op_supported_on("aten.no_such_op.default", "cuda"), 0);
  EXPECT_EQ(toroid_op_supported_on("aten.add.Tensor", "tpu"), -1);
  EXPECT_NE(std::string(toroid_last_error()).find("unknown device 'tpu'"), std::string::npos);
}

TEST_F(CApi, OutputInfoWithoutData) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(toroid_num_inputs(m), 2);
  EXPECT_EQ(toroid_num_outputs(m), 3);
  toroid_tensor in[2] = {tensor(nullptr, {5, 8}), tensor(nullptr, {5, 8})};
  toroid_output_info info[3];
  size_t ws = 123;
  ASSERT_EQ(toroid_get_output_info(m, in, 2, info, 3, &ws), 0) << error();
  EXPECT_EQ(ws, 0u);  // the CPU allocates its own
  EXPECT_EQ(info[0].dtype, TOROID_FLOAT32);
  ASSERT_EQ(info[0].ndim, 2);
  EXPECT_EQ(info[0].sizes[0], 5);
  EXPECT_EQ(info[0].sizes[1], 8);
  EXPECT_EQ(info[0].strides[0], 8);
  EXPECT_EQ(info[0].strides[1], 1);
  EXPECT_EQ(info[0].alias_input, -1);
  EXPECT_EQ(info[0].alias_output, -1);
  EXPECT_EQ(info[1].is_scalar, 1);
  ASSERT_EQ(info[2].ndim, 1);
  EXPECT_EQ(info[2].sizes[0], 40);
  EXPECT_EQ(info[2].alias_output, 0);
  EXPECT_EQ(info[2].offset, 0);
  toroid_module_free(m);
}

TEST_F(CApi, PlannedPeakBytesPerSize) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  // The one buffer the program allocates is the f32[s0, 8] output: 32 bytes a row.
  for (int64_t rows : {1, 5, 100}) {
    toroid_tensor in[2] = {tensor(nullptr, {rows, 8}), tensor(nullptr, {rows, 8})};
    int64_t bytes = -1;
    ASSERT_EQ(toroid_planned_peak_bytes(m, in, 2, &bytes), 0) << error();
    EXPECT_EQ(bytes, 32 * rows);
  }
  toroid_tensor in[2] = {tensor(nullptr, {5, 8}), tensor(nullptr, {5, 8})};
  EXPECT_NE(toroid_planned_peak_bytes(m, in, 2, nullptr), 0);
  EXPECT_NE(error().find("null bytes"), std::string::npos) << error();
  toroid_tensor bad[2] = {tensor(nullptr, {5, 8}), tensor(nullptr, {4, 8})};
  int64_t bytes = 0;
  EXPECT_NE(toroid_planned_peak_bytes(m, bad, 2, &bytes), 0);
  toroid_module_free(m);
}

TEST_F(CApi, RunIntoCallerMemory) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  std::vector<float> x(40), y(40), a(40, -1.0f);
  for (int i = 0; i < 40; ++i) {
    x[static_cast<size_t>(i)] = static_cast<float>(i);
    y[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i);
  }
  toroid_tensor in[2] = {tensor(x.data(), {5, 8}), tensor(y.data(), {5, 8})};
  toroid_tensor out[3] = {tensor(a.data(), {5, 8}), {}, {}};
  ASSERT_EQ(toroid_run_into(m, in, 2, out, 3, nullptr, 0, nullptr), 0) << error();
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(a[i], 2.5f * static_cast<float>(i)) << i;
  EXPECT_EQ(out[1].ndim, -1);
  EXPECT_EQ(out[1].scalar, 5.0);
  EXPECT_EQ(out[0].owner, nullptr);
  // The owning entry point gives the same values.
  toroid_tensor own[3];
  ASSERT_EQ(toroid_run(m, in, 2, own, 3, nullptr), 0) << error();
  const auto* p = static_cast<const float*>(own[0].data) + own[0].offset;
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(p[i], a[i]);
  for (toroid_tensor& t : own) toroid_tensor_release(&t);
  toroid_module_free(m);
}

TEST_F(CApi, ViewsOfInputsAndSlicesOfBuffers) {
  toroid_module* m = compile(kViews);
  ASSERT_NE(m, nullptr);
  std::vector<float> x(32), s(16, 0.0f);
  for (size_t i = 0; i < 32; ++i) x[i] = 0.1f * static_cast<float>(i);
  toroid_tensor in[1] = {tensor(x.data(), {4, 8})};
  toroid_output_info info[2];
  ASSERT_EQ(toroid_get_output_info(m, in, 1, info, 2, nullptr), 0) << error();
  EXPECT_EQ(info[0].alias_input, 0);
  EXPECT_EQ(info[0].strides[0], 1);
  EXPECT_EQ(info[0].strides[1], 8);
  EXPECT_EQ(info[1].alias_input, -1);
  EXPECT_EQ(info[1].alias_output, -1);
  EXPECT_EQ(info[1].strides[0], 8);
  toroid_tensor out[2] = {{}, tensor(s.data(), {4, 4})};
  out[1].strides[0] = 8;  // as reported: the slice keeps its buffer's row stride
  std::vector<float> big(32, 0.0f);
  out[1].data = big.data();
  ASSERT_EQ(toroid_run_into(m, in, 1, out, 2, nullptr, 0, nullptr), 0) << error();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_FLOAT_EQ(big[static_cast<size_t>(r * 8 + c)], std::exp(x[static_cast<size_t>(r * 8 + c + 2)]));
  toroid_module_free(m);
}

TEST_F(CApi, DynamicOffSpecializesPerSize) {
  for (int dynamic : {0, 1}) {
    toroid_module* m = compile(kGraph, dynamic);
    ASSERT_NE(m, nullptr);
    std::vector<float> x(56, 1.0f), y(56, 1.0f), a(56);
    for (int64_t rows : {4, 7, 4}) {
      toroid_tensor in[2] = {tensor(x.data(), {rows, 8}), tensor(y.data(), {rows, 8})};
      toroid_tensor out[3] = {tensor(a.data(), {rows, 8}), {}, {}};
      ASSERT_EQ(toroid_run_into(m, in, 2, out, 3, nullptr, 0, nullptr), 0) << error();
      EXPECT_EQ(a[0], 3.0f);
      EXPECT_EQ(out[1].scalar, static_cast<double>(rows));
    }
    EXPECT_EQ(toroid_num_specializations(m), dynamic ? 1 : 2);
    toroid_module_free(m);
  }
}

// A call whose headers match an earlier call's (all but the data pointers) reuses its binding and
// output metadata: the data, and the memory, are still this call's.
TEST_F(CApi, RepeatedSignaturesTakeThisCallsData) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  std::vector<float> x1(16, 1.0f), x2(16, 5.0f), y(16, 1.0f), a1(16), a2(16);
  for (int round = 0; round < 2; ++round) {
    toroid_tensor in1[2] = {tensor(x1.data(), {2, 8}), tensor(y.data(), {2, 8})};
    toroid_tensor out1[3] = {tensor(a1.data(), {2, 8}), {}, {}};
    ASSERT_EQ(toroid_run_into(m, in1, 2, out1, 3, nullptr, 0, nullptr), 0) << error();
    toroid_tensor in2[2] = {tensor(x2.data(), {2, 8}), tensor(y.data(), {2, 8})};
    toroid_tensor out2[3] = {tensor(a2.data(), {2, 8}), {}, {}};
    ASSERT_EQ(toroid_run_into(m, in2, 2, out2, 3, nullptr, 0, nullptr), 0) << error();
    EXPECT_EQ(a1[15], 3.0f);
    EXPECT_EQ(a2[15], 11.0f);
    EXPECT_EQ(out2[1].scalar, 2.0);
  }
  // A bad header with a seen signature's sizes is still checked.
  std::vector<float> big(16);
  toroid_tensor in[2] = {tensor(x1.data(), {2, 8}), tensor(nullptr, {2, 8})};
  toroid_tensor out[3] = {tensor(big.data(), {2, 8}), {}, {}};
  EXPECT_NE(toroid_run_into(m, in, 2, out, 3, nullptr, 0, nullptr), 0);
  EXPECT_NE(error().find("null data pointer"), std::string::npos) << error();
  toroid_module_free(m);
}

// toroid_run_into_data: the headers stay as they are (their data not read); each call's data
// comes from the pointer arrays, and a missing pointer is still an error naming its input.
TEST_F(CApi, DataPointersApartFromHeaders) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  std::vector<float> x1(16, 1.0f), x2(16, 5.0f), y(16, 1.0f), a1(16), a2(16);
  toroid_tensor in[2] = {tensor(nullptr, {2, 8}), tensor(nullptr, {2, 8})};
  toroid_tensor out[3] = {tensor(nullptr, {2, 8}), {}, {}};
  const void* in1[2] = {x1.data(), y.data()};
  const void* in2[2] = {x2.data(), y.data()};
  const void* out1[3] = {a1.data(), nullptr, nullptr};
  const void* out2[3] = {a2.data(), nullptr, nullptr};
  ASSERT_EQ(toroid_run_into_data(m, in, in1, 2, out, out1, 3, nullptr, 0, nullptr), 0) << error();
  ASSERT_EQ(toroid_run_into_data(m, in, in2, 2, out, out2, 3, nullptr, 0, nullptr), 0) << error();
  EXPECT_EQ(a1[15], 3.0f);
  EXPECT_EQ(a2[15], 11.0f);
  EXPECT_EQ(out[1].scalar, 2.0);
  EXPECT_EQ(in[0].data, nullptr);  // never written
  // Null arrays: the headers' own pointers.
  toroid_tensor own_in[2] = {tensor(x2.data(), {2, 8}), tensor(y.data(), {2, 8})};
  toroid_tensor own_out[3] = {tensor(a1.data(), {2, 8}), {}, {}};
  ASSERT_EQ(toroid_run_into_data(m, own_in, nullptr, 2, own_out, nullptr, 3, nullptr, 0, nullptr), 0) << error();
  EXPECT_EQ(a1[15], 11.0f);
  const void* missing[2] = {x1.data(), nullptr};
  EXPECT_NE(toroid_run_into_data(m, in, missing, 2, out, out1, 3, nullptr, 0, nullptr), 0);
  EXPECT_NE(error().find("input 1: null data pointer"), std::string::npos) << error();
  const void* no_output[3] = {nullptr, nullptr, nullptr};
  EXPECT_NE(toroid_run_into_data(m, in, in1, 2, out, no_output, 3, nullptr, 0, nullptr), 0);
  EXPECT_NE(error().find("output 0: null data pointer"), std::string::npos) << error();
  toroid_module_free(m);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A directory per compile: a static module run at a second size compiles again, into g.1,
// whose record says which guard of g.0 failed; neither overwrites the other.
TEST_F(CApi, DebugDirectoryPerCompile) {
  std::filesystem::path dump = cache_->dir() / "dumps";
  std::filesystem::remove_all(dump);
  toroid_module* m = compile(kGraph, 0, dump.c_str());
  ASSERT_NE(m, nullptr);
  for (const char* f : {"graph.tir", "loop.txt", "wrapper.txt", "kernels.cpp", "provenance.json", "memory.json",
                        "compile.json", "report.html", "passes/00-input.tir"})
    EXPECT_TRUE(std::filesystem::exists(dump / "g.0" / f)) << f;
  std::vector<float> x(24, 1.0f), y(24, 2.0f);
  toroid_tensor in[2] = {tensor(x.data(), {3, 8}), tensor(y.data(), {3, 8})};
  toroid_tensor own[3];
  ASSERT_EQ(toroid_run(m, in, 2, own, 3, nullptr), 0) << error();
  for (toroid_tensor& t : own) toroid_tensor_release(&t);
  std::string first = read_text(dump / "g.0" / "compile.json"), second = read_text(dump / "g.1" / "compile.json");
  EXPECT_NE(first.find("\"sizes\": \"s0=4\""), std::string::npos) << first;
  EXPECT_NE(second.find("\"sizes\": \"s0=3\""), std::string::npos) << second;
  EXPECT_NE(second.find("specialization 0: guard s0 == 4 fails"), std::string::npos) << second;
  EXPECT_NE(read_text(dump / "g.1" / "report.html").find("specialization 0: guard s0 == 4 fails"), std::string::npos);
  toroid_module_free(m);
}

// An AOT package of a graph with a parameter: written, loaded and run with the parameter
// baked in, equal to the module run with the parameter passed; bad packages and calls are errors.
TEST_F(CApi, AotPackageRunsWithItsParameters) {
  constexpr const char* kAffine = R"(graph @affine functional {
  %x = input : f32[2, 4]
  %w = param "weight" : f32[4]
  %y = aten.mul.Tensor(%x, %w) : f32[2, 4]
  %z = aten.relu.default(%y) : f32[2, 4]
  output %z
})";
  std::vector<float> x = {1, -2, 3, -4, 5, -6, 7, -8}, w = {0.5f, -1, 2, 0.25f};
  std::string path = (cache_->dir() / "affine.toroidpkg").string();
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  toroid_tensor param = tensor(w.data(), {4});
  ASSERT_EQ(toroid_package_write(kAffine, "affine.tir", &o, &param, 1, path.c_str()), 0) << error();
  toroid_package* p = nullptr;
  ASSERT_EQ(toroid_package_load(path.c_str(), &p), 0) << error();
  EXPECT_EQ(toroid_package_num_inputs(p), 1);
  EXPECT_EQ(toroid_package_num_outputs(p), 1);
  toroid_tensor in = tensor(x.data(), {2, 4});
  toroid_tensor out;
  ASSERT_EQ(toroid_package_run(p, &in, 1, &out, 1), 0) << error();
  const auto* y = static_cast<const float*>(out.data) + out.offset;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(y[i], std::max(0.0f, x[i] * w[i % 4])) << i;
  toroid_tensor_release(&out);
  toroid_tensor two[2] = {in, in};
  EXPECT_NE(toroid_package_run(p, two, 2, &out, 1), 0);
  EXPECT_NE(error().find("takes 1 inputs (its parameters are packaged), got 2"), std::string::npos) << error();
  toroid_package_free(p);
  toroid_package_free(p);
  EXPECT_NE(error().find("not a live package"), std::string::npos) << error();
  EXPECT_EQ(toroid_package_num_inputs(p), -1);
  // A parameter of the wrong sizes, a file that is not a package.
  toroid_tensor wrong = tensor(w.data(), {2, 2});
  EXPECT_NE(toroid_package_write(kAffine, "affine.tir", &o, &wrong, 1, path.c_str()), 0);
  EXPECT_NE(error().find("parameter 0 (w): expected f32"), std::string::npos) << error();
  EXPECT_NE(toroid_package_write(kAffine, "affine.tir", &o, &param, 0, path.c_str()), 0);
  EXPECT_NE(error().find("the graph has 1 parameters, got 0"), std::string::npos) << error();
  std::string junk = (cache_->dir() / "junk.toroidpkg").string();
  std::ofstream(junk) << "graph @g functional {}\n";
  EXPECT_NE(toroid_package_load(junk.c_str(), &p), 0);
  EXPECT_NE(error().find("not a toroid package"), std::string::npos) << error();
}

TEST_F(CApi, BadOptions) {
  toroid_module* m = nullptr;
  EXPECT_NE(toroid_compile_with_options(kGraph, nullptr, nullptr, &m), 0);
  EXPECT_NE(error().find("null options"), std::string::npos) << error();
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  o.struct_size = 0;
  EXPECT_NE(toroid_compile_with_options(kGraph, nullptr, &o, &m), 0);
  EXPECT_NE(error().find("struct_size"), std::string::npos) << error();
  toroid_compile_options_init(&o);
  o.device = "tpu";
  EXPECT_NE(toroid_compile_with_options(kGraph, nullptr, &o, &m), 0);
  EXPECT_NE(error().find("\"tpu\""), std::string::npos) << error();
  toroid_compile_options_init(&o);
  EXPECT_NE(toroid_compile_with_options(nullptr, nullptr, &o, &m), 0);
  EXPECT_NE(toroid_compile_with_options("graph @g {", "bad.tir", &o, &m), 0);
  EXPECT_NE(error().find("bad.tir:1:"), std::string::npos) << error();
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(toroid_num_inputs(nullptr), -1);
  EXPECT_EQ(toroid_num_specializations(nullptr), -1);
}

TEST_F(CApi, BadRunArguments) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  std::vector<float> x(40), y(40), a(40);
  toroid_tensor in[2] = {tensor(x.data(), {5, 8}), tensor(y.data(), {5, 8})};
  toroid_tensor out[3] = {tensor(a.data(), {5, 8}), {}, {}};
  toroid_output_info info[3];
  auto fails_with = [](int rc, const std::string& what) {
    EXPECT_NE(rc, 0);
    EXPECT_NE(error().find(what), std::string::npos) << "expected '" << what << "' in: " << error();
  };
  fails_with(toroid_run_into(m, in, 1, out, 3, nullptr, 0, nullptr), "takes 2 inputs");
  fails_with(toroid_run_into(m, in, 2, out, 2, nullptr, 0, nullptr), "has 3 outputs");
  fails_with(toroid_run_into(nullptr, in, 2, out, 3, nullptr, 0, nullptr), "null module");
  fails_with(toroid_run_into(m, nullptr, 2, out, 3, nullptr, 0, nullptr), "null inputs");
  fails_with(toroid_run_into(m, in, 2, nullptr, 3, nullptr, 0, nullptr), "null outputs");
  fails_with(toroid_get_output_info(m, in, 2, nullptr, 3, nullptr), "null outputs");
  fails_with(toroid_run_into(m, in, 2, out, 3, a.data(), 4, nullptr), "takes no workspace");
  // Inputs: a null pointer, a size that contradicts the graph, a bad dtype.
  toroid_tensor bad[2] = {tensor(nullptr, {5, 8}), in[1]};
  fails_with(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), "input 0: null data pointer");
  bad[0] = tensor(x.data(), {5, 7});
  EXPECT_NE(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), 0);
  EXPECT_NE(error().find("%x"), std::string::npos) << error();
  bad[0] = tensor(x.data(), {4, 8});
  EXPECT_NE(toroid_get_output_info(m, bad, 2, info, 3, nullptr), 0);  // s0 is 4 and 5
  bad[0] = in[0];
  bad[0].dtype = 99;
  fails_with(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), "unknown dtype code 99");
  // Outputs that do not match the metadata.
  toroid_tensor wrong[3] = {tensor(a.data(), {8, 5}), {}, {}};
  fails_with(toroid_run_into(m, in, 2, wrong, 3, nullptr, 0, nullptr), "output 0: size 8 in dim 0, expected 5");
  wrong[0] = tensor(a.data(), {5, 8});
  wrong[0].dtype = TOROID_FLOAT64;
  fails_with(toroid_run_into(m, in, 2, wrong, 3, nullptr, 0, nullptr), "output 0: dtype code");
  wrong[0] = tensor(nullptr, {5, 8});
  fails_with(toroid_run_into(m, in, 2, wrong, 3, nullptr, 0, nullptr), "output 0: null data pointer");
  toroid_module_free(m);
}

// Stale handles are recognised: a double free, calls on a freed module, and a second release
// of an output through a copy of its tensor are errors, not uses of freed memory.
TEST_F(CApi, StaleHandlesAreErrors) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  std::vector<float> x(40, 1.0f), y(40, 1.0f);
  toroid_tensor in[2] = {tensor(x.data(), {5, 8}), tensor(y.data(), {5, 8})};
  toroid_tensor own[3];
  ASSERT_EQ(toroid_run(m, in, 2, own, 3, nullptr), 0) << error();
  toroid_tensor copy = own[0];
  toroid_tensor_release(&own[0]);
  toroid_tensor_release(&copy);
  EXPECT_NE(error().find("toroid_tensor_release: not a live output"), std::string::npos) << error();
  toroid_tensor_release(&own[2]);
  toroid_module_free(m);
  EXPECT_EQ(toroid_num_inputs(m), -1);
  EXPECT_EQ(toroid_num_specializations(m), -1);
  toroid_tensor out[3] = {{}, {}, {}};
  EXPECT_NE(toroid_run(m, in, 2, out, 3, nullptr), 0);
  EXPECT_NE(error().find("toroid_run: not a live module"), std::string::npos) << error();
  toroid_module_free(m);
  EXPECT_NE(error().find("toroid_module_free: not a live module"), std::string::npos) << error();
  int not_a_module = 0;
  EXPECT_NE(toroid_check_errors(reinterpret_cast<toroid_module*>(&not_a_module)), 0);
}

// Hostile sizes, strides, offsets and scalars: an error naming the argument, never wrapped
// arithmetic (undefined behaviour, which the UBSan build would stop on).
TEST_F(CApi, HostileHeadersOverflowNothing) {
  toroid_module* m = compile(kGraph);
  ASSERT_NE(m, nullptr);
  auto fails_with = [](int rc, const std::string& what) {
    EXPECT_NE(rc, 0);
    EXPECT_NE(error().find(what), std::string::npos) << error();
  };
  std::vector<float> x(40), y(40), a(40);
  toroid_tensor in[2] = {tensor(x.data(), {5, 8}), tensor(y.data(), {5, 8})};
  toroid_tensor out[3] = {tensor(a.data(), {5, 8}), {}, {}};
  toroid_tensor bad[2] = {in[0], in[1]};
  bad[0].strides[0] = INT64_MAX;
  fails_with(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), "input 0: sizes and strides reach past 2^63");
  bad[0] = in[0];
  bad[0].sizes[1] = INT64_MAX;
  bad[0].strides[0] = INT64_MAX;
  fails_with(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), "reach past 2^63");
  bad[0] = in[0];
  bad[0].offset = INT64_MAX;
  fails_with(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), "offset 9223372036854775807 overflows");
  bad[0] = in[0];
  bad[0].strides[0] = INT64_MAX / 5;  // an extent that fits int64 but not in bytes
  fails_with(toroid_run_into(m, bad, 2, out, 3, nullptr, 0, nullptr), "bytes overflow the address space");
  toroid_tensor wrong[3] = {tensor(a.data(), {5, 8}), {}, {}};
  wrong[0].strides[1] = INT64_MAX;
  wrong[0].sizes[1] = 8;
  fails_with(toroid_run_into(m, in, 2, wrong, 3, nullptr, 0, nullptr), "output 0");
  toroid_module_free(m);

  toroid_module* s = compile("graph @main functional {\n  %n = input : int\n  output %n\n}\n");
  ASSERT_NE(s, nullptr);
  for (double v : {1e30, -1e30, 0.5, std::nan("")}) {
    toroid_tensor n{};
    n.ndim = -1;
    n.scalar = v;
    toroid_tensor r[1] = {{}};
    fails_with(toroid_run_into(s, &n, 1, r, 1, nullptr, 0, nullptr), "is not an int64 value");
  }
  toroid_tensor n{};
  n.ndim = -1;
  n.scalar = -7;
  toroid_tensor r[1] = {{}};
  ASSERT_EQ(toroid_run_into(s, &n, 1, r, 1, nullptr, 0, nullptr), 0) << error();
  EXPECT_EQ(r[0].scalar, -7.0);
  toroid_module_free(s);
}

#ifdef TOROID_WITH_CUDA
// On a GPU: outputs written into the caller's device memory, with and without a workspace, and
// an output sliced out of a larger buffer copied over on the device.
TEST_F(CApi, DeviceMemoryStats) {
  EXPECT_NE(toroid_device_memory_stats(nullptr, 0), 0);
  EXPECT_NE(error().find("null stats"), std::string::npos) << error();
  toroid_device_memory s;
  ASSERT_EQ(toroid_device_memory_stats(&s, 1), 0) << error();
  EXPECT_GE(s.peak_lent_bytes, s.lent_bytes);
  EXPECT_GE(s.lent_bytes, 0);
  toroid_device_memory after;
  ASSERT_EQ(toroid_device_memory_stats(&after, 0), 0) << error();
  EXPECT_EQ(after.peak_lent_bytes, after.lent_bytes);  // reset to what is lent now
}

TEST_F(CApi, CudaRunIntoDeviceMemory) {
  if (!toroid_cuda_available()) GTEST_SKIP() << "no GPU";
  namespace cu = toroid::runtime::cuda;
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  o.device = "cuda";
  toroid_module* m = nullptr;
  ASSERT_EQ(toroid_compile_with_options(kGraph, "g.tir", &o, &m), 0) << error();
  std::vector<float> x(40), y(40), a(40);
  for (size_t i = 0; i < 40; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  auto* dx = static_cast<float*>(cu::raw_alloc(160));
  auto* dy = static_cast<float*>(cu::raw_alloc(160));
  auto* da = static_cast<float*>(cu::raw_alloc(160));
  cu::copy_to_device(dx, x.data(), 160);
  cu::copy_to_device(dy, y.data(), 160);
  toroid_tensor in[2] = {tensor(dx, {5, 8}), tensor(dy, {5, 8})};
  toroid_output_info info[3];
  size_t ws = 0;
  ASSERT_EQ(toroid_get_output_info(m, in, 2, info, 3, &ws), 0) << error();
  EXPECT_EQ(ws, 0u);  // its one buffer is an output, computed in the caller's memory
  void* workspace = cu::raw_alloc(256);
  for (void* w : {workspace, static_cast<void*>(nullptr)}) {
    cu::copy_to_device(da, std::vector<float>(40, -1.0f).data(), 160);
    toroid_tensor out[3] = {tensor(da, {5, 8}), {}, {}};
    ASSERT_EQ(toroid_run_into(m, in, 2, out, 3, w, w ? ws : 0, nullptr), 0) << error();
    cu::copy_to_host(a.data(), da, 160);
    for (size_t i = 0; i < 40; ++i) EXPECT_EQ(a[i], 2.0f * x[i] + 1.0f) << i;
    EXPECT_EQ(out[1].scalar, 5.0);
  }
  toroid_module_free(m);

  ASSERT_EQ(toroid_compile_with_options(kViews, "views.tir", &o, &m), 0) << error();
  toroid_tensor vin[1] = {tensor(dx, {4, 8})};
  // The column slice is computed in a buffer of its own (copied out): the workspace holds it.
  toroid_output_info vinfo[2];
  ASSERT_EQ(toroid_get_output_info(m, vin, 1, vinfo, 2, &ws), 0) << error();
  EXPECT_GT(ws, 16u);
  {
    toroid_tensor vout[2] = {{}, tensor(da, {4, 4})};
    vout[1].strides[0] = 8;
    EXPECT_NE(toroid_run_into(m, vin, 1, vout, 2, workspace, 16, nullptr), 0);  // too small
    EXPECT_NE(error().find("workspace"), std::string::npos) << error();
  }
  std::vector<float> big(32, 0.0f);
  cu::copy_to_device(da, big.data(), 128);
  toroid_tensor vout[2] = {{}, tensor(da, {4, 4})};
  vout[1].strides[0] = 8;
  ASSERT_EQ(toroid_run_into(m, vin, 1, vout, 2, nullptr, 0, nullptr), 0) << error();
  cu::copy_to_host(big.data(), da, 128);
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 4; ++c) {
      // f32 exp on the GPU is __expf: a few ulp from std::exp.
      float want = std::exp(x[r * 8 + c + 2]);
      EXPECT_NEAR(big[r * 8 + c], want, 2e-6f * std::abs(want));
    }
  toroid_module_free(m);
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dy), static_cast<void*>(da), workspace}) cu::raw_free(p);
}
#endif

TEST_F(CApi, CudaWithoutGpuIsAnError) {
  if (toroid_cuda_available()) GTEST_SKIP() << "a GPU is present";
  toroid_module* m = nullptr;
  EXPECT_NE(toroid_compile(kGraph, nullptr, "cuda", &m), 0);
  EXPECT_NE(error(), "");
}

}  // namespace
