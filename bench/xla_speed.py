"""Throughput of dlcfuzz's XLA campaigns on this machine: one test per jit-compiled module (the old mode)
beside 8 tests per module (`--per-module`), measured side by side in one run.

Each mode is a campaign of the random strategy (`bench/tests_per_module.py`, which says what is counted):
same seed, same tests, the backend's configurations (`xla-nopasses`, `xla`, and on half of the tests a
sampled `xla_disable_hlo_passes` set) and input sets. Prints each mode's tests/s, judged executions/s and
compiles, whether the verdicts are the same, `executions per compile: N, speed-up: S` and, last,
`xla tests/s: N` (the new mode's).

    python bench/xla_speed.py [--tests 48] [--ops 8] [--jobs 1] [--seed 0] [--per-module K]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests_per_module import arguments, compare  # noqa: E402


def main() -> None:
    args = arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0])).parse_args()
    new = list(compare("xla", args).values())[-1]
    print(f"xla tests/s: {new['tests'] / new['seconds']:.2f}")


if __name__ == "__main__":
    main()
