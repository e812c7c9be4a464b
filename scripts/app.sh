#!/usr/bin/env bash
# Install what the app needs, then start it with the shipped model (http://127.0.0.1:7860).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec "${PYTHON:-python3}" app.py "$@"
