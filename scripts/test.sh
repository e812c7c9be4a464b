#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, lint (ruff, and eslint for the page's JavaScript), then pytest,
# which ends with its slowest 15 tests.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
"${PYTHON:-python3}" -m ruff check .
# the page's JavaScript (app/page/*.js): eslint's recommended rules (eslint.config.js); no node, no lint, said so
if [ -x node_modules/.bin/eslint ]; then
  node_modules/.bin/eslint --max-warnings 0 .
else
  echo "warning: eslint is not installed (no node/npm?): the page's JavaScript was not linted" >&2
fi
exec "${PYTHON:-python3}" -m pytest -q --durations=15 "$@"
