/* The C ABI from C (C99, no C++ anywhere in the caller): the header compiles as C, and a graph
 * compiles, describes its outputs and runs into the caller's memory; a bad call returns non-zero
 * with a message. Exit 0 on success. */
#include <stdio.h>
#include <string.h>

#include "toroid/c_api.h"

static const char* kGraph =
    "graph @c functional {\n"
    "  %x = input : f32[2, 3]\n"
    "  %y = aten.mul.Tensor(%x, %x) : f32[2, 3]\n"
    "  output %y\n"
    "}\n";

static int fail(const char* what) {
  fprintf(stderr, "capi_c_test: %s: %s\n", what, toroid_last_error());
  return 1;
}

int main(void) {
  if (toroid_abi_version() != TOROID_ABI_VERSION) return fail("ABI version");
  toroid_compile_options o;
  toroid_compile_options_init(&o);
  toroid_module* m = NULL;
  if (toroid_compile_with_options(kGraph, "c.tir", &o, &m)) return fail("compile");
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
  toroid_tensor in;
  memset(&in, 0, sizeof in);
  in.data = x;
  in.dtype = TOROID_FLOAT32;
  in.ndim = 2;
  in.sizes[0] = 2;
  in.sizes[1] = 3;
  in.strides[0] = 3;
  in.strides[1] = 1;
  toroid_output_info info;
  size_t ws = 1;
  if (toroid_get_output_info(m, &in, 1, &info, 1, &ws)) return fail("output info");
  if (info.ndim != 2 || info.sizes[1] != 3 || info.strides[0] != 3 || info.alias_input != -1 || ws != 0)
    return fail("output info values");
  int64_t planned = -1;
  if (toroid_planned_peak_bytes(m, &in, 1, &planned) || planned != 6 * (int64_t)sizeof(float))
    return fail("planned peak bytes");
  toroid_tensor out = in;
  out.data = y;
  if (toroid_run_into(m, &in, 1, &out, 1, NULL, 0, NULL)) return fail("run_into");
  for (int i = 0; i < 6; ++i)
    if (y[i] != x[i] * x[i]) return fail("values");
  if (toroid_run_into(m, &in, 2, &out, 1, NULL, 0, NULL) == 0 || !strstr(toroid_last_error(), "takes 1 inputs"))
    return fail("wrong input count accepted");
  toroid_module_free(m);
  puts("capi_c_test: ok");
  return 0;
}
