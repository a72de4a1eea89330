// A C++ program built against an installed toroid through find_package(toroid) and the
// toroid::toroid target (tests/install_check.sh): compiles a graph for the CPU and checks it.
#include <toroid/c_api.h>

#include <cstdio>
#include <vector>

int main() {
  const char* graph =
      "graph @softplus functional {\n"
      "  %x = input : f32[2, 3]\n"
      "  %e = aten.exp.default(%x) : f32[2, 3]\n"
      "  %p = aten.add.Tensor(%e, 1.0) : f32[2, 3]\n"
      "  %y = aten.log.default(%p) : f32[2, 3]\n"
      "  output %y\n"
      "}\n";
  toroid_module* m = nullptr;
  if (toroid_compile(graph, "consumer.cpp", "cpu", &m) != 0) {
    std::fprintf(stderr, "compile: %s\n", toroid_last_error());
    return 1;
  }
  std::vector<float> x{-2, -1, 0, 1, 2, 3}, y(6, -1.0f);
  auto header = [](float* data) {
    toroid_tensor t{};
    t.data = data;
    t.dtype = TOROID_FLOAT32;
    t.ndim = 2;
    t.sizes[0] = 2, t.sizes[1] = 3;
    t.strides[0] = 3, t.strides[1] = 1;
    return t;
  };
  toroid_tensor in = header(x.data()), out = header(y.data());
  if (toroid_run_into(m, &in, 1, &out, 1, nullptr, 0, nullptr) != 0) {
    std::fprintf(stderr, "run: %s\n", toroid_last_error());
    return 1;
  }
  const float want[6] = {0.126928f, 0.313262f, 0.693147f, 1.313262f, 2.126928f, 3.048587f};
  for (int i = 0; i < 6; ++i)
    if (y[i] < want[i] - 1e-4f || y[i] > want[i] + 1e-4f) {
      std::fprintf(stderr, "element %d: %g, expected %g\n", i, y[i], want[i]);
      return 1;
    }
  toroid_module_free(m);
  std::printf("toroid %s (C++, find_package): ok\n", toroid_version());
  return 0;
}
