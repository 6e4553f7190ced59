#!/usr/bin/env bash
# Creates .venv (if missing) and installs dlcfuzz with every compiler and the dev tools, pinned.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.dlcfuzz-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[all,dev]"
  touch "$stamp"
fi
# Debian's Chromium renders the campaign report in tests/test_report.py (the test skips without it)
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || echo "setup: chromium not installed (the browser test will skip)" >&2
fi
