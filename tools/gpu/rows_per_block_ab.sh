#!/usr/bin/env bash
# $TOROID_CUDA_ROWS_PER_BLOCK on the GPU machine: correctness with it on (examples, unit_gpu),
# then the row workloads of bench/gpu_bench.py and the row-heavy models with it off and on.
#   tools/gpu/rows_per_block_ab.sh [R] [checks] [micro] [models] [dump]     (R default 8)
# Run from the repository root with .cudacarry carried; logs and JSON go to $OUT.
set -uo pipefail
R=${1:-8}; shift || true
what=" ${*:-checks micro models} "
out=${OUT:-/tmp/rows-ab}; mkdir -p "$out"
mkdir -p /tmp/l && tar xJf .cudacarry/libs.tar.xz -C /tmp/l
export LD_LIBRARY_PATH=$PWD/.cudacarry:/tmp/l TOROID_LIBRARY=$PWD/.cudacarry/libtoroid.so PYTHONPATH=$PWD/python
# R=0 runs without the knob; each setting has its own cache (the cache keys do not hold the environment).
with_r() { local r=$1; shift; if [ "$r" = 0 ]; then env -u TOROID_CUDA_ROWS_PER_BLOCK TOROID_CACHE_DIR=/tmp/tc0 "$@"
           else TOROID_CUDA_ROWS_PER_BLOCK=$r TOROID_CACHE_DIR=/tmp/tc$r "$@"; fi; }
stamp() { echo "== $(date +%T) $*"; }
if [[ $what == *" checks "* ]]; then
  stamp "checks with R=$R"
  OUT=$out/checks with_r "$R" tools/gpu/cuda_checks.sh .cudacarry examples unit 2>&1 | tail -40
fi
rows=(--only softmax --only window_softmax --only layer_norm --only rmsnorm_residual --only cross_entropy)
if [[ $what == *" micro "* ]]; then
  for r in 0 "$R"; do
    stamp "micro R=$r"
    with_r "$r" python3 bench/gpu_bench.py --lib .cudacarry/libtoroid.so \
      --toroidc .cudacarry/toroidc --reps 50 "${rows[@]}" --json "$out/micro-r$r.json" 2>&1 | tail -12
  done
fi
if [[ $what == *" models "* ]]; then
  for r in 0 "$R"; do
    stamp "models R=$r"
    backends=toroid,inductor; [ "$r" = 0 ] || backends=toroid
    with_r "$r" python3 tools/gpu/model_suite.py --only swin_t,vit_b_16,timm_deit_tiny --backends $backends \
      --modes inference --reps 20 --out "$out/models-r$r.jsonl" 2>&1 | tail -8
  done
fi
if [[ $what == *" dump "* ]]; then
  stamp "debug dump swin_t"
  with_r 0 python3 tools/gpu/debug_dump.py swin_t --out "$out/dbg" 2>&1 | tail -3
  tar cJf "$out/dbg.tar.xz" -C "$out" dbg && rm -rf "$out/dbg"
fi
stamp done
