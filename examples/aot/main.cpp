// Runs an AOT package (toroidc aot, or toroid.aot.package in Python) on one f32 input read from a
// raw file, and writes its first output as raw f32: no Python, no compiler, only libtoroid.so.
//
//   aot_run MODEL.toroidpkg INPUT.bin D0,D1,... OUTPUT.bin
#include <toroid/c_api.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int fail(const std::string& what) {
  std::cerr << "aot_run: " << what << "\n";
  return 1;
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return fail("usage: aot_run MODEL.toroidpkg INPUT.bin D0,D1,... OUTPUT.bin");
  std::vector<int64_t> shape = parse_shape(argv[3]);
  if (shape.empty() || shape.size() > TOROID_MAX_DIMS) return fail("bad shape " + std::string(argv[3]));
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<float> input(static_cast<size_t>(numel));
  std::ifstream in(argv[2], std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(input.data()), static_cast<std::streamsize>(numel * sizeof(float))))
    return fail(std::string("cannot read ") + std::to_string(numel) + " floats from " + argv[2]);

  toroid_package* package = nullptr;
  if (toroid_package_load(argv[1], &package) != 0) return fail(toroid_last_error());
  if (toroid_package_num_inputs(package) != 1) return fail("this example feeds packages of one input");

  toroid_tensor x = {};
  x.data = input.data();
  x.dtype = TOROID_FLOAT32;
  x.ndim = static_cast<int32_t>(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    x.sizes[d] = shape[d];
    x.strides[d] = d + 1 == shape.size() ? 1 : x.strides[d + 1] * shape[d + 1];
  }
  std::vector<toroid_tensor> outputs(static_cast<size_t>(toroid_package_num_outputs(package)));
  if (toroid_package_run(package, &x, 1, outputs.data(), static_cast<int>(outputs.size())) != 0)
    return fail(toroid_last_error());

  const toroid_tensor& y = outputs.at(0);
  if (y.ndim < 0 || y.dtype != TOROID_FLOAT32) return fail("the first output is not an f32 tensor");
  // Row-major copy of the output through its strides.
  int64_t count = 1;
  for (int d = 0; d < y.ndim; ++d) count *= y.sizes[d];
  std::vector<float> flat(static_cast<size_t>(count));
  const float* base = static_cast<const float*>(y.data) + y.offset;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, at = 0;
    for (int d = y.ndim - 1; d >= 0; --d) {
      at += (rest % y.sizes[d]) * y.strides[d];
      rest /= y.sizes[d];
    }
    flat[static_cast<size_t>(i)] = base[at];
  }
  std::ofstream out(argv[4], std::ios::binary);
  out.write(reinterpret_cast<const char*>(flat.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!out) return fail(std::string("cannot write ") + argv[4]);
  std::cout << "output 0: f32[";
  for (int d = 0; d < y.ndim; ++d) std::cout << (d ? ", " : "") << y.sizes[d];
  std::cout << "] written to " << argv[4] << "\n";
  for (toroid_tensor& t : outputs) toroid_tensor_release(&t);
  toroid_package_free(package);
  return 0;
}
