"""Campaigns on a local Ray cluster (2 nodes, 1 CPU each): tests/s with 1 and 2 actors at steady
state, the driver's own CPU seconds per test, and from those the number of actors one driver can
feed before it becomes the bottleneck (worker seconds per test / driver CPU seconds per test).

  python bench/cluster_scaling.py [--compiler onnxruntime] [--ops 10] [--warm 10] [--measure 30]

Random strategy, reduction off. The same figures for the local pool with 1 worker come first, for
comparison. On a 2-core machine 2 actors share the cores with the driver: the estimate uses the
1-actor run, where the driver has a core of its own. Needs the extra `cluster` (Ray). Last line:
`actors one driver can feed: N`.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path


def worker_s_per_test(out: Path) -> float:
    """Mean seconds a worker spent in handle() per test (the store's per-test seconds)."""
    db = sqlite3.connect(out / "store.sqlite")
    s, n = db.execute("SELECT (SELECT COALESCE(SUM(seconds), 0) FROM tests WHERE status = 'done') + "
                      "(SELECT COALESCE(SUM(ms), 0) / 1000.0 FROM compact_tests), "
                      "(SELECT COUNT(*) FROM tests WHERE status = 'done') + (SELECT COUNT(*) FROM compact_tests)"
                      ).fetchone()
    return s / n if n else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiler", default="onnxruntime")
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--warm", type=float, default=10.0, help="seconds after the first judged test before timing")
    ap.add_argument("--measure", type=float, default=30.0, help="seconds of steady state measured per run")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ray
    from overhead import steady_campaign
    from ray.cluster_utils import Cluster

    from dlcfuzz.engine.campaign import campaign_options

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, address, jobs in (("local pool", None, 1), ("ray", cluster.address, 1),
                                         ("ray", cluster.address, 2)):
                out = Path(tmp) / f"{label}-{jobs}".replace(" ", "-")
                opts = campaign_options(compiler=a.compiler, strategy="random", seconds=3600, jobs=jobs, seed=a.seed,
                                        out=out, ops=a.ops, quiet=True, reduce=False, cluster=address)
                win = steady_campaign(opts, a.warm, a.measure)
                worker = worker_s_per_test(out)
                driver = win.driver_cpu_s / win.tests
                rows.append((label, jobs, win, worker, driver))
                name = f"{label}, {jobs} {'actor' if address else 'worker'}{'s' if jobs > 1 else ''}"
                print(f"{name:24s} {win.rate:7.1f} tests/s ({win.tests} tests in {win.wall_s:.1f} s), worker "
                      f"{1000 * worker:.2f} ms/test, driver CPU {1000 * driver:.2f} ms/test "
                      f"({100 * win.driver_cpu_s / win.wall_s:.0f}% of a core)", flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
    _, _, one, worker, driver = rows[1]
    two = rows[2][2]
    print(f"2 actors / 1 actor: {two.rate / one.rate:.2f}x tests/s")
    print(f"estimate from the 1-actor run: {1000 * worker:.2f} ms of worker time per test / "
          f"{1000 * driver:.2f} ms of driver CPU per test")
    print(f"actors one driver can feed: {worker / driver:.1f}")


if __name__ == "__main__":
    main()
