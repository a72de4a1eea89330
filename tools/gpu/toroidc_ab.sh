#!/usr/bin/env bash
# One cpu_probe kernel as two toroidc binaries generate it, timed alternately (no Inductor: a
# quick A/B of a codegen change on the GPU machine's host), at 1 thread and at all of them.
#   tools/gpu/toroidc_ab.sh A_TOROIDC B_TOROIDC [ROUNDS] NAME...
# Needs the libraries toroidc links on LD_LIBRARY_PATH (as tools/gpu/make_carry.sh packs them).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/tools/gpu/cpu_probe
a=$1 b=$2; shift 2
rounds=3; [[ ${1:-} =~ ^[0-9]+$ ]] && { rounds=$1; shift; }
work=$(mktemp -d)
flags="-O3 -march=native -mprefer-vector-width=512 -fopenmp -shared -fPIC -fno-math-errno"
g++ -O2 -o "$work/probe" "$dir/probe.cpp" -ldl
threads=$(nproc)
echo "| kernel | round | A us, 1 thread | B us, 1 thread | A us, $threads threads | B us, $threads threads |"
echo "|---|---|---|---|---|---|"
for n in "$@"; do
  for v in a b; do
    "${!v}" run "$dir/$n.tir" --emit=cpp > "$work/$n-$v.cpp"
    g++ $flags -o "$work/$n-$v.so" "$work/$n-$v.cpp" -Wl,--no-as-needed -lmvec
  done
  nbufs=$(grep -o 'bufs\[[0-9]*\]' "$work/$n-a.cpp" | sort -u | wc -l)
  bytes=$((64 << 20))
  for r in $(seq "$rounds"); do
    row="| $n | $r"
    for t in 1 "$threads"; do
      for v in a b; do
        calls=50; [ "$t" = 1 ] || calls=500
        row="$row | $(OMP_NUM_THREADS=$t "$work/probe" "$work/$n-$v.so" "$nbufs" "$bytes" "$calls")"
      done
    done
    echo "$row |"
  done
done
rm -rf "$work"
