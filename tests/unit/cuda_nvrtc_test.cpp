// NVRTC to cubins, with the on-disk cache: needs libnvrtc but no GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "toroid/runtime/cuda/device_kernels.h"
#include "toroid/runtime/cuda/nvrtc.h"
#include "toroid/support/error.h"
#include "toroid/support/file.h"

namespace {

namespace fs = std::filesystem;
using namespace toroid::runtime::cuda;

// Uses both half-precision headers, which NVRTC finds only through the toolkit's include path.
std::string kernel_source(const std::string& name) {
  return "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
         "extern \"C\" __global__ void " + name + "(__nv_bfloat16* out, const __half* in, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) out[i] = __float2bfloat16(__half2float(in[i]) * 2.0f);\n"
         "}\n";
}

bool is_elf(const std::string& image) { return image.size() > 4 && image.compare(0, 4, "\x7f" "ELF") == 0; }

std::vector<fs::path> cubins_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cubin") out.push_back(e.path());
  return out;
}

class CudaNvrtc : public ::testing::Test {
 protected:
  // Each test gets an empty cache directory of its own, not $HOME's.
  void SetUp() override {
    std::string why;
    if (!nvrtc_available(&why)) GTEST_SKIP() << why;
    dir_ = fs::temp_directory_path() /
           ("toroid-nvrtc-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("TOROID_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path cuda_dir() const { return dir_ / "cuda"; }

  fs::path dir_;
};

TEST_F(CudaNvrtc, DeviceKernelsCompile) {
  Cubin c = compile_cubin({device_kernels_source(), "toroid_device_kernels"});
  EXPECT_TRUE(is_elf(c.image));
  // Every entry point the executor looks up.
  for (const char* f : {"toroid_nonzero_coordinates", "toroid_count_nonzero", "toroid_contiguous", "toroid_cumsum_real",
                        "toroid_cumprod_int", "toroid_index_put_bf16", "toroid_scatter_f16", "toroid_scatter_i64",
                        "toroid_mean_bf16", "toroid_mean_i32", "toroid_sort_load_real", "toroid_sort_step_int",
                        "toroid_sort_chunk_real", "toroid_sort_store"})
    EXPECT_NE(c.image.find(f), std::string::npos) << f;
}

// Each family compiles alone (as a process compiles it on first use) with its entry points only.
TEST_F(CudaNvrtc, DeviceKernelFamiliesCompileAlone) {
  const std::pair<const char*, const char*> families[] = {{"NONZERO", "toroid_count_nonzero"},
                                                         {"SCAN", "toroid_cumsum_real"},
                                                         {"SCATTER", "toroid_put_segments"},
                                                         {"SORT", "toroid_sort_store"}};
  for (const auto& [family, entry] : families) {
    Cubin c = compile_cubin({device_kernels_source(family), std::string("dk_") + family});
    EXPECT_TRUE(is_elf(c.image)) << family;
    EXPECT_NE(c.image.find(entry), std::string::npos) << family;
    for (const auto& [other, other_entry] : families) {
      if (std::string(other) != family) {
        EXPECT_EQ(c.image.find(other_entry), std::string::npos) << family << " " << other;
      }
    }
  }
  EXPECT_THROW(device_kernels_source("GATHER"), std::exception);
}

// The attention kernel for every dtype and head size it takes, without spilling registers.
TEST_F(CudaNvrtc, AttentionKernelsCompile) {
#ifdef __SANITIZE_ADDRESS__
  // NVRTC runs uninstrumented and 4x slower under ASan; the plain build compiles the modules.
  GTEST_SKIP() << "the plain build compiles the attention modules";
#endif
  const std::pair<toroid::DType, const char*> types[] = {
      {toroid::DType::Float32, "f32"}, {toroid::DType::BFloat16, "bf16"}, {toroid::DType::Float16, "f16"}};
  for (const auto& [dtype, t] : types) {
    Cubin c = compile_cubin({attention_kernel_source(dtype), std::string("toroid_attention_") + t});
    EXPECT_TRUE(is_elf(c.image));
    for (int d : {16, 32, 64, 128}) {
      std::string f = std::string("toroid_attention_") + t + "_" + std::to_string(d);
      EXPECT_NE(c.image.find(f), std::string::npos) << f;
      if (dtype == toroid::DType::Float32 && d > 64) continue;  // fp32's tensor-core kernels stop at 64
      std::string tc = std::string("toroid_attention_tc_") + t + "_" + std::to_string(d);
      EXPECT_NE(c.image.find(tc), std::string::npos) << tc;
    }
  }
  EXPECT_THROW(attention_kernel_source(toroid::DType::Float64), std::exception);
}

// What a launch compiles: the one kernel attention_launch names, not its dtype's eight.
TEST_F(CudaNvrtc, AttentionKernelAlone) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "the plain build compiles the attention modules";
#endif
  Cubin tc = compile_cubin({attention_kernel_source(toroid::DType::BFloat16, 64, true), "toroid_attention_tc_bf16_64"});
  EXPECT_NE(tc.image.find("toroid_attention_tc_bf16_64"), std::string::npos);
  for (const char* other : {"toroid_attention_bf16_64", "toroid_attention_tc_bf16_32", "toroid_attention_tc_bf16_128"})
    EXPECT_EQ(tc.image.find(other), std::string::npos) << other;
  Cubin simt = compile_cubin({attention_kernel_source(toroid::DType::Float32, 128, false), "toroid_attention_f32_128"});
  EXPECT_NE(simt.image.find("toroid_attention_f32_128"), std::string::npos);
  EXPECT_EQ(simt.image.find("toroid_attention_tc_"), std::string::npos);
  EXPECT_THROW(attention_kernel_source(toroid::DType::Float32, 128, true), std::exception);  // would spill
  EXPECT_THROW(attention_kernel_source(toroid::DType::BFloat16, 48, false), std::exception);
}

TEST_F(CudaNvrtc, Version) { EXPECT_EQ(nvrtc_version().substr(0, 3), "13."); }

TEST_F(CudaNvrtc, CompilesHalfPrecisionKernelAndHitsTheCache) {
  CubinRequest req{kernel_source("scale2"), "scale2"};
  Cubin first = compile_cubin(req);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(is_elf(first.image));
  EXPECT_NE(first.image.find("scale2"), std::string::npos);

  Cubin second = compile_cubin(req);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.image, first.image);
  EXPECT_EQ(cubins_in(cuda_dir()).size(), 1u);
}

TEST_F(CudaNvrtc, WithoutTheCacheAlwaysCompiles) {
  NvrtcOptions opts;
  opts.use_cache = false;
  CubinRequest req{kernel_source("nocache"), "nocache"};
  EXPECT_FALSE(compile_cubin(req, opts).cache_hit);
  EXPECT_FALSE(compile_cubin(req, opts).cache_hit);
  EXPECT_TRUE(cubins_in(cuda_dir()).empty());
}

TEST_F(CudaNvrtc, CorruptEntryIsRebuilt) {
  CubinRequest req{kernel_source("corrupt"), "corrupt"};
  Cubin first = compile_cubin(req);
  auto files = cubins_in(cuda_dir());
  ASSERT_EQ(files.size(), 1u);
  {
    std::ofstream f(files[0], std::ios::binary | std::ios::trunc);
    f << "not a cubin";
  }
  Cubin rebuilt = compile_cubin(req);
  EXPECT_FALSE(rebuilt.cache_hit);
  EXPECT_EQ(rebuilt.image, first.image);
  Cubin again = compile_cubin(req);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.image, first.image);
}

// Two entries swapped with each other (each a whole, intact file under the other's name): the
// checksum covers the key, so both are misses and rebuilt, never the other kernel.
TEST_F(CudaNvrtc, SwappedEntriesAreRebuilt) {
  CubinRequest a{kernel_source("swap_a"), "swap_a"}, b{kernel_source("swap_b"), "swap_b"};
  Cubin ca = compile_cubin(a), cb = compile_cubin(b);
  auto files = cubins_in(cuda_dir());
  ASSERT_EQ(files.size(), 2u);
  std::filesystem::path tmp = files[0].string() + ".swap";
  std::filesystem::rename(files[0], tmp);
  std::filesystem::rename(files[1], files[0]);
  std::filesystem::rename(tmp, files[1]);
  Cubin ra = compile_cubin(a), rb = compile_cubin(b);
  EXPECT_FALSE(ra.cache_hit);
  EXPECT_FALSE(rb.cache_hit);
  EXPECT_EQ(ra.image, ca.image);
  EXPECT_EQ(rb.image, cb.image);
}

TEST_F(CudaNvrtc, CompileErrorKeepsTheSourceAndCarriesTheLog) {
  CubinRequest req{"extern \"C\" __global__ void broken(float* p) { p[0] = undeclared_name; }\n", "broken"};
  try {
    compile_cubin(req);
    FAIL() << "expected an InternalError";
  } catch (const toroid::InternalError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("undeclared_name"), std::string::npos) << msg;  // NVRTC's log
    EXPECT_NE(msg.find("is undefined"), std::string::npos) << msg;
    auto at = msg.find(cuda_dir().string() + "/failed-broken-");
    ASSERT_NE(at, std::string::npos) << msg;
    std::string kept = msg.substr(at, msg.find(".cu", at) + 3 - at);
    EXPECT_EQ(toroid::read_file(kept), req.source);
  }
  EXPECT_TRUE(cubins_in(cuda_dir()).empty());
}

TEST_F(CudaNvrtc, ParallelCompilesKeepTheOrder) {
  std::vector<CubinRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    std::string name = "kern_" + std::to_string(i) + "_x";
    reqs.push_back({kernel_source(name), name});
  }
  std::vector<Cubin> out = compile_cubins(reqs);
  ASSERT_EQ(out.size(), reqs.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_FALSE(out[i].cache_hit);
    ASSERT_TRUE(is_elf(out[i].image)) << i;
    for (size_t j = 0; j < out.size(); ++j)
      EXPECT_EQ(out[i].image.find(reqs[j].name) != std::string::npos, i == j) << i << " " << j;
  }
  // Half of them cached, half new: still in order.
  std::vector<CubinRequest> mixed;
  for (int i = 0; i < 8; ++i) {
    std::string name = i % 2 ? "kern_" + std::to_string(i) + "_x" : "fresh_" + std::to_string(i) + "_x";
    mixed.push_back({kernel_source(name), name});
  }
  out = compile_cubins(mixed);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].cache_hit, i % 2 == 1) << i;
    EXPECT_NE(out[i].image.find(mixed[i].name), std::string::npos) << i;
  }
}

TEST_F(CudaNvrtc, ErrorInOneOfManyIsRethrown) {
  std::vector<CubinRequest> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back({kernel_source("ok_" + std::to_string(i)), "ok" + std::to_string(i)});
  reqs.push_back({"this is not C++", "bad"});
  EXPECT_THROW(compile_cubins(reqs), toroid::InternalError);
}

TEST_F(CudaNvrtc, ArchitectureIsPartOfTheKey) {
  CubinRequest req{kernel_source("arch"), "arch"};
  NvrtcOptions sm80;
  sm80.arch = 80;
  Cubin a = compile_cubin(req);
  Cubin b = compile_cubin(req, sm80);
  EXPECT_FALSE(b.cache_hit);
  EXPECT_NE(a.image, b.image);
  EXPECT_EQ(cubins_in(cuda_dir()).size(), 2u);
  EXPECT_TRUE(compile_cubin(req, sm80).cache_hit);
}

}  // namespace
