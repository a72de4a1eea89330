#!/usr/bin/env bash
# Register-pressure sweep for row kernels (toroid and eager only): fewer slot arrays a loop (later
# loops' read-only loads read group by group), no prefetch, and a launch bound's blocks per SM.
# Run on the GPU machine from the repo root with the carried build; prints gpu_bench's table rows
# per setting.
#   tools/gpu/register_sweep.sh LIBDIR WORKLOAD...
set -uo pipefail
B=$1; shift
. "$(dirname "$0")/sweep_common.sh"
run
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=1
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=2
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=1 TOROID_CUDA_ROW_MIN_BLOCKS=16
run TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=2 TOROID_CUDA_ROW_MIN_BLOCKS=12
run TOROID_CUDA_ROW_SLOTS=4 TOROID_CUDA_ROW_PREFETCH=0 TOROID_CUDA_SLOT_ARRAYS=1
