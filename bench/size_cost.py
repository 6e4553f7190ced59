"""What long-axis tests cost: the same random campaign (seed, tests, configurations) with `--sizes small` and with
`--sizes mixed` (gen/sizes.py), per compiler, in one run.

Each campaign runs one worker, without reduction (testing throughput only); a one-test campaign first pays the
compiler's capability probe (cached per compiler version). Prints per compiler the tests/s of each mode side by
side, and the share of the mixed campaign's tests with an axis over 1,000; last,
`size cost: mixed/small tests/s R` (the geometric mean over the compilers).

  python bench/size_cost.py [--compiler onnxruntime,inductor,xla,openvino,tvm] [--tests 60] [--ops 10]
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import tempfile
import time
from pathlib import Path


def campaign(compiler: str, out: Path, tests: int, ops: int, sizes: str) -> float:
    """Seconds the campaign took (testing only: no reduction)."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    t0 = time.perf_counter()
    Campaign(campaign_options(compiler=compiler, strategy="random", seconds=36000, jobs=1, seed=5, out=out,
                              max_tests=tests, quiet=True, reduce=False, keep_tests=True, ops=ops, sizes=sizes)).run()
    return time.perf_counter() - t0


def longest_axes(out: Path) -> list[int]:
    from dlcfuzz.oracle.testcase import TestCase
    from dlcfuzz.reduce.sizes import longest_axis

    db = sqlite3.connect(out / "store.sqlite")
    return [longest_axis(TestCase.from_bytes(blob).graph) for (blob,) in db.execute("SELECT blob FROM tests")
            if blob is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compiler", default="onnxruntime,inductor,xla,openvino,tvm")
    ap.add_argument("--tests", type=int, default=60)
    ap.add_argument("--ops", type=int, default=10)
    a = ap.parse_args()
    ratios = []
    print(f"{'compiler':<12} {'small tests/s':>14} {'mixed tests/s':>14} {'ratio':>6} {'axis>1000':>10}")
    for compiler in a.compiler.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            campaign(compiler, Path(tmp) / "probe", 1, a.ops, "small")
            small = a.tests / campaign(compiler, Path(tmp) / "small", a.tests, a.ops, "small")
            mixed = a.tests / campaign(compiler, Path(tmp) / "mixed", a.tests, a.ops, "mixed")
            axes = longest_axes(Path(tmp) / "mixed")
        over = sum(x > 1000 for x in axes) / max(len(axes), 1)
        ratios.append(mixed / small)
        print(f"{compiler:<12} {small:>14.2f} {mixed:>14.2f} {mixed / small:>6.2f} {100 * over:>9.0f}%", flush=True)
    print(f"size cost: mixed/small tests/s {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}")


if __name__ == "__main__":
    main()
