// One compiled module called from many threads at once, with a different input size on every
// call: symbolic sizes (one specialization shared by all threads) and static sizes (threads
// compile new specializations while others run). Every result must be exact. CI runs this
// under ASan + UBSan and ThreadSanitizer as well.
#include <gtest/gtest.h>
#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "capi_test_util.h"
#include "toroid/c_api.h"

namespace {

// x * y - x, and each row's sum of that: an elementwise kernel and a reduction.
constexpr const char* kRowsGraph = R"(graph @rows functional {
  sym n : hint=4, range=[1, inf]
  %x = input : f32[n, 8]
  %y = input : f32[n, 8]
  %p = aten.mul.Tensor(%x, %y) : f32[n, 8]
  %d = aten.sub.Tensor(%p, %x) : f32[n, 8]
  %s = aten.sum.dim_IntList(%d, [1]) : f32[n]
  output %d, %s
})";

using toroid_test::tensor;

class CApiThreads : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() { cache_ = new toroid_test::PrivateKernelCache("toroid-capi-threads"); }
  static void TearDownTestSuite() { delete cache_; }
  static toroid_test::PrivateKernelCache* cache_;
};
toroid_test::PrivateKernelCache* CApiThreads::cache_ = nullptr;

// Thread t's k-th call: rows from a small set (static sizes compile one specialization each),
// values that differ per thread and call (so a result read from another call shows).
struct Call {
  int64_t rows;
  float base;
};
Call call_of(int thread, int k, bool dynamic) {
  static constexpr int64_t kDynamicRows[] = {1, 4, 7, 16, 33, 2, 64};
  static constexpr int64_t kStaticRows[] = {3, 5, 9};
  int64_t rows = dynamic ? kDynamicRows[(thread + k) % 7] : kStaticRows[(thread + k) % 3];
  return {rows, static_cast<float>(thread * 1000 + k)};
}

TEST_P(CApiThreads, ManyThreadsMixedShapesOneModule) {
  const bool dynamic = GetParam() != 0;
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  o.dynamic = dynamic;
  toroid_module* m = nullptr;
  ASSERT_EQ(toroid_compile_with_options(kRowsGraph, "threads.tir", &o, &m), 0) << toroid_last_error();
  constexpr int kThreads = 8, kCalls = 60;
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::string> first_error(kThreads);
  auto work = [&](int t) {
    for (int k = 0; k < kCalls; ++k) {
      Call c = call_of(t, k, dynamic);
      size_t n = static_cast<size_t>(c.rows) * 8;
      std::vector<float> x(n), y(n), a(n, -1.0f), s(static_cast<size_t>(c.rows), -1.0f);
      for (size_t i = 0; i < n; ++i) {
        x[i] = c.base + static_cast<float>(i % 8);
        y[i] = static_cast<float>(i / 8);
      }
      toroid_tensor in[2] = {tensor(x.data(), {c.rows, 8}), tensor(y.data(), {c.rows, 8})};
      toroid_tensor out[2] = {tensor(a.data(), {c.rows, 8}), tensor(s.data(), {c.rows})};
      if (toroid_run_into(m, in, 2, out, 2, nullptr, 0, nullptr) != 0) {
        if (failed++ == 0) first_error[static_cast<size_t>(t)] = toroid_last_error();
        continue;
      }
      bool ok = true;
      for (int64_t r = 0; r < c.rows; ++r) {
        float sum = 0;
        for (int64_t j = 0; j < 8; ++j) {
          size_t i = static_cast<size_t>(r * 8 + j);
          float want = x[i] * y[i] - x[i];
          ok = ok && a[i] == want;
          sum += want;
        }
        ok = ok && std::abs(s[static_cast<size_t>(r)] - sum) <= 1e-3f * std::abs(sum);
      }
      wrong += ok ? 0 : 1;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  std::string errors;
  for (const std::string& e : first_error) errors += e;
  EXPECT_EQ(failed.load(), 0) << errors;
  EXPECT_EQ(wrong.load(), 0);
  // Static: the compile's own (the hint, 4 rows) and one per size called, each compiled once.
  EXPECT_EQ(toroid_num_specializations(m), dynamic ? 1 : 4);
  toroid_module_free(m);
}

INSTANTIATE_TEST_SUITE_P(Sizes, CApiThreads, ::testing::Values(1, 0),
                         [](const ::testing::TestParamInfo<int>& p) { return p.param ? "Symbolic" : "Static"; });

}  // namespace
