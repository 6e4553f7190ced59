#!/usr/bin/env bash
# Set up, lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench scripts
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache  # the floors of docs/architecture.md
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=30 "$@"  # the 30 slowest tests, so a slow one shows
