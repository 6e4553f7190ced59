"""Tests per second with one test per compiled module (the old mode) beside several independent tests
compiled as one module per configuration (`Backend.tests_per_module` where it is above 1, else 8, or
--per-module), on the same tests.

Each mode is a real campaign (worker pool, references of every input set, judging, the store) of `--tests`
tests of the random strategy from the same master seed, so both make the same tests; reduction is off.
Times count from the end of the strategy's start (the capability probe, cached after the first run) to the
campaign's end. A judged execution is a run of a compiled program on one input set whose outputs were
judged (a test's run inside a batch's module counts once per test); a compile is a module that ran (a
test's configuration alone, or a batch's shared one). A test that is not quiet in its batch runs alone as
well: `alone` counts them. Both campaigns' verdicts are compared test by test: batching must not change
what is found.

Prints, per mode, tests/s, judged executions/s and compiles, then whether the verdicts are the same, and,
last, `executions per compile: N, speed-up: S` (S: tests/s of the new mode over the old).

    python bench/tests_per_module.py --compiler xla [--tests 48] [--ops 8] [--jobs 1] [--seed 0] [--per-module K]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any


def one_mode(compiler: str, per_module: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    camp = Campaign(campaign_options(compiler=compiler, strategy="random", seconds=1e9, jobs=args.jobs, seed=args.seed,
                                     out=out, ops=args.ops, max_tests=args.tests, quiet=True, keep_tests=True,
                                     reduce=False, tests_per_module=per_module))
    started = []
    start = camp.strategy.start

    def timed_start(*a: object) -> None:
        start(*a)
        started.append(time.monotonic())

    camp.strategy.start = timed_start  # type: ignore[method-assign]
    camp.run()
    seconds = time.monotonic() - started[0]
    db = sqlite3.connect(out / "store.sqlite")
    verdicts = dict(db.execute("SELECT seq, verdict FROM tests ORDER BY seq").fetchall())
    db.close()
    return {**{k: camp.counts[k] for k in ("tests", "executions", "compiles", "findings", "alone")},
            "seconds": seconds, "verdicts": verdicts}


def compare(compiler: str, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Both modes' rows (old first), printed as they finish, then the verdict check and the last line."""
    from dlcfuzz.backends import get_backend

    declared = get_backend(compiler).tests_per_module
    k = args.per_module or (declared if declared > 1 else 8)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, per in (("old (1 test per module)", 1), (f"new ({k} tests per module)", k)):
            rows[name] = r = one_mode(compiler, per, args, Path(tmp) / f"per{per}")
            print(f"{compiler} {name}: {r['tests']} tests in {r['seconds']:.1f} s: {r['tests'] / r['seconds']:.2f} "
                  f"tests/s, {r['executions']} judged executions ({r['executions'] / r['seconds']:.2f}/s) of "
                  f"{r['compiles']} compiles, {r['alone']} tests run alone after their batch, "
                  f"{r['findings']} findings", flush=True)
    old, new = rows.values()
    differ = sorted(seq for seq in old["verdicts"] if old["verdicts"][seq] != new["verdicts"].get(seq))
    print(f"same verdicts: {'yes' if not differ else 'no, tests ' + str(differ[:10])}")
    per_compile = new["executions"] / max(new["compiles"], 1)
    speedup = (new["tests"] / new["seconds"]) / max(old["tests"] / old["seconds"], 1e-9)
    print(f"executions per compile: {per_compile:.2f}, speed-up: {speedup:.2f}")
    return rows


def arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    ap.add_argument("--tests", type=int, default=48)
    ap.add_argument("--ops", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-module", type=int, dest="per_module", help="the new mode's tests per module "
                    "(default: the compiler's where above 1, else 8)")
    return ap


def main() -> None:
    ap = arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    ap.add_argument("--compiler", required=True)
    args = ap.parse_args()
    compare(args.compiler, args)


if __name__ == "__main__":
    main()
