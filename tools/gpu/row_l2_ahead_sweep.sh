#!/usr/bin/env bash
# Row kernels asking L2 for the rows D ahead ($TOROID_CUDA_ROW_L2_AHEAD, an experiment) on the GPU
# machine: bench/gpu_bench.py's row workloads once per distance ("-" leaves it unset), each with
# a cache of its own. Extra settings for every run go in $EXTRA ("TOROID_CUDA_ROW_BLOCKS_PER_SM=8").
#   WORKLOADS="layer_norm softmax" tools/gpu/row_l2_ahead_sweep.sh - 1056 2112
# Run from the repository root with .cudacarry carried; JSON per distance in $OUT.
set -uo pipefail
out=${OUT:-/tmp/l2-ahead}; mkdir -p "$out"
mkdir -p /tmp/l && tar xJf .cudacarry/libs.tar.xz -C /tmp/l
export LD_LIBRARY_PATH=$PWD/.cudacarry:/tmp/l TOROID_LIBRARY=$PWD/.cudacarry/libtoroid.so PYTHONPATH=$PWD/python
only=(); for w in ${WORKLOADS:-layer_norm softmax rmsnorm_residual}; do only+=(--only "$w"); done
extra=(${EXTRA:-})
for d in "$@"; do
  env=("${extra[@]}"); [ "$d" = - ] || env+=("TOROID_CUDA_ROW_L2_AHEAD=$d")
  echo "== L2 ahead $d ${EXTRA:-}"
  name="d$d${EXTRA:+-x}"; n=0; while [ -e "$out/$name-$n.json" ]; do n=$((n + 1)); done
  env "${env[@]}" TOROID_CACHE_DIR="/tmp/tc-$name" python3 bench/gpu_bench.py --no-inductor --reps 50 \
    --lib .cudacarry/libtoroid.so --toroidc .cudacarry/toroidc "${only[@]}" --json "$out/$name-$n.json" 2>&1 |
    grep -E '^\| [a-z_0-9]+ \| [0-9.]+ '
done
