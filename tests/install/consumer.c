/* A C program built against an installed toroid with pkg-config (tests/install_check.sh):
 * compiles a graph for the CPU through the C API and checks what it computes. */
#include <stdio.h>
#include <string.h>

#include <toroid/c_api.h>

static const char* kGraph =
    "graph @scale functional {\n"
    "  %x = input : f32[4]\n"
    "  %y = aten.mul.Tensor(%x, 3.0) : f32[4]\n"
    "  %z = aten.add.Tensor(%y, %x) : f32[4]\n"
    "  output %z\n"
    "}\n";

static toroid_tensor vector4(float* data) {
  toroid_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = TOROID_FLOAT32;
  t.ndim = 1;
  t.sizes[0] = 4;
  t.strides[0] = 1;
  return t;
}

int main(void) {
  if (toroid_abi_version() != TOROID_ABI_VERSION) {
    fprintf(stderr, "header ABI %d, library ABI %d\n", TOROID_ABI_VERSION, toroid_abi_version());
    return 1;
  }
  toroid_module* m = NULL;
  if (toroid_compile(kGraph, "consumer.c", "cpu", &m) != 0) {
    fprintf(stderr, "compile: %s\n", toroid_last_error());
    return 1;
  }
  float x[4] = {1, 2, 3, -4}, z[4] = {0, 0, 0, 0};
  toroid_tensor in = vector4(x), out = vector4(z);
  if (toroid_run_into(m, &in, 1, &out, 1, NULL, 0, NULL) != 0) {
    fprintf(stderr, "run: %s\n", toroid_last_error());
    return 1;
  }
  for (int i = 0; i < 4; ++i)
    if (z[i] != 4 * x[i]) {
      fprintf(stderr, "element %d: %g, expected %g\n", i, z[i], 4 * x[i]);
      return 1;
    }
  toroid_module_free(m);
  printf("toroid %s (C, pkg-config): ok\n", toroid_version());
  return 0;
}
