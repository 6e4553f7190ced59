"""Optimization triggers: how many of a compiler's optimizations one campaign fires.

Runs one `--strategy oatest` campaign and reads its `oatest_triggers` table (per test, whether each
optimization its spliced patterns target fired: `Backend.fired`). oatest, not auto: only oatest's tests
are checked for firing (auto gives the other arms most of the budget, and their tests record nothing),
so an auto campaign would measure the schedule, not how far the patterns reach. Prints each optimization
of `Backend.optimizations()` (every transformer/pass of the installed release that `fired` can tell)
with the tests that fired it and those that targeted it, then the targets the patterns name that are not
in that list, then the optimizations the configurations cannot fire (`Backend.optimizations_out_of_reach()`:
registered for another device, gated by a setting no configuration makes) with why, and last
`optimizations fired: X/Y` (Y = every optimization of `optimizations()` less those out of reach; the line says
how many were left out).

  python bench/optimization_triggers.py --compiler onnxruntime|tvm [--time 600] [--seed 0] [--jobs 2]
                                        [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def campaign_triggers(out: Path, compiler: str, seconds: float, jobs: int, seed: int) -> tuple[int, dict]:
    """Tests of one oatest campaign and its trigger rates: optimization -> (tests that fired it, tests
    that targeted it)."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    Campaign(campaign_options(compiler=compiler, seconds=seconds, jobs=jobs, seed=seed, out=out, quiet=True,
                              strategy="oatest")).run()
    store = Store(out / "store.sqlite", create=False)
    return store.totals()["tests"], store.trigger_rates()


def table(optimizations: tuple[str, ...], rates: dict[str, tuple[int, int]],
          out_of_reach: dict[str, str] | None = None) -> list[str]:
    """One line per optimization (fired / targeted tests), those never fired marked; then the targets
    outside `optimizations`; then those out of reach with why; last the `optimizations fired: X/Y` line
    (Y: `optimizations` less those out of reach that never fired)."""
    out_of_reach = dict(out_of_reach or {})
    lines = []
    for opt in optimizations:
        fired, targeted = rates.get(opt, (0, 0))
        if opt in out_of_reach and fired:
            del out_of_reach[opt]  # fired after all: counted
        if opt in out_of_reach:
            mark = "   out of reach"
        else:
            mark = "" if fired else ("   never fired" if targeted else "   never targeted")
        lines.append(f"  {opt:44s} fired {fired:6d} / targeted {targeted:6d}{mark}")
    extra = sorted(set(rates) - set(optimizations))
    if extra:
        lines.append("targets outside the optimization list (not counted):")
        lines += [f"  {opt:44s} fired {rates[opt][0]:6d} / targeted {rates[opt][1]:6d}" for opt in extra]
    counted = [opt for opt in optimizations if opt not in out_of_reach]
    left_out = [opt for opt in optimizations if opt in out_of_reach]
    if left_out:
        lines.append("out of reach of these configurations (not counted):")
        lines += [f"  {opt:44s} {out_of_reach[opt]}" for opt in left_out]
    fired = sum(1 for opt in counted if rates.get(opt, (0, 0))[0])
    lines.append(f"optimizations fired: {fired}/{len(counted)} ({len(optimizations)} listed, {len(left_out)} out of "
                 f"reach)")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiler", required=True, choices=["onnxruntime", "tvm"])
    ap.add_argument("--time", type=float, default=600.0, help="seconds of the campaign")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", default=None, metavar="DIR", help="keep the campaign in DIR (`dlcfuzz list DIR`)")
    a = ap.parse_args()
    from dlcfuzz.backends import get_backend

    backend = get_backend(a.compiler)
    optimizations = backend.optimizations()
    if not optimizations:
        raise SystemExit(f"{a.compiler}: Backend.optimizations() lists nothing to measure against")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.keep) if a.keep else Path(tmp) / "campaign"
        tests, rates = campaign_triggers(out, a.compiler, a.time, a.jobs, a.seed)
    print(f"{a.compiler}: {tests} tests of --strategy oatest in {a.time:.0f} s (seed {a.seed}); "
          f"per optimization, tests that fired it / tests that targeted it")
    print("\n".join(table(optimizations, rates, backend.optimizations_out_of_reach())))


if __name__ == "__main__":
    main()
