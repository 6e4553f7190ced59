#!/usr/bin/env bash
# Set up, lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench scripts
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache  # the floors of docs/architecture.md
# two test processes, a test file each at a time (a module's fixtures are built once); DLCFUZZ_TEST_PROCESSES=0
# runs in this process. Files in tests/conftest.py's order (those with `slow` tests first), not pytest-xdist's
# (the most tests first). The 30 slowest tests are printed, so a slow one shows.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${DLCFUZZ_TEST_PROCESSES:-2}" --dist loadfile \
    --no-loadscope-reorder --durations=30 "$@"
