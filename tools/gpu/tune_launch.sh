#!/usr/bin/env bash
# Launch-shape sweep for the GPU benchmark (toroid and eager only): rows per block and flat grid
# sizes through the executor's tuning variables. Run on the GPU machine from the repo root.
#   [ROWS_ONLY=1] tools/gpu/tune_launch.sh LIBDIR WORKLOAD...
set -uo pipefail
B=$1; shift
mkdir -p /tmp/l && tar xJf "$B/libs.tar.xz" -C /tmp/l
export LD_LIBRARY_PATH=/tmp/l PYTHONUNBUFFERED=1
only=(); for w in "$@"; do only+=(--only "$w"); done
run() {
  echo "== $*"
  env "$@" python3 bench/gpu_bench.py --lib "$B/libtoroid.so" --reps 20 --no-inductor "${only[@]}" 2>&1 | grep '^| [a-z]'
}
for rg in 1 2 4 8; do run TOROID_CUDA_ROW_GROUPS=$rg; done
for mt in 256 512 1024; do run TOROID_CUDA_ROW_MAX_THREADS=$mt; done
[[ ${ROWS_ONLY:-0} == 1 ]] && exit 0
for ft in 256 512; do
  for bps in 4 16; do run TOROID_CUDA_FLAT_THREADS=$ft TOROID_CUDA_BLOCKS_PER_SM=$bps; done
done
