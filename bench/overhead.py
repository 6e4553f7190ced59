"""Campaign overhead on ONNXRuntime: tests/s per job, then, last, `overhead: X%` — the share of
worker wall time spent outside the compiler's own compile and run calls.

  python bench/overhead.py [--tests 600] [--jobs 1,2]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=600)
    ap.add_argument("--jobs", default="1,2")
    a = ap.parse_args()
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    last = None
    for jobs in [int(j) for j in a.jobs.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            opts = campaign_options(compiler="onnxruntime", strategy="random", seconds=3600, jobs=jobs, seed=1, out=out, ops=10,
                                   max_tests=a.tests, quiet=True)
            camp = Campaign(opts)
            t0 = time.perf_counter()
            camp.run()
            wall = time.perf_counter() - t0
            db = sqlite3.connect(out / "store.sqlite")
            compiler_s = db.execute("SELECT compiler_s FROM stats ORDER BY t DESC LIMIT 1").fetchone()[0] or 0.0
            worker_s = db.execute("SELECT (SELECT COALESCE(SUM(seconds), 0) FROM tests) + "
                                  "(SELECT COALESCE(SUM(ms), 0) / 1000.0 FROM compact_tests)").fetchone()[0]
            rate = a.tests / wall
            # Capacity = jobs x wall; what the compiler did not use of it is dlcfuzz's overhead.
            overhead = 1.0 - compiler_s / (jobs * wall)
            print(f"jobs {jobs}: {rate:.1f} tests/s ({rate / jobs:.1f} per job), compiler {compiler_s:.1f} s, "
                  f"worker {worker_s:.1f} s, wall {wall:.1f} s")
            last = overhead
    print(f"overhead: {100 * last:.1f}%")


if __name__ == "__main__":
    main()
