#!/usr/bin/env bash
# Installs a build into a temporary prefix and builds two programs against the installed package:
# a C++ one with find_package(toroid) and a C one with pkg-config, then runs both (CPU). Also
# checks that libtoroid.so exports the C API only and carries its versioned SONAME.
#   tests/install_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1; src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libtoroid.so)
libdir=$(dirname "$lib")
version=$(sed -n 's/^project(toroid VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
py_version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$src/python/toroid/__init__.py")
[ "$py_version" = "$version" ] || { echo "python/toroid __version__ $py_version, CMake $version"; exit 1; }
soname=$(objdump -p "$lib" | awk '/SONAME/{print $2}')
[ "$soname" = "libtoroid.so.${version%.*}" ] || { echo "SONAME $soname, expected libtoroid.so.${version%.*}"; exit 1; }
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^toroid_' | grep -v '^$' || true)
[ -z "$others" ] || { echo "libtoroid.so exports more than the C API:"; echo "$others" | head; exit 1; }
echo "installed $(basename "$(readlink -f "$lib")"), SONAME $soname, $(nm -D --defined-only "$lib" | grep -c ' toroid_') symbols, all toroid_*"
for tool in toroidc toroid-opt; do
  [ "$("$prefix/bin/$tool" --version)" = "$tool $version" ] || { echo "bin/$tool --version: not '$tool $version'"; exit 1; }
done
# C++ with find_package (CMAKE_PREFIX_PATH: the prefix only).
cmake -S "$src/tests/install" -B "$work/cxx" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cxx" >/dev/null
TOROID_CACHE_DIR="$work/cache" "$work/cxx/consumer_cxx"
# C with pkg-config.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion toroid)" = "$version" ] || { echo "toroid.pc says $(pkg-config --modversion toroid)"; exit 1; }
cc -std=c11 -Wall -Werror "$src/tests/install/consumer.c" -o "$work/consumer_c" $(pkg-config --cflags --libs toroid)
LD_LIBRARY_PATH="$libdir" TOROID_CACHE_DIR="$work/cache" "$work/consumer_c"
# The AOT example (examples/aot) built against the install: it runs a package of the MLP example
# with no compiler (CXX points nowhere, empty kernel cache), and its output is the bytes of
# toroidc's run of the same package on the same input, which --check compares with the
# reference interpreter.
cmake -S "$src/examples/aot" -B "$work/aot" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/aot" >/dev/null
TOROID_CACHE_DIR="$work/cache" "$prefix/bin/toroidc" aot "$src/examples/mlp.tir" -o "$work/mlp.toroidpkg" --random-inputs --seed 7
python3 - "$work" <<'PY'
import struct, sys
values = [((i * 37) % 101) / 50.0 - 1.0 for i in range(8 * 64)]
open(sys.argv[1] + "/x.bin", "wb").write(struct.pack("<%df" % len(values), *values))
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 64), }"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(sys.argv[1] + "/x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % len(values), *values))
PY
LD_LIBRARY_PATH="$libdir" CXX=/nonexistent/c++ TOROID_CACHE_DIR="$work/cache-aot" \
  "$work/aot/aot_run" "$work/mlp.toroidpkg" "$work/x.bin" 8,64 "$work/y.bin"
TOROID_CACHE_DIR="$work/cache" "$prefix/bin/toroidc" run "$work/mlp.toroidpkg" --input "x=$work/x.npy" --check \
  --output-dir "$work/ref" | tail -1
python3 - "$work" <<'PY'
import sys
got = open(sys.argv[1] + "/y.bin", "rb").read()
ref = open(sys.argv[1] + "/ref/out0.npy", "rb").read()
assert len(got) == 8 * 10 * 4 and ref.endswith(got), "aot_run's output differs from toroidc's run of the package"
print("aot_run: output matches toroidc run of the package (checked against the reference interpreter)")
PY
