#!/usr/bin/env bash
# Issue 12's conformance runs on the GPU machine, one stage per device call (each under the
# 10-minute limit), writing results and logs to $OUT (copy them into bench/results/ here).
#   tools/gpu/make_carry.sh                                  # on the CPU machine, first
#   run(carry=[".cudacarry"], command="tools/gpu/conformance.sh STAGE [ARGS...]")
# Stages:
#   checks                  torch_frontend_check.py and bisect_model.py swin_t (expects 0 failing)
#   opinfo-cuda             OpInfo, float32/bfloat16/float16, toroid and Inductor (about 5 min)
#   opinfo-cpu [K/N]        OpInfo on the CPU, float32 (shard K of N; the CPU compile is slower)
#   models K/N              model_suite.py shard K of N (8 shards fit 8 calls), both backends
#   models-toroid N [FROM]  shards FROM..FROM+N-1 of 8 (default all 8), toroid only, run at once
#                           (pass/fail for every row in one call; times are taken under contention)
# Results carry TOROID_COMMIT (the carried build's commit, from .cudacarry/COMMIT).
set -uo pipefail
stage=${1:?stage}; shift || true
out=${OUT:-/tmp/conformance}; mkdir -p "$out"
mkdir -p /tmp/toroid-libs && tar xJf .cudacarry/libs.tar.xz -C /tmp/toroid-libs
export LD_LIBRARY_PATH=/tmp/toroid-libs:${LD_LIBRARY_PATH:-} TOROID_CACHE_DIR=/tmp/toroid-cache PYTHONUNBUFFERED=1
export TOROID_LIBRARY=$PWD/.cudacarry/libtoroid.so TOROID_COMMIT=$(cat .cudacarry/COMMIT)
case "$stage" in
  checks)
    timeout 150 python3 tools/gpu/torch_frontend_check.py 2>&1 | grep -E "PASS|FAIL" | cut -c1-300
    timeout 300 python3 tools/gpu/bisect_model.py swin_t --depth 4 2>&1 | grep -E "^FAIL|submodules"
    PATH=$PWD/.cudacarry:$PATH python3 tests/lit/compile/Inputs/divide_by_zero.py cuda /tmp/divzero ;;
  opinfo-cuda)
    timeout 560 python3 tools/gpu/opinfo_suite.py --device cuda --jobs 14 --time-budget 450 --op-timeout 120 \
      --out "$out/opinfo-cuda.json" > "$out/opinfo-cuda.log" 2>&1; tail -12 "$out/opinfo-cuda.log" ;;
  opinfo-cpu)
    shard=${1:-0/1}
    timeout 560 python3 tools/gpu/opinfo_suite.py --device cpu --dtypes float32 --jobs 14 --time-budget 450 \
      --op-timeout 120 --shard "$shard" --out "$out/opinfo-cpu.${shard/\//of}.json" > "$out/opinfo-cpu.log" 2>&1
    tail -12 "$out/opinfo-cpu.log" ;;
  models)
    shard=${1:?K/N}
    timeout 560 python3 tools/gpu/model_suite.py --shard "$shard" --time-budget 420 --row-timeout 150 --reps 5 \
      --out "$out/models-cuda.${shard/\//of}.jsonl" > "$out/models.log" 2>&1
    grep -E "^\| |falls back|not run" "$out/models.log" | cut -c1-300 ;;
  models-toroid)
    n=${1:-8}; from=${2:-0}
    for ((k = from; k < from + n; k++)); do
      timeout 560 python3 tools/gpu/model_suite.py --shard "$k/8" --backends toroid --time-budget 480 \
        --row-timeout 200 --reps 3 --out "$out/models-cuda-toroid.${k}of8.jsonl" > "$out/models.$k.log" 2>&1 &
    done
    wait
    cat "$out"/models.*.log | grep -E "^\| |falls back|not run|Error" | cut -c1-300 ;;
  *) echo "unknown stage $stage"; exit 2 ;;
esac
