// The C ABI's fixed cost a call: toroid_run_into_data of one small graph in a loop (the kernel's
// own work is nanoseconds), for profiling the executor's per-call path.
//
//   capi_loop [--calls N] [--rows R] [--cols C]
//
// The add of two [R, C] f32 tensors (1 x 256). Prints the mean µs a call of the best of five
// loops.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "toroid/c_api.h"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "capi_loop: %s: %s\n", what, toroid_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 200000, rows = 1, cols = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--calls") calls = std::atol(argv[i + 1]);
    else if (a == "--rows") rows = std::atol(argv[i + 1]);
    else if (a == "--cols") cols = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "capi_loop: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::string shape = "f32[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  std::string text = "graph @add functional {\n  %x = input : " + shape + "\n  %y = input : " + shape +
                     "\n  %z = aten.add.Tensor(%x, %y) : " + shape + "\n  output %z\n}\n";
  toroid_module* m = nullptr;
  if (toroid_compile(text.c_str(), "<add>", "cpu", &m)) return fail("compile");
  toroid_tensor header{};
  header.dtype = TOROID_FLOAT32;
  header.ndim = 2;
  header.sizes[0] = rows;
  header.sizes[1] = cols;
  header.strides[0] = cols;
  header.strides[1] = 1;
  std::vector<float> x(rows * cols, 1.0f), y(rows * cols, 2.0f), z(rows * cols);
  toroid_tensor in[2] = {header, header}, out[1] = {header};
  const void* in_data[2] = {x.data(), y.data()};
  const void* out_data[1] = {z.data()};
  auto run = [&] { return toroid_run_into_data(m, in, in_data, 2, out, out_data, 1, nullptr, 0, nullptr); };
  if (run()) return fail("run");
  if (z[0] != 3.0f) return fail("wrong result");
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (long c = 0; c < calls; ++c) run();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
    best = std::min(best, us);
  }
  std::printf("%.3f us a call (best of 5 loops of %ld)\n", best, calls);
  toroid_module_free(m);
  return 0;
}
