# Sourced by the row-kernel sweeps (row_sweep.sh, register_sweep.sh) after `B=$1; shift`: unpacks
# the carried libraries and defines `run SETTING...`, which prints gpu_bench's table rows for the
# workloads named on the command line (toroid and eager only) under those environment settings.
mkdir -p /tmp/l && tar xJf "$B/libs.tar.xz" -C /tmp/l
export LD_LIBRARY_PATH=$B:/tmp/l PYTHONUNBUFFERED=1 TOROID_CACHE_DIR=${TOROID_CACHE_DIR:-/tmp/toroid-cache}
only=(); for w in "$@"; do only+=(--only "$w"); done
run() {
  echo "== ${*:-defaults}"
  env "$@" python3 bench/gpu_bench.py --lib "$B/libtoroid.so" --reps 20 --no-inductor "${only[@]}" 2>&1 | grep '^| [a-z]'
}
