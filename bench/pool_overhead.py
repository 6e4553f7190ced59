"""Per-task overhead of the sandboxed worker pool: tiny echo tasks through one worker.

  python bench/pool_overhead.py [--tasks 20000] [--jobs 1]

Prints `echo tasks/s per worker: N` last.
"""

from __future__ import annotations

import argparse
import time

from dlcfuzz.exec.pool import WorkerPool


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    with WorkerPool("dlcfuzz.exec.pool:make_echo_handler", jobs=a.jobs) as pool:
        pool.map([b"warm-up"] * 500)
        payload = b"x" * 64
        t0 = time.perf_counter()
        res = pool.map([payload] * a.tasks)
        wall = time.perf_counter() - t0
        assert all(r.status == "ok" and r.payload == payload for r in res)
        t0 = time.perf_counter()
        for _ in range(2000):
            pool.run(payload)
        run_rate = 2000 / (time.perf_counter() - t0)
    rate = a.tasks / wall
    print(f"map: {rate:.0f} tasks/s with {a.jobs} worker(s); run(): {run_rate:.0f} tasks/s "
          f"({1e6 / run_rate:.0f} us round trip)")
    print(f"echo tasks/s per worker: {rate / a.jobs:.0f}")


if __name__ == "__main__":
    main()
