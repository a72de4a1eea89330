#!/usr/bin/env bash
# Every test: a clang build (warnings are errors), the g++ build's unit and lit tests, then the
# same tests under AddressSanitizer + UndefinedBehaviorSanitizer. ctest prints the counts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TOROID_JOBS:-$(nproc)}
# python3-torch (1.13): the PyTorch frontend's tests (tests/python) run on the CPU with it.
"$root/scripts/setup.sh" python3-torch

echo "== build (clang++ 14, -Werror)"
"$root/scripts/build.sh" "$root/build-clang" -DCMAKE_CXX_COMPILER=clang++ -DTOROID_TESTS=OFF

echo "== build and test (g++ 12, RelWithDebInfo)"
"$root/scripts/build.sh" "$root/build"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

echo "== build and test (g++ 12, ASan + UBSan)"
# The generated kernels are compiled by the system compiler either way: share the g++ build's.
"$root/scripts/build.sh" "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DTOROID_SANITIZE=ON -DTOROID_BENCH=OFF \
  -DTOROID_TEST_KERNEL_CACHE="$root/build/kernel-cache"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs"
