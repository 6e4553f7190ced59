"""Where a campaign's time goes, at steady state: the driver's and the worker's cost per test, per
stage, on ONNXRuntime (random strategy, 10 operators), then, last, `overhead: X%` — the share of
worker wall time (jobs x the measured window) spent outside the compiler's own compile and run calls.

  python bench/overhead.py [--jobs 1] [--warm 10] [--measure 60] [--ops 10]

Timing starts `--warm` seconds after the first test is judged (worker start-up and the capability
probe are over) and lasts `--measure` seconds. The stages are timed by wrapping the existing
functions with time.perf_counter (and thread CPU time on the driver), from this script only: the
package itself carries no timing code. The worker side uses this module's handler factory, which
wraps the stock handler's functions inside the worker process and writes one line per task.
Reduction is off (a finding's reduction is its own budget, not a test's cost).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKER_STAGES = ("deserialize test", "reference", "lowering", "compiler compile", "compiler run",
                 "run_configs rest", "serialize reply", "handle() rest", "outside handle()")


# ---- timing by wrapping ---------------------------------------------------
class Stages:
    """Exclusive wall and CPU seconds per stage: a stage nested in another is taken out of the outer one."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.stack: list[list[float]] = []  # [wall start, cpu start, child wall, child cpu]
        self.owner = threading.get_ident()  # only the timed thread's calls count

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **kw: Any) -> Any:
            if threading.get_ident() != self.owner:
                return fn(*a, **kw)
            frame = [time.perf_counter(), time.thread_time(), 0.0, 0.0]
            self.stack.append(frame)
            try:
                return fn(*a, **kw)
            finally:
                self.stack.pop()
                wall, cpu = time.perf_counter() - frame[0], time.thread_time() - frame[1]
                self.wall[stage] = self.wall.get(stage, 0.0) + wall - frame[2]
                self.cpu[stage] = self.cpu.get(stage, 0.0) + cpu - frame[3]
                self.calls[stage] = self.calls.get(stage, 0) + 1
                if self.stack:
                    self.stack[-1][2] += wall
                    self.stack[-1][3] += cpu

        return timed

    def patch(self, obj: Any, name: str, stage: str) -> None:
        setattr(obj, name, self.wrap(stage, getattr(obj, name)))

    def snapshot(self) -> tuple[dict[str, float], dict[str, float]]:
        return dict(self.wall), dict(self.cpu)


# ---- worker side (runs inside the worker process) --------------------------
def make_timed_handler(init: dict) -> Callable[[bytes], bytes]:
    """The stock handler (`dlcfuzz.exec.worker:make_handler`) with its stages timed; one JSON line per task."""
    import dlcfuzz.exec.worker as w
    import dlcfuzz.oracle.policy as policy
    from dlcfuzz.oracle.testcase import TestCase

    init = dict(init)
    log = open(Path(init.pop("stage_dir")) / f"worker-{os.getpid()}.jsonl", "a", buffering=1)  # noqa: SIM115
    t: dict[str, float] = {}

    def timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                t[stage] = t.get(stage, 0.0) + time.perf_counter() - t0

        return run

    TestCase.from_bytes = staticmethod(timed("deserialize test", TestCase.from_bytes))
    policy.reference_of = timed("reference", policy.reference_of)
    w.observations_to_bytes = timed("serialize reply", w.observations_to_bytes)
    get_backend, run_configs = w.get_backend, w.run_configs

    def timed_backend(name: str) -> Any:
        backend = get_backend(name)
        backend.lower = timed("lowering", backend.lower)
        return backend

    def timed_run_configs(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        obs = run_configs(*a, **kw)
        t["run_configs"] = t.get("run_configs", 0.0) + time.perf_counter() - t0
        t["compiler compile"] = t.get("compiler compile", 0.0) + sum(o.compile_s for o in obs)
        t["compiler run"] = t.get("compiler run", 0.0) + sum(o.run_s for o in obs)
        return obs

    w.get_backend, w.run_configs = timed_backend, timed_run_configs
    handle = w.make_handler(init)
    last_end = [time.perf_counter()]

    def timed_handle(payload: bytes) -> bytes:
        t.clear()
        start, started_at = time.perf_counter(), time.time()
        out = handle(payload)
        end = time.perf_counter()
        t["total"] = end - start
        t["outside handle()"] = start - last_end[0]  # frames, and waiting for the driver's next test
        last_end[0] = end
        log.write(json.dumps([started_at, t]) + "\n")
        return out

    return timed_handle


def worker_stages(stage_dir: Path, t1: float, t2: float) -> tuple[dict[str, float], int]:
    """Seconds per stage summed over the tasks that started in [t1, t2) (epoch), and their number."""
    sums: dict[str, float] = dict.fromkeys(WORKER_STAGES, 0.0)
    n = 0
    for path in stage_dir.glob("worker-*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                started, t = json.loads(line)
            except ValueError:
                continue  # a line cut by a killed worker
            if not t1 <= started < t2:
                continue
            n += 1
            inner = sum(t.get(k, 0.0) for k in ("deserialize test", "reference", "run_configs", "serialize reply"))
            configs_rest = t.get("run_configs", 0.0) - t.get("lowering", 0.0) - t.get("compiler compile", 0.0) \
                - t.get("compiler run", 0.0)
            for k in ("deserialize test", "reference", "lowering", "compiler compile", "compiler run",
                      "serialize reply", "outside handle()"):
                sums[k] += t.get(k, 0.0)
            sums["run_configs rest"] += configs_rest
            sums["handle() rest"] += t["total"] - inner
    return sums, n


# ---- driver side ----------------------------------------------------------
@dataclass
class Window:
    """The measured steady-state window of one campaign."""

    jobs: int
    wall_s: float = 0.0
    tests: int = 0
    driver_cpu_s: float = 0.0  # time.process_time() of the driver process over the window
    epoch: tuple[float, float] = (0.0, 0.0)
    stage_wall: dict[str, float] = field(default_factory=dict)
    stage_cpu: dict[str, float] = field(default_factory=dict)
    out: Path | None = None

    @property
    def rate(self) -> float:
        return self.tests / self.wall_s if self.wall_s else 0.0


def instrument_driver(camp: Any, stages: Stages) -> None:
    """Wrap the driver's stages: generation, serialization, the oracle, sensitivity analysis, the store, the pool."""
    import dlcfuzz.exec.cluster as cluster
    import dlcfuzz.strategies.graph as graph
    from dlcfuzz.oracle.testcase import TestCase

    strategy = camp.strategy
    stages.patch(strategy, "make_test", "generation")
    stages.patch(strategy, "judge", "oracle (judge)")
    stages.patch(TestCase, "to_bytes", "serialization")
    stages.patch(graph, "reply_from_bytes", "serialization")
    stages.patch(graph, "unstable_outputs", "sensitivity analysis")
    store = camp.store
    for name in dir(store):
        if not name.startswith("_") and inspect.ismethod(getattr(store, name)) and name != "close":
            stages.patch(store, name, "store")
    make_pool = cluster.make_pool

    def timed_pool(*a: Any, **kw: Any) -> Any:
        pool = make_pool(*a, **kw)
        stages.patch(pool, "submit", "IPC (pool calls)")
        stages.patch(pool, "next_result", "IPC (pool calls)")
        return pool

    cluster.make_pool = timed_pool


def steady_campaign(opts: Any, warm_s: float, measure_s: float, prepare: Callable[[Any], None] | None = None,
                    stages: Stages | None = None) -> Window:
    """Run a campaign; measure from `warm_s` after its first judged test for `measure_s`, then stop it."""
    from dlcfuzz.engine.campaign import Campaign

    camp = Campaign(opts)
    if prepare is not None:
        prepare(camp)
    win = Window(jobs=opts.jobs, out=opts.out)
    errors: list[str] = []

    def sampler() -> None:
        try:
            deadline = time.monotonic() + 600
            while camp.counts["tests"] == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(warm_s)
            w1, e1, n1, c1 = time.perf_counter(), time.time(), camp.counts["tests"], time.process_time()
            s1 = stages.snapshot() if stages else ({}, {})
            time.sleep(measure_s)
            w2, e2, n2, c2 = time.perf_counter(), time.time(), camp.counts["tests"], time.process_time()
            s2 = stages.snapshot() if stages else ({}, {})
            win.wall_s, win.tests, win.driver_cpu_s, win.epoch = w2 - w1, n2 - n1, c2 - c1, (e1, e2)
            win.stage_wall = {k: v - s1[0].get(k, 0.0) for k, v in s2[0].items()}
            win.stage_cpu = {k: v - s1[1].get(k, 0.0) for k, v in s2[1].items()}
        except Exception as e:  # reported after the campaign stops
            errors.append(repr(e))
        finally:
            camp.opts.seconds = 0  # the campaign stops making tests, drains and ends

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    camp.run()
    th.join()
    if errors or win.tests == 0:
        raise SystemExit(f"no steady-state window measured: {errors or 'no test judged in it'}")
    return win


def ms(x: float) -> str:
    return f"{1000 * x:8.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--warm", type=float, default=10.0, help="seconds after the first judged test before timing")
    ap.add_argument("--measure", type=float, default=60.0, help="seconds of steady state measured")
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if Path(__file__).resolve().parent not in [Path(p).resolve() for p in sys.path if p]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # the workers import this module's handler
    from dlcfuzz.engine.campaign import campaign_options

    with tempfile.TemporaryDirectory() as tmp:
        stage_dir = Path(tmp) / "stages"
        stage_dir.mkdir()
        stages = Stages()

        def prepare(camp: Any) -> None:
            init = camp.strategy.handler_init()
            camp.strategy.handler = "overhead:make_timed_handler"
            camp.strategy.handler_init = lambda: {**init, "stage_dir": str(stage_dir)}
            instrument_driver(camp, stages)

        opts = campaign_options(compiler="onnxruntime", strategy="random", seconds=3600, jobs=a.jobs, seed=a.seed,
                                out=Path(tmp) / "run", ops=a.ops, quiet=True, reduce=False)
        win = steady_campaign(opts, a.warm, a.measure, prepare, stages)
        worker, n_tasks = worker_stages(stage_dir, *win.epoch)

    n = win.tests
    print(f"onnxruntime, random, {a.ops} ops, {a.jobs} job(s): {n} tests in a {win.wall_s:.1f} s steady window "
          f"({win.rate:.1f} tests/s; {n_tasks} worker tasks started in it)")
    print(f"\ndriver, per test (ms)          wall      cpu   (python bench/overhead.py --jobs {a.jobs} "
          f"--measure {a.measure:g})")
    order = ["generation", "serialization", "oracle (judge)", "sensitivity analysis", "store", "IPC (pool calls)"]
    for k in order:
        print(f"  {k:26s} {ms(win.stage_wall.get(k, 0.0) / n)} {ms(win.stage_cpu.get(k, 0.0) / n)}")
    rest = win.driver_cpu_s - sum(win.stage_cpu.get(k, 0.0) for k in order)
    print(f"  {'engine rest + threads':26s} {'':8s} {ms(rest / n)}")
    print(f"  {'driver CPU (process_time)':26s} {'':8s} {ms(win.driver_cpu_s / n)}")
    print("  (IPC wall includes waiting for the workers: the driver blocks in next_result)")
    print("\nworker, per test (ms)          wall")
    per = max(n_tasks, 1)
    for k in WORKER_STAGES:
        print(f"  {k:26s} {ms(worker[k] / per)}")
    capacity = a.jobs * win.wall_s
    print(f"  {'worker capacity / test':26s} {ms(capacity / n)}   (jobs x window / tests judged)")
    compiler_s = (worker["compiler compile"] + worker["compiler run"]) * n / per
    print(f"\nworker wall in the compiler's compile+run: {100 * compiler_s / capacity:.1f}%")
    # the part no pipelining removes: each test needs its reference and its lowering, in this process
    own = worker["reference"] + worker["lowering"]
    floor = own / (own + worker["compiler compile"] + worker["compiler run"]) if own else 0.0
    print(f"the reference and the lowering alone, all else free: {100 * floor:.1f}% overhead")
    print(f"overhead: {100 * (1 - compiler_s / capacity):.1f}%")


if __name__ == "__main__":
    main()
