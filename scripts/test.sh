#!/usr/bin/env bash
# The whole test suite on a fresh machine: install, lint (ruff, and eslint for the page's JavaScript), then pytest,
# which ends with its slowest 15 tests. pytest runs on TEST_WORKERS processes (pytest-xdist; 2 unless told, one per
# core of the machine the suite is written for), each taking whole test files, so that a file's module fixtures (a
# browser, a built page) are made once; each worker starts its own app server when a test first needs one. A
# failure's traceback is short (its own lines, not the libraries'), so that its message, with a browser test's account
# of the page and the server (tests/conftest.py), ends the output.
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
exec "${PYTHON:-python3}" -m pytest -q -n "${TEST_WORKERS:-2}" --dist loadfile --tb=short --durations=15 "$@"
