#!/usr/bin/env bash
# pip installs the Python package from the repository into a fresh virtual environment with no
# network (--no-index: its build backend is in the repository, python/_build); `import toroid`
# then finds the library the wheel bundles, with no environment variable, and the package's
# version is the library's. Exits 77 (skip) where Python has no venv module.
#   tests/python_wheel_check.sh PYTHON SOURCE_DIR LIBRARY
set -euo pipefail
py=$1; src=$2; lib=$3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$py" -m venv "$work/venv" 2>/dev/null || { echo "no venv module for $py (Debian: python3-venv): skipping"; exit 77; }
TOROID_LIBRARY="$lib" "$work/venv/bin/python" -m pip install --no-index --no-cache-dir -q "$src/python"
cd "$work"
env -u TOROID_LIBRARY -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import os
import sys
import toroid
from toroid import _capi

L = _capi.lib()
package = os.path.dirname(toroid.__file__)
assert package.startswith(sys.prefix), "imported %s, not the environment's package" % package
assert L._name == os.path.join(package, "libtoroid.so"), "loaded %s, not the wheel's library" % L._name
assert os.path.exists(os.path.join(package, "py.typed")), "py.typed missing"
version = L.toroid_version().decode()
assert version == toroid.__version__, "library %s, package %s" % (version, toroid.__version__)
assert toroid.op_supported("aten.add.Tensor")
print("pip-installed toroid %s from %s: ok" % (version, package))
PY
