#!/usr/bin/env bash
# Every test: a clang build (warnings are errors) under ThreadSanitizer with the C ABI's tests,
# the g++ build's unit, lit and Python tests, then the same tests under AddressSanitizer +
# UndefinedBehaviorSanitizer, every run replaying its memory plan (TOROID_VERIFY_LIFECYCLE=1:
# freed blocks poisoned, the measured peak checked against the plan's). ctest prints the counts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TOROID_JOBS:-$(nproc)}
# Each stage's start and the whole run's seconds, for keeping CI's time in view.
stage() { echo "== [$(date +%T), ${SECONDS} s] $*"; }
trap 'echo "== [$(date +%T)] scripts/test.sh ran ${SECONDS} s"' EXIT
# python3-torch (1.13): the PyTorch frontend's tests (tests/python) run on the CPU with it.
"$root/scripts/setup.sh" python3-torch chromium

stage "build (clang++ 14, -Werror, ThreadSanitizer) and the C ABI's tests (8 threads, mixed sizes)"
# The C ABI's tests and the library they link (every layer): clang's warnings and TSan's race
# checks in one build. -O1 with line tables: TSan's reports need no more, and it compiles ~35%
# faster than -O2 -g. TSan needs a fixed address layout on kernels with many random mmap bits
# (setarch -R, where the sandbox allows it).
cmake -S "$root" -B "$root/build-clang" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DTOROID_SANITIZE_THREAD=ON -DTOROID_TESTS=ON \
  -DTOROID_BENCH=OFF -DTOROID_TEST_KERNEL_CACHE="$root/build/kernel-cache" >/dev/null
ninja -C "$root/build-clang" -j "$jobs" unit_capi capi_c_test
stage "TSan tests"
fixed_layout=()
if setarch "$(uname -m)" -R true 2>/dev/null; then fixed_layout=(setarch "$(uname -m)" -R); fi
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OMP_NUM_THREADS=1 \
  "${fixed_layout[@]}" ctest --test-dir "$root/build-clang" --output-on-failure -j "$jobs"

stage "build and test (g++ 12, -O2 without debug information: the sanitizer builds keep it)"
"$root/scripts/build.sh" "$root/build" -DTOROID_DEBUG_INFO=OFF
stage "g++ tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

stage "build and test (g++ 12, ASan + UBSan, TOROID_VERIFY_LIFECYCLE=1)"
# The generated kernels are compiled by the system compiler either way: share the g++ build's.
# Line tables only (-g1): the reports' stacks need no more, and it compiles ~10% faster.
"$root/scripts/build.sh" "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DTOROID_SANITIZE=ON -DTOROID_BENCH=OFF \
  -DTOROID_TEST_KERNEL_CACHE="$root/build/kernel-cache"
stage "ASan + UBSan tests"
TOROID_VERIFY_LIFECYCLE=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs"
