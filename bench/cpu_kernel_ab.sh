#!/usr/bin/env bash
# A/B of the CPU code two toroidc builds generate for one graph: each kernel0 compiled with
# toroid's flags and timed alone (bench/cpu_kernel_ab.cpp), best of five medians, on $THREADS
# OpenMP threads (default 1).
#   [THREADS=N] bench/cpu_kernel_ab.sh OLD_TOROIDC NEW_TOROIDC GRAPH.tir BUFFERS BYTES SYM...
# BUFFERS: the kernel's argument count (its `bufs`); BYTES: enough for the largest; SYM...: its
# symbol values. The graph should compile to one kernel (kernel0).
set -euo pipefail
old=$1 new=$2 graph=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd); tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
g++ -O2 -o "$tmp/ab" "$here/cpu_kernel_ab.cpp" -ldl
# The runtime's compiler and flags on this host (the 512-bit preference on AVX-512 included).
build=$("$new" cache flags)
for side in old new; do
  "${!side}" run "$graph" --emit=cpp > "$tmp/$side.cpp"
  $build -o "$tmp/$side.so" "$tmp/$side.cpp"
done
for side in old new; do
  best=
  for _ in 1 2 3 4 5; do
    t=$(OMP_NUM_THREADS=${THREADS:-1} "$tmp/ab" "$tmp/$side.so" kernel0 "$@" | awk '{print $2}')
    best=$(python3 -c "print(min(float('$t'), float('${best:-inf}')))")
  done
  echo "$side: $best us (best of five medians, ${THREADS:-1} threads)"
done
