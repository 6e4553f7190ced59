"""Portfolio: `auto` and each single strategy on equal budgets against one compiler; prints each run's
tests, distinct findings (signatures), root-cause clusters (engine/clusters.py: what a maintainer
counts as distinct bugs; one bug found with several operator sets is several signatures), of them
new (not in the known-bugs register), and internal errors; then, last, `auto vs best single: X`
(clusters of auto over those of the best single strategy; the target is >= 1.0).
  python bench/portfolio.py [--time 300] [--compiler onnxruntime] [--jobs 2] [--seed 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

SINGLES = {"random": {}, "hirgen": {}, "disruptive": {"strategy": "hirgen", "mode": "disruptive"}, "oatest": {},
           "metamorphic": {}, "tzer": {}}


def run(out: Path, compiler: str, seconds: float, jobs: int, seed: int, **kw: object) -> tuple[int, int, int, int, int]:
    """tests, distinct findings, clusters, new clusters, internal errors of one campaign."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.known import Register
    from dlcfuzz.engine.report import classify, cluster_known
    from dlcfuzz.engine.store import Store

    camp = Campaign(campaign_options(compiler=compiler, seconds=seconds, jobs=jobs, seed=seed, out=out, quiet=True, **kw))
    camp.run()
    store = Store(out / "store.sqlite", create=False)
    clusters, known = classify(out, store, Register())
    new = sum(1 for c in clusters if cluster_known(c, known) is None)
    return store.totals()["tests"], len(store.findings()), len(clusters), new, len(store.internal_errors())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=float, default=300.0, help="seconds per campaign")
    ap.add_argument("--compiler", default="onnxruntime")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="keep each campaign in DIR/<name> (`dlcfuzz list DIR/auto` shows its new clusters)")
    a = ap.parse_args()
    results: dict[str, tuple[int, int, int, int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(a.keep) if a.keep else Path(tmp)
        for name, kw in [("auto", {"strategy": "auto"}), *SINGLES.items()]:
            if name == "tzer" and a.compiler != "tvm":
                continue
            kw = {"strategy": name, **kw}
            results[name] = run(base / name, a.compiler, a.time, a.jobs, a.seed, **kw)
            tests, distinct, clusters, new, internal = results[name]
            print(f"{name:12s} tests {tests:7d}  distinct findings {distinct:3d}  clusters {clusters:3d} (new {new:3d})  "
                  f"internal errors {internal}", flush=True)
    best = max(v[2] for k, v in results.items() if k != "auto")
    print(f"auto vs best single: {results['auto'][2] / max(best, 1):.2f}")


if __name__ == "__main__":
    main()
