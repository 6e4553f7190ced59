"""OpenVINO throughput: a random-strategy campaign (graphs of 10 operators, the default pair
`ov-cpu-nosnippets` + `ov-cpu`, findings not reduced) in sandboxed workers; prints where the time goes
(the compilers' own compile and run calls against the rest), then, last, `openvino tests/s: N`.

  python bench/openvino_speed.py [--tests 300] [--jobs 1]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        # the capability probe is cached per release: run it once before timing
        Campaign(campaign_options(compiler="openvino", strategy="random", seconds=3600, jobs=a.jobs, seed=a.seed, out=Path(tmp) / "warm",
                                  ops=10, max_tests=1, quiet=True, reduce=False)).run()
        camp = Campaign(campaign_options(compiler="openvino", strategy="random", seconds=3600, jobs=a.jobs, seed=a.seed, out=out, ops=10,
                                         max_tests=a.tests, quiet=True, reduce=False))
        t0 = time.perf_counter()
        camp.run()
        wall = time.perf_counter() - t0
        db = sqlite3.connect(out / "store.sqlite")
        compiler_s = db.execute("SELECT compiler_s FROM stats ORDER BY t DESC LIMIT 1").fetchone()[0] or 0.0
        for name, n, ok, compile_ms, run_ms in db.execute(
                "SELECT config, COUNT(*), SUM(status = 'ok'), 1000 * AVG(compile_s), 1000 * AVG(run_s) "
                "FROM observations GROUP BY config ORDER BY config"):
            # the store keeps observations only of the tests it keeps whole (findings, unknowns)
            print(f"{name}: compile {compile_ms:.1f} ms, run {run_ms:.2f} ms per test; ran {ok} of {n} kept tests")
        print(f"{a.tests} tests in {wall:.1f} s with {a.jobs} job(s); compilers {compiler_s:.1f} s "
              f"({100 * compiler_s / (a.jobs * wall):.0f}% of worker capacity)")
    print(f"openvino tests/s: {a.tests / wall:.1f}")


if __name__ == "__main__":
    main()
