// Times one generated CPU kernel alone: loads KERNEL.so, gives kernel0 NBUFS buffers of BYTES
// each (bf16 1.0 bit patterns, which every dtype reads as a finite value) and reports the
// median of five rounds of CALLS calls, in microseconds a call. For tools/gpu/cpu_probe.sh.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s KERNEL.so NBUFS BYTES CALLS\n", argv[0]);
    return 2;
  }
  void* so = dlopen(argv[1], RTLD_NOW);
  if (!so) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  using Kernel = void (*)(char* const*, const int64_t*);
  auto kernel = reinterpret_cast<Kernel>(dlsym(so, "kernel0"));
  if (!kernel) {
    std::fprintf(stderr, "no kernel0 in %s\n", argv[1]);
    return 1;
  }
  int nbufs = std::atoi(argv[2]);
  size_t bytes = std::strtoull(argv[3], nullptr, 10);
  int calls = std::atoi(argv[4]);
  std::vector<char*> bufs;
  for (int i = 0; i < nbufs; ++i) {
    auto* p = static_cast<uint16_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    for (size_t k = 0; k < bytes / 2; ++k) p[k] = 0x3f80;
    bufs.push_back(reinterpret_cast<char*>(p));
  }
  int64_t syms[16] = {};
  for (int i = 0; i < 20; ++i) kernel(bufs.data(), syms);
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) kernel(bufs.data(), syms);
    auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  std::printf("%.2f\n", rounds[2]);
}
