#!/usr/bin/env bash
# The main job: set up, then a 60-second default campaign against ONNXRuntime; prints the report's path.
# Extra arguments go to `dlcfuzz fuzz` (e.g. --compiler tvm --time 10m).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out="runs/demo-$(date +%Y%m%d-%H%M%S)"
exec .venv/bin/dlcfuzz fuzz --compiler onnxruntime --strategy auto --time 60s --jobs 2 --seed 0 --out "$out" "$@"
