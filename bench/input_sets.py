"""Judged executions per compile: one input set per compiled program (the old mode) beside the
compiler's own number of sets (`Backend.input_sets`, or --input-sets), on the same tests.

Each mode is a real campaign (worker pool, reference per set, judging, the store) of `--tests` tests
of the random strategy from the same master seed, so both make the same graphs and the same first
input set; reduction is off. Times count from the end of the strategy's start (the capability probe,
cached after the first run) to the campaign's end. A judged execution is a run of a compiled
program on one input set whose outputs were judged; a compile is a (test, configuration) that ran.

Prints, per mode, tests/s and judged executions/s, and, last,
`executions per compile: N, speed-up: S` (S: judged executions/s of the new mode over the old).

    python bench/input_sets.py --compiler xla [--tests 20] [--ops 6] [--jobs 1] [--seed 0] [--input-sets K]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path


def one_mode(compiler: str, input_sets: int, args: argparse.Namespace, out: Path) -> dict[str, float]:
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    camp = Campaign(campaign_options(compiler=compiler, strategy="random", seconds=1e9, jobs=args.jobs, seed=args.seed,
                                     out=out, ops=args.ops, max_tests=args.tests, quiet=True, input_sets=input_sets,
                                     keep_tests=True, reduce=False))
    started = []
    start = camp.strategy.start

    def timed_start(*a: object) -> None:
        start(*a)
        started.append(time.monotonic())

    camp.strategy.start = timed_start  # type: ignore[method-assign]
    camp.run()
    seconds = time.monotonic() - started[0]
    db = sqlite3.connect(out / "store.sqlite")
    compiles = db.execute("SELECT COUNT(*) FROM (SELECT DISTINCT test_id, config FROM observations "
                          "WHERE status = 'ok')").fetchone()[0]
    db.close()
    return {"tests": camp.counts["tests"], "executions": camp.counts["executions"], "compiles": compiles,
            "seconds": seconds, "findings": camp.counts["findings"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--tests", type=int, default=20)
    ap.add_argument("--ops", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--input-sets", type=int, dest="input_sets", help="the new mode's sets (default: the compiler's)")
    args = ap.parse_args()

    from dlcfuzz.backends import get_backend

    k = args.input_sets or get_backend(args.compiler).input_sets
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, sets in (("old (1 set)", 1), (f"new ({k} sets)", k)):
            rows[name] = r = one_mode(args.compiler, sets, args, Path(tmp) / f"sets{sets}")
            print(f"{args.compiler} {name}: {r['tests']} tests in {r['seconds']:.1f} s: "
                  f"{r['tests'] / r['seconds']:.2f} tests/s, {r['executions']} judged executions "
                  f"({r['executions'] / r['seconds']:.2f}/s) of {r['compiles']} compiles, {r['findings']} findings",
                  flush=True)
    old, new = rows.values()
    per_compile = new["executions"] / max(new["compiles"], 1)
    speedup = (new["executions"] / new["seconds"]) / max(old["executions"] / old["seconds"], 1e-9)
    print(f"executions per compile: {per_compile:.2f}, speed-up: {speedup:.2f}")


if __name__ == "__main__":
    main()
