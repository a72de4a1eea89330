#!/bin/sh
# Runs a frontend test with the first Python that has torch ($TOROID_PYTHON, Debian's python3,
# then python3 on PATH); exits 77 (ctest's skip) when none has it.
for py in "$TOROID_PYTHON" /usr/bin/python3 python3; do
  if [ -n "$py" ] && "$py" -c "import torch" >/dev/null 2>&1; then
    exec "$py" "$@"
  fi
done
echo "no Python with torch found: skipping"
exit 77
