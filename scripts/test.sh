#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, lint (ruff), then pytest, which ends with its slowest 15 tests.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
"${PYTHON:-python3}" -m ruff check .
exec "${PYTHON:-python3}" -m pytest -q --durations=15 "$@"
