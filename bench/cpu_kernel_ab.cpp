// Times one generated CPU kernel (`toroidc run G --emit=cpp`, compiled to a shared object) called
// directly, with no runtime around it: for A/B comparisons of code generation.
//   cpu_kernel_ab KERNEL.so SYMBOL BUFFERS BYTES SYM... [--calls N]
// BUFFERS buffers of BYTES bytes each (every argument of the kernel gets one, inputs filled with
// values near 1 in both bf16 and f32 readings), SYM... the kernel's symbol values in slot order.
// Prints the median microseconds of N calls (default 1000).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: cpu_kernel_ab KERNEL.so SYMBOL BUFFERS BYTES SYM... [--calls N]\n");
    return 2;
  }
  void* so = dlopen(argv[1], RTLD_NOW);
  if (!so) return std::fprintf(stderr, "%s\n", dlerror()), 1;
  auto kernel = reinterpret_cast<void (*)(char* const*, const int64_t*)>(dlsym(so, argv[2]));
  if (!kernel) return std::fprintf(stderr, "no symbol %s in %s\n", argv[2], argv[1]), 1;
  int buffers = std::atoi(argv[3]);
  size_t bytes = std::strtoull(argv[4], nullptr, 10);
  std::vector<int64_t> syms;
  int calls = 1000;
  for (int i = 5; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--calls") && i + 1 < argc) calls = std::atoi(argv[++i]);
    else syms.push_back(std::atoll(argv[i]));
  }
  // 0x3f80 + small: bf16 values in [1, 2); as f32 words, values near 1 too.
  std::vector<std::vector<uint32_t>> data(buffers, std::vector<uint32_t>(bytes / 4 + 1));
  std::vector<char*> bufs;
  for (auto& d : data) {
    for (size_t i = 0; i < d.size(); ++i) d[i] = 0x3f803f80u + static_cast<uint32_t>(i * 7919 % 127) * 0x10001u;
    bufs.push_back(reinterpret_cast<char*>(d.data()));
  }
  std::vector<double> us;
  for (int c = 0; c < calls; ++c) {
    auto t0 = std::chrono::steady_clock::now();
    kernel(bufs.data(), syms.data());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("%s %.1f us (median of %d)\n", argv[1], us[us.size() / 2], calls);
}
