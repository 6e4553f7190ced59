"""Store growth: an ONNXRuntime campaign (the random strategy unless --strategy says otherwise; the
CLI's default is auto), then the size of its store (with its WAL) per hour of campaign, and what is
in it. A passing or routine test keeps one compact row (it regenerates from the master seed), a
passing metamorphic mutant the steps that rebuild it; findings, internal errors, other unknowns and
a bounded corpus keep their blobs.
  python bench/store_growth.py [--time 600] [--strategy random] [--jobs 2]
Prints, last, `store MB per hour: N` (the target is <= 50; every passing test kept whole gave ~3,000).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=float, default=600.0, help="campaign seconds")
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--compiler", default="onnxruntime")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        t0 = time.monotonic()
        Campaign(campaign_options(compiler=a.compiler, strategy=a.strategy, seconds=a.time, jobs=a.jobs, seed=0, out=out,
                                  quiet=True)).run()
        hours = (time.monotonic() - t0) / 3600
        size = sum(p.stat().st_size for p in out.glob("store.sqlite*"))
        db = sqlite3.connect(out / "store.sqlite")
        compact = db.execute("SELECT COUNT(*) FROM compact_tests").fetchone()[0]
        whole, blob_bytes = db.execute("SELECT COUNT(*), COALESCE(SUM(length(blob)), 0) FROM tests").fetchone()
        findings = db.execute("SELECT COUNT(*) FROM findings").fetchone()[0]
        corpus = db.execute("SELECT COUNT(*) FROM corpus").fetchone()[0]
        print(f"{compact + whole} tests in {hours * 3600:.0f} s: {compact} compact rows, {whole} kept whole "
              f"({blob_bytes / 1e6:.1f} MB of blobs; corpus {corpus}, findings {findings})")
        print(f"store {size / 1e6:.2f} MB, {size / max(compact + whole, 1):.0f} bytes per test")
        try:  # where the bytes are (SQLite's dbstat table, where the build has it)
            tables = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 6").fetchall()
            print("largest tables: " + ", ".join(f"{name} {n / 1e6:.1f} MB" for name, n in tables))
        except sqlite3.OperationalError:
            pass
        print(f"store MB per hour: {size / 1e6 / hours:.1f}")


if __name__ == "__main__":
    main()
