#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, then pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
exec "${PYTHON:-python3}" -m pytest -q "$@"
