"""Throughput of dlcfuzz's Inductor pipeline, and what the ways of speeding it up give.

One test = generate a random graph (--ops operators), compute the NumPy reference, lower it to
torch, run it eagerly and compiled by Inductor, judge. Variants (each on its own graphs from the
same distribution, so that no variant reuses another's compiled graphs; after one warm-up
compile that pays Inductor's cold start):
  backend      the backend as campaigns use it: torch.compile(fullgraph=True), reset per test
  lite         mode="lite" (Inductor falls back to ATen kernels: far less codegen)
  threads1     compile_threads=1 (no parallel compile workers)
  nocache      Inductor's caches off (force_disable_caches): the baseline of `coverage`
  coverage     collecting Inductor's Python arcs with coverage.py's C tracer (caches off)
  compile_fx   no Dynamo: torch.fx.symbolic_trace of the lowered function, then compile_fx
  fused-K      K independent graphs compiled as one function (a finding would be attributed
               afterwards by compiling the graphs one by one)
Prints, last, `inductor tests/s: N` for the backend as campaigns run it (one worker: this
machine's cores are shared by the compile workers).

    python bench/inductor_speed.py [--tests 30] [--ops 10] [--variants backend,lite,...]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

NNSMITH_TESTS_PER_S = 1.36  # NNSmith on Inductor, measured on this machine (issue 13)


def graphs(n: int, ops: int, seed: int) -> list[tuple[Any, dict]]:
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.gen.random import generate

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        g = generate(rng, ops)
        out.append((g, sample_inputs(g, rng)))
    return out


def judge_test(backend: Any, g: Any, x: dict, compiled_outs: list[np.ndarray] | Exception) -> None:
    """The per-test work besides compiling: the reference, the eager run, the verdict."""
    from dlcfuzz.lower.torch import run_eager
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import Observation, TestCase
    from dlcfuzz.oracle.verdict import judge

    tc = TestCase(g, x, [], seed=0)
    ref = reference_of(tc, stability=False)
    obs = [Observation("eager", "ok", outputs=run_eager(g, tc.inputs))]
    if isinstance(compiled_outs, Exception):
        obs.append(Observation("inductor", "error", error=str(compiled_outs)))
    else:
        obs.append(Observation("inductor", "ok", outputs=compiled_outs))
    judge("inductor", backend.expected_error, ref.outputs, obs, ref.unstable)


def run_backend(backend: Any, cases: list, options: dict) -> float:
    from dlcfuzz.backends.base import Config

    config = Config("inductor", {"backend": "inductor", **options})
    t0 = time.perf_counter()
    for g, x in cases:
        try:
            outs: Any = backend.compile(g, config).run(x)
        except Exception as e:  # noqa: BLE001 - counted as an observation, like the worker does
            outs = e
        judge_test(backend, g, x, outs)
    return len(cases) / (time.perf_counter() - t0)


def run_coverage(backend: Any, cases: list) -> float:
    """The backend collecting Inductor's Python arcs per test (which turns Inductor's caches off)."""
    from dlcfuzz.backends.base import Config

    config = Config("inductor", {"backend": "inductor"})
    t0 = time.perf_counter()
    n_items = 0
    for g, x in cases:
        backend.start_coverage()
        try:
            outs: Any = backend.compile(g, config).run(x)
        except Exception as e:  # noqa: BLE001
            outs = e
        n_items += len(backend.stop_coverage())
        judge_test(backend, g, x, outs)
    print(f"coverage: {n_items / max(len(cases), 1):.0f} arcs per test, tracer {backend._coverage.tracer}")
    return len(cases) / (time.perf_counter() - t0)


def run_patched(backend: Any, cases: list, patch: dict) -> float:
    import torch

    with torch._inductor.config.patch(patch):
        return run_backend(backend, cases, {})


def run_compile_fx(backend: Any, cases: list) -> float:
    import torch
    from torch._inductor.compile_fx import compile_fx

    from dlcfuzz.lower.torch import to_numpy, to_torch_program

    t0 = time.perf_counter()
    for g, x in cases:
        prog = to_torch_program(g)
        args = [torch.from_numpy(np.array(x[n])) for n in prog.input_names]
        try:
            gm = torch.fx.symbolic_trace(prog.function())
            with torch._inductor.config.patch({"fallback_random": True}), torch.no_grad():
                fn = compile_fx(gm, args)
                outs: Any = [to_numpy(o) for o in fn(*args)]
        except Exception as e:  # noqa: BLE001
            outs = e
        judge_test(backend, g, x, outs)
    return len(cases) / (time.perf_counter() - t0)


FUSED_FAILURES: list[str] = []


def run_fused(backend: Any, cases: list, k: int) -> float:
    """K graphs per compile: one function calling each lowered program on its own inputs."""
    import torch

    from dlcfuzz.lower.torch import to_numpy, to_torch_program

    t0 = time.perf_counter()
    for i in range(0, len(cases), k):
        batch = cases[i:i + k]
        progs = [to_torch_program(g) for g, _ in batch]
        fns = [p.function() for p in progs]
        args = [[torch.from_numpy(np.array(x[n])) for n in p.input_names] for p, (_, x) in zip(progs, batch)]
        sizes = [len(a) for a in args]

        def fused(*flat: Any, fns: list[Callable] = fns, sizes: list[int] = sizes) -> tuple:
            out: list = []
            pos = 0
            for f, n in zip(fns, sizes):
                out.append(f(*flat[pos:pos + n]))
                pos += n
            return tuple(out)

        torch.compiler.reset()
        try:
            with torch._inductor.config.patch({"fallback_random": True}), torch.no_grad():
                res = torch.compile(fused, fullgraph=True)(*[a for group in args for a in group])
            per: list[Any] = [[to_numpy(o) for o in r] for r in res]
        except Exception as e:  # noqa: BLE001 - attributed by compiling the graphs one by one
            FUSED_FAILURES.append(f"{type(e).__name__}: {str(e)[:200]}")
            per = [e] * len(batch)
        for (g, x), outs in zip(batch, per):
            judge_test(backend, g, x, outs)
    return len(cases) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=30)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="backend,lite,threads1,compile_fx,fused-4")
    args = ap.parse_args()

    from dlcfuzz.backends import get_backend

    backend = get_backend("inductor")
    t0 = time.perf_counter()
    run_backend(backend, graphs(1, args.ops, args.seed + 1), {})
    print(f"warm-up (cold Inductor start): {time.perf_counter() - t0:.1f} s")
    rates: dict[str, float] = {}
    for i, v in enumerate(args.variants.split(",")):
        # fresh graphs per variant: Inductor's caches would otherwise serve a later variant the
        # earlier one's compiled graphs (same distribution, different seeds)
        cases = graphs(args.tests, args.ops, args.seed + 1000 * (i + 1))
        if v == "backend":
            rates[v] = run_backend(backend, cases, {})
        elif v == "lite":
            rates[v] = run_backend(backend, cases, {"knobs": {"mode": "lite"}})
        elif v == "threads1":
            rates[v] = run_patched(backend, cases, {"compile_threads": 1})
        elif v == "nocache":
            rates[v] = run_patched(backend, cases, {"force_disable_caches": True})
        elif v == "coverage":
            rates[v] = run_coverage(backend, cases)
        elif v == "compile_fx":
            rates[v] = run_compile_fx(backend, cases)
        elif v.startswith("fused-"):
            rates[v] = run_fused(backend, cases, int(v.split("-")[1]))
        else:
            raise SystemExit(f"unknown variant {v!r}")
        if v.startswith("fused-") and FUSED_FAILURES:  # a failing fused compile judged nothing
            print(f"{v}: {len(FUSED_FAILURES)} fused compiles failed, e.g. {FUSED_FAILURES[0]}")
            FUSED_FAILURES.clear()
        print(f"{v:12s} {rates[v]:.2f} tests/s ({rates[v] / NNSMITH_TESTS_PER_S:.2f}x NNSmith's {NNSMITH_TESTS_PER_S})",
              flush=True)
    print(f"inductor tests/s: {rates.get('backend', max(rates.values())):.2f}")


if __name__ == "__main__":
    main()
