#!/usr/bin/env bash
# Creates benchmarks/.peer-venv with the peer subset2evaluate 1.0.27 (never a project dependency).
# Prints the peer's python path. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .peer-venv/bin/python ] || ! .peer-venv/bin/python -c "import subset2evaluate" 2>/dev/null; then
  python3 -m venv .peer-venv
  .peer-venv/bin/pip install -q --constraint ../constraints.txt torch==2.13.0 >&2
  .peer-venv/bin/pip install -q --constraint ../constraints.txt subset2evaluate==1.0.27 >&2
fi
echo "$(pwd)/.peer-venv/bin/python"
