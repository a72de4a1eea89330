#!/usr/bin/env bash
# Row-kernel launch and slot sweep for the GPU benchmark's row workloads (toroid and eager only):
# slots per thread (compiled in), the most threads a row takes, row blocks per SM. Run on the GPU
# machine from the repo root with the carried build; prints gpu_bench's table rows per setting.
#   tools/gpu/row_sweep.sh LIBDIR WORKLOAD...
set -uo pipefail
B=$1; shift
. "$(dirname "$0")/sweep_common.sh"
run
for s in 2 8 16; do run TOROID_CUDA_ROW_SLOTS=$s; done
for mt in 256 1024; do run TOROID_CUDA_ROW_MAX_THREADS=$mt; done
for bps in 1 2 4; do run TOROID_CUDA_ROW_BLOCKS_PER_SM=$bps; done
run TOROID_CUDA_ROW_PREFETCH=0
