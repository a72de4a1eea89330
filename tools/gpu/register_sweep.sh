#!/usr/bin/env bash
# Register-pressure sweep for row kernels (toroid and eager only): fewer slot arrays a loop (later
# loops' read-only loads read group by group), no prefetch, and a launch bound's blocks per SM.
# Run on the GPU machine from the repo root with the carried build; prints gpu_bench's table rows
# per setting.
#   tools/gpu/register_sweep.sh LIBDIR WORKLOAD...
set -uo pipefail
B=$1; shift
mkdir -p /tmp/l && tar xJf "$B/libs.tar.xz" -C /tmp/l
export LD_LIBRARY_PATH=$B:/tmp/l PYTHONUNBUFFERED=1 TOROID_CACHE_DIR=${TOROID_CACHE_DIR:-/tmp/toroid-cache}
only=(); for w in "$@"; do only+=(--only "$w"); done
run() {
  echo "== ${*:-defaults}"
  env "$@" python3 bench/gpu_bench.py --lib "$B/libtoroid.so" --reps 20 --no-inductor "${only[@]}" 2>&1 | grep '^| [a-z]'
}
run
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=1
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=2
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=1 TOROID_CUDA_ROW_MIN_BLOCKS=16
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=2 TOROID_CUDA_ROW_MIN_BLOCKS=12
run TOROID_CUDA_ROW_SLOTS=4 TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=1
