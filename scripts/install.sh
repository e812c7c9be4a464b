#!/usr/bin/env bash
# Installs what the app (and, with --dev, the tests) need. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# torch first, pinned to a release our range admits, so pip does not pull a multi-GB CUDA build
"$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q --root-user-action=ignore "torch==2.13.0"
if [ "${1:-}" = "--dev" ]; then
  "$PY" -m pip install -q --root-user-action=ignore -r requirements-dev.txt
  # the browser test drives Debian's Chromium (Playwright cannot download browsers here), with Noto CJK: without
  # it Chinese is drawn as boxes and every size the phone tests measure is wrong
  missing=()
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || missing+=(fonts-noto-cjk)
  if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
      || echo "warning: could not install ${missing[*]}; the browser tests will be skipped or may fail" >&2
  fi
  # eslint, which lints the page's JavaScript (app/page/), from the npm registry at package-lock.json's versions;
  # again only when the lock file is newer than what node_modules/ holds
  if command -v npm >/dev/null 2>&1; then
    if [ ! -x node_modules/.bin/eslint ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      npm ci --no-audit --no-fund --loglevel=error
    fi
  else
    echo "warning: no node/npm here; the page's JavaScript will not be linted (eslint)" >&2
  fi
else
  "$PY" -m pip install -q --root-user-action=ignore -r requirements.txt
fi
