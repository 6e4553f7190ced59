#!/usr/bin/env bash
# Set up, lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench scripts
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
