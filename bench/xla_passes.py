"""XLA HLO passes that changed a module: how many of the installed XLA CPU pipeline's passes a campaign's tests
make do something (issue 39 item 4).

XLA logs "Pass caused changes NAME" after each pass run that changed the module (hlo_pass_pipeline.cc, VLOG 3;
`backends/xla/passes.changed_passes` reads it around each compile). Each source makes the tests its strategy
makes in a campaign (`make_test` of the real strategy, the campaign's test seeds) and runs them for `--time`
seconds as the campaign's worker does, every configuration of the test compiled:

- `programs`: JAX programs (the programs strategy: lax/jnp ops, transformations, control flow; eager, a float64
  reference, `jit` and the test's variant: vmap/jvp/grad, an LLVM level or a disabled pass);
- `graphs`: random dlcfuzz graphs lowered to jax.numpy (the random strategy; the default pair, `xla-nopasses` and
  `xla`, and on half the tests a sampled set of disabled passes).

Y is the installed pipeline's passes: the generated pass table (`passes.pass_table()`, every pass XLA's CPU
pipeline ran on its probe programs) and any other pass this run saw run. Some of them cannot change a
single-device CPU module at all (collective and sharding passes, expanders of HLO jax emits only for other
platforms); they stay in Y and are listed apart.

Prints each pass with the tests in which it changed a module, per source `HLO passes that changed a module
(<source>): X of Y`, and last the union: `HLO passes that changed a module: X of Y`.

    python bench/xla_passes.py [--time 600] [--source both|programs|graphs] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

# passes no single-device CPU module of ours can change: collectives and sharding, and expanders of HLO ops jax
# emits only for other platforms: on CPU jax lowers cholesky, qr and eigh to LAPACK calls (float16 raises
# "Unsupported dtype"), no jax lowering but Pallas TPU's emits batch-norm, map or stochastic-convert, and on CPU
# jax lowers lax.logistic (jax.nn.sigmoid) to negate, exponential, add and divide itself, never to HLO's logistic
# (`jax.jit(lax.logistic).lower(x).as_text()`, jax 0.10.2) (listed apart; still counted in Y). The float8/float4/int4 normalizations are reachable: the programs'
# `low_precision` statements compute in those types.
UNREACHABLE = re.compile(r"all-reduce|all_to_all|collective|shard"
                         r"|cholesky_expander|qr_expander|eigh_expander|batchnorm_expander|map-inline"
                         r"|stochastic_convert_decomposer|logistic-expander")


def campaign_strategy(strategy: str, seed: int, out: Path) -> Any:
    """The real strategy object of a campaign, started as the campaign starts it (the capability probe, cached
    per release, so that graphs draw only what XLA's lowering takes), whose make_test makes the campaign's tests."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.exec.cluster import make_pool

    s = Campaign(campaign_options(compiler="xla", strategy=strategy, seconds=60, seed=seed, out=out,
                                  quiet=True)).strategy
    with make_pool(None, s.handler, s.handler_init(), jobs=1, timeout_s=600) as pool:
        s.start(pool, False)
    return s


def run_program_test(pt: Any) -> int:
    """A program test as the programs strategy runs it (backends/xla/programs.run_program: eager, float64, every
    configuration); 1 when the run failed (the campaign judges failures; passes that ran before still count)."""
    from dlcfuzz.backends.xla.programs import run_program

    try:
        run_program(pt.program, pt.seed, pt.configs)
    except Exception:  # noqa: BLE001 - see above
        return 1
    return 0


def run_graph_test(tc: Any) -> int:
    """A graph test as the worker runs it, every configuration compiled and run (XlaBackend.build, run); the
    configurations that failed (a rejected one changes nothing more; campaigns judge it)."""
    from dlcfuzz.backends import get_backend

    xla, failed = get_backend("xla"), 0
    for config in tc.configs:
        try:
            xla.build(xla.lower(tc.graph, config), tc.graph, config).run(tc.inputs)
        except Exception:  # noqa: BLE001 - see above
            failed += 1
    return failed


SOURCES = {"programs": ("programs", run_program_test), "graphs": ("random", run_graph_test)}


def source_tests(source: str, seconds: float, seed: int, out: Path) -> tuple[int, Counter[str], int]:
    """(tests, tests per pass that changed a module, failed runs) of `seconds` of a source's tests."""
    from dlcfuzz.backends.xla.passes import changed_passes
    from dlcfuzz.oracle.policy import test_seed

    strategy_name, run = SOURCES[source]
    strategy = campaign_strategy(strategy_name, seed, out / source)
    per_pass: Counter[str] = Counter()
    tests = failed = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        payload = strategy.make_test(tests, test_seed(seed, tests)).payload
        tests += 1
        with changed_passes() as changed:
            failed += run(payload)
        per_pass.update(changed)
    return tests, per_pass, failed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", type=float, default=600.0, help="seconds of tests per source")
    ap.add_argument("--source", choices=["both", "programs", "graphs"], default="both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    from dlcfuzz.backends.xla.passes import PASS_LOG_ENV, pass_table

    if not a.child:  # XLA reads its log settings once, as jax starts: a fresh process with them
        env = {**os.environ, **PASS_LOG_ENV, "JAX_PLATFORMS": "cpu"}
        os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:], "--child"], env)
    import jaxlib

    table = set(pass_table()["passes"])
    sources = ["programs", "graphs"] if a.source == "both" else [a.source]
    union: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            t0 = time.monotonic()
            tests, per_pass, failed = source_tests(source, a.time, a.seed, Path(tmp))
            if tests and not per_pass:
                raise SystemExit(f"no pass changed a module in {tests} tests: this jaxlib did not log "
                                 f"'Pass caused changes' with {PASS_LOG_ENV}")
            union.update(per_pass)
            y = table | set(per_pass)
            print(f"\n{source}: {tests} tests in {time.monotonic() - t0:.0f} s ({failed} failed runs)")
            for name, n in sorted(per_pass.items(), key=lambda kv: (-kv[1], kv[0])):
                print(f"  {name:48s} changed a module in {n:5d} tests")
            print(f"HLO passes that changed a module ({source}): {len(per_pass)} of {len(y)}")
    y = table | set(union)
    never = sorted(y - set(union))
    unreachable = [n for n in never if UNREACHABLE.search(n)]
    print(f"\njaxlib {jaxlib.__version__}: {len(y)} passes in the CPU pipeline ({len(table)} in the pass table)")
    print(f"never changed a module, reachable: {', '.join(n for n in never if n not in unreachable) or '-'}")
    print(f"never changed a module, no single-device CPU module of ours can make them ({len(unreachable)}): "
          f"{', '.join(unreachable) or '-'}")
    print(f"HLO passes that changed a module: {len(union)} of {len(y)}")


if __name__ == "__main__":
    main()
