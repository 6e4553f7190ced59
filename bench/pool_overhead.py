"""Per-task overhead of the sandboxed worker pool: tiny echo tasks through one worker; and, with
`--startup COMPILER`, what a campaign's pool takes to start: spawned workers (each imports the
compiler) against workers forked by a zygote (the first pool waits for the zygote's import, the
next ones of the process fork at once).

  python bench/pool_overhead.py [--tasks 20000] [--jobs 1]
  python bench/pool_overhead.py --startup inductor [--jobs 2] [--pools 3]

Prints `echo tasks/s per worker: N` last; with --startup, one line per pool and way of starting.
"""

from __future__ import annotations

import argparse
import time

from dlcfuzz.exec.pool import WorkerPool


def echo_overhead(tasks: int, jobs: int) -> None:
    with WorkerPool("dlcfuzz.exec.pool:make_echo_handler", jobs=jobs) as pool:
        pool.map([b"warm-up"] * 500)
        payload = b"x" * 64
        t0 = time.perf_counter()
        res = pool.map([payload] * tasks)
        wall = time.perf_counter() - t0
        assert all(r.status == "ok" and r.payload == payload for r in res)
        t0 = time.perf_counter()
        for _ in range(2000):
            pool.run(payload)
        run_rate = 2000 / (time.perf_counter() - t0)
    rate = tasks / wall
    print(f"map: {rate:.0f} tasks/s with {jobs} worker(s); run(): {run_rate:.0f} tasks/s "
          f"({1e6 / run_rate:.0f} us round trip)")
    print(f"echo tasks/s per worker: {rate / jobs:.0f}")


def startup(compiler: str, jobs: int, pools: int) -> None:
    """Seconds from a campaign pool's construction to its workers' readiness, spawned and forked."""
    from dlcfuzz.exec.worker import preload_modules

    handler, init = "dlcfuzz.exec.worker:make_handler", {"compiler": compiler}  # the graph strategies' worker
    for way, preload in (("spawned", None), ("forked", preload_modules(handler, init))):
        for k in range(pools):
            t0 = time.perf_counter()
            with WorkerPool(handler, init, jobs=jobs, preload=preload):
                print(f"{compiler} pool {k + 1} of {jobs} {way} worker(s): {time.perf_counter() - t0:.2f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--startup", metavar="COMPILER", help="time a campaign pool's start-up instead")
    ap.add_argument("--pools", type=int, default=3, help="with --startup: pools started one after another")
    a = ap.parse_args()
    if a.startup:
        startup(a.startup, a.jobs, a.pools)
    else:
        echo_overhead(a.tasks, a.jobs)


if __name__ == "__main__":
    main()
