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
