"""Tzer ablation: equal budgets of the five variants of the low-level TIR fuzzer against TVM.

  general        general mutators only (insertion, deletion, replacement), no coverage feedback
  feedback       + coverage feedback (mutants that add coverage join the seed pool)
  domain         + domain-specific mutators (loop nesting, memory operations, thread binding)
  random-passes  + a random pass sequence for every test
  joint          + joint evolutionary IR / pass-sequence mutation (Tzer's Algorithm 1, N_max = 5)

Every variant starts from the same seeds with the same master seed and runs the same number of
tests (or, with --seconds, the same time); coverage is the union of the chosen sources' items.
Usage: .venv/bin/python bench/tzer_ablation.py [--tests 150 | --seconds 60] [--coverage ir,python]
The last line is `joint/general coverage ratio: X`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tests", type=int, default=150, help="tests per variant (the equal budget)")
    p.add_argument("--seconds", type=float, default=None, help="time per variant instead of a test count")
    p.add_argument("--coverage", default="ir,python", help="coverage sources: ir, python, sancov:LIB")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        import tvm  # noqa: F401
    except ImportError:
        print("apache-tvm is not installed: nothing to measure", file=sys.stderr)
        return 2
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.strategies.tzer import VARIANTS

    figures: dict[str, int] = {}
    budget = f"{a.seconds:.0f} s" if a.seconds else f"{a.tests} tests"
    print(f"budget per variant: {budget}; coverage sources: {a.coverage}; jobs {a.jobs}; seed {a.seed}")
    with tempfile.TemporaryDirectory() as tmp:
        for v in VARIANTS:
            opts = campaign_options(compiler="tvm", strategy="tzer", seconds=a.seconds or 1e9,
                                    max_tests=None if a.seconds else a.tests, jobs=a.jobs, seed=a.seed,
                                    out=Path(tmp) / v, variant=v, coverage=a.coverage.split(","), quiet=True,
                                    reduce=False)
            camp = Campaign(opts)
            t0 = time.monotonic()
            camp.run()
            c = {**camp.counts, **camp.strategy.counts}
            figures[v] = len(camp.ctx.coverage)
            valid = 100.0 * c["valid"] / c["tests"] if c["tests"] else 0.0
            wf = 100.0 * c["well_formed"] / c["mutants"] if c["mutants"] else 0.0
            print(f"{v:14s} coverage {figures[v]:6d}  tests {c['tests']:5d}  valid {valid:5.1f}%  "
                  f"valuable {c['valuable']:5d}  well-formed mutants {wf:5.1f}%  bugs {c['bugs']:3d}  "
                  f"{time.monotonic() - t0:6.1f} s", flush=True)
    print(f"joint/general coverage ratio: {figures['joint'] / max(figures['general'], 1):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
