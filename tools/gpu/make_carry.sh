#!/usr/bin/env bash
# Packs what the GPU machine needs from a CPU build (it has no Debian libraries and no build of
# ours): stripped toroidc, libtoroid.so, unit_gpu and unit_capi, and libs.tar.xz with the shared
# libraries they link that the GPU machine's Ubuntu lacks (OpenBLAS, oneDNN, gfortran, ...).
#   tools/gpu/make_carry.sh [BUILD_DIR [CARRY_DIR]]     (defaults: build, .cudacarry)
# Then: run(carry=[".cudacarry"], command="tools/gpu/cuda_checks.sh .cudacarry ...").
# .cudacarry must be ignored by git (this script adds it to .git/info/exclude).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}; carry=${2:-$root/.cudacarry}
mkdir -p "$root/.git/info"
grep -qx '/.cudacarry/' "$root/.git/info/exclude" 2>/dev/null || echo '/.cudacarry/' >> "$root/.git/info/exclude"
rm -rf "$carry"; mkdir -p "$carry"
# KEEP_SYMBOLS=1 keeps libtoroid.so's symbols, for a profile read on this machine; PROFILER=1 also
# carries gperftools' sampling profiler (libprofiler.so.0 and libunwind.so.8, from the Debian
# package libgoogle-perftools4) for tools/gpu/capi_loop.py --profile: the GPU machine has no perf.
for f in tools/toroidc/toroidc src/capi/libtoroid.so tests/unit/unit_gpu tests/unit/unit_capi; do
  [ -e "$build/$f" ] || continue
  if [ "${KEEP_SYMBOLS:-0}" = 1 ] && [ "$f" = src/capi/libtoroid.so ]; then strip --strip-debug -o "$carry/libtoroid.so" "$build/$f"
  else strip -o "$carry/$(basename "$f")" "$build/$f"; fi
done
# unit_capi asks for libtoroid.so by its SONAME (libtoroid.so.0.2): the same file under that name.
soname=$(objdump -p "$carry/libtoroid.so" | awk '/SONAME/{print $2}')
[ -z "$soname" ] || cp "$carry/libtoroid.so" "$carry/$soname"
libs=$(ldd "$build/src/capi/libtoroid.so" "$build/tools/toroidc/toroidc" | awk '/=> \//{print $3}' |
       grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' | sort -u)
if [ "${PROFILER:-0}" = 1 ]; then
  libs="$libs $(ldd /usr/lib/x86_64-linux-gnu/libprofiler.so.0 | awk '/=> \//{print $3}' | grep -E 'libunwind|liblzma')"
  libs="$libs /usr/lib/x86_64-linux-gnu/libprofiler.so.0"
fi
tmp=$(mktemp -d); for l in $libs; do cp -L "$l" "$tmp/"; done
tar cJf "$carry/libs.tar.xz" -C "$tmp" . && rm -rf "$tmp"
git -C "$root" rev-parse HEAD > "$carry/COMMIT"
du -sh "$carry"
