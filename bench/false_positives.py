"""False positives: a correct configuration pair over many random tests must give zero numeric findings.

ONNXRuntime without optimizations vs with basic optimizations (constant folding and
redundancy elimination, which must not change results), both also judged against the NumPy
reference. Prints the counts, then, last: `false positives: N in T tests`.

  python bench/false_positives.py [--tests 2000] [--configs ort-disable,ort-basic]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=2000)
    ap.add_argument("--configs", default="ort-disable,ort-basic")
    ap.add_argument("--compiler", default="onnxruntime")
    a = ap.parse_args()
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        Campaign(campaign_options(compiler=a.compiler, strategy="random", seconds=36000, jobs=2, seed=3, out=out, ops=10,
                                 max_tests=a.tests, quiet=True, configs=a.configs.split(","))).run()
        db = sqlite3.connect(out / "store.sqlite")
        tests = db.execute("SELECT COUNT(*) FROM tests WHERE status='done'").fetchone()[0]
        rows = db.execute("SELECT category, COUNT(*) FROM findings GROUP BY category").fetchall()
        for cat, n in rows:
            print(f"findings {cat}: {n}")
        for cat, n in db.execute("SELECT category, count FROM unknowns"):
            print(f"unknown {cat}: {n}")
        numeric = sum(n for cat, n in rows if cat in ("inconsistency", "wrong-result"))
        for (detail,) in db.execute("SELECT detail FROM findings WHERE category IN ('inconsistency','wrong-result') LIMIT 5"):
            print("  e.g.", detail.splitlines()[0][:200])
    print(f"false positives: {numeric} in {tests} tests")


if __name__ == "__main__":
    main()
