"""Throughput of dlcfuzz's XLA pipeline on this machine, and the share of a test spent in XLA's compile.

One test = generate a random graph (--ops operators), sample its inputs, compute the NumPy reference,
lower it to JAX source, then for each configuration of the campaign's default pair
(`xla-nopasses`, `xla`) plus, on half of the tests, a sampled `xla_disable_hlo_passes` set: trace +
compile (`jax.jit(f).lower(...).compile(compiler_options=...)`) and run, then judge. Timed in one
process after a warm-up test (JAX's import and first compile are paid once per worker).

Prints the time split (reference, lowering, XLA compile, run, judging) and, last,
`xla tests/s: N`.

    python bench/xla_speed.py [--tests 60] [--ops 10] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=60)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from dlcfuzz.backends import get_backend
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.gen.random import generate
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import Observation, TestCase
    from dlcfuzz.oracle.verdict import judge

    xla = get_backend("xla")
    rng = np.random.default_rng(args.seed)
    pair = list(xla.default_pair())
    split = dict.fromkeys(("generate", "reference", "lower", "compile", "run", "judge"), 0.0)
    compiles = 0

    def one_test(count: bool) -> None:
        nonlocal compiles
        t = [time.perf_counter()]
        g = generate(rng, args.ops)
        tc = TestCase(g, sample_inputs(g, rng), xla.per_test_configs(rng, g, pair), seed=0)
        t.append(time.perf_counter())
        ref = reference_of(tc, stability=False)
        t.append(time.perf_counter())
        program = xla.lower(g, pair[0])
        t.append(time.perf_counter())
        obs, c_s, r_s = [], 0.0, 0.0
        for config in tc.configs:
            a = time.perf_counter()
            try:
                compiled = xla.build(program, g, config)
                b = time.perf_counter()
                outs = compiled.run(tc.inputs)
                obs.append(Observation(config.name, "ok", outputs=outs))
            except Exception as e:  # noqa: BLE001 - an observation, as the worker records it
                b = time.perf_counter()
                obs.append(Observation(config.name, "error", error=f"{type(e).__name__}: {e}"))
            c_s += b - a
            r_s += time.perf_counter() - b
        t.append(time.perf_counter())
        judge("xla", xla.expected_error, ref.outputs, obs, ref.unstable)
        t.append(time.perf_counter())
        if count:
            compiles += len(tc.configs)
            for k, d in zip(("generate", "reference", "lower"), np.diff(t[:4])):
                split[k] += float(d)
            split["compile"] += c_s
            split["run"] += r_s
            split["judge"] += t[5] - t[4]

    one_test(False)  # warm-up: JAX's backend initialization and first compile
    t0 = time.perf_counter()
    for _ in range(args.tests):
        one_test(True)
    total = time.perf_counter() - t0
    print(f"{args.tests} tests of {args.ops} operators, {compiles} XLA compiles, {total:.1f} s")
    for k, v in split.items():
        print(f"  {k:10s} {v:7.2f} s  {100 * v / total:5.1f} %")
    print(f"compile share of a test: {100 * split['compile'] / total:.1f} %  "
          f"({1000 * split['compile'] / max(compiles, 1):.0f} ms per compile, incl. tracing)")
    print(f"xla tests/s: {args.tests / total:.2f}")


if __name__ == "__main__":
    main()
