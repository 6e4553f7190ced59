"""Memory of a campaign over time: the resident memory of the campaign process and its workers,
sampled every second, then the peak and, last, `memory growth: X MB/min` (the least-squares slope
after the first minute, when the compiler is loaded and caches are warm; NNSmith grew to 18.8 GB in
10 minutes here). The campaign process's own slope is printed apart: it is the one process that
lives as long as the campaign, while a worker's memory goes with it when it is replaced.

  python bench/memory.py [--time 300] [--compiler onnxruntime] [--strategy random] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss_mb(root: int) -> tuple[float, float]:
    """Resident memory of `root` and all its descendants (from /proc), and of `root` alone, in MB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            statm = Path(f"/proc/{entry}/statm").read_text().split()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = int(statm[1]) * PAGE
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total / 2**20, rss.get(root, 0) / 2**20


def slope_mb_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope over every sample (two end points alone move with whichever test or
    reduction happens to be running at that second)."""
    ts = [t / 60 for t, _ in points]
    mbs = [mb for _, mb in points]
    mean_t, mean_mb = sum(ts) / len(ts), sum(mbs) / len(mbs)
    return (sum((t - mean_t) * (mb - mean_mb) for t, mb in zip(ts, mbs))
            / max(1e-12, sum((t - mean_t) ** 2 for t in ts)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=int, default=300, help="campaign seconds")
    ap.add_argument("--compiler", default="onnxruntime")
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "dlcfuzz.cli", "fuzz", "--compiler", a.compiler, "--strategy", a.strategy,
               "--time", f"{a.time}s", "--jobs", str(a.jobs), "--seed", "0", "--out", str(Path(tmp) / "run"),
               "--quiet"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        samples: list[tuple[float, float]] = []
        driver: list[tuple[float, float]] = []  # the campaign process alone: the one process that lives
        while proc.poll() is None:  # for the whole campaign (a worker is replaced when it crashes, hangs or runs out of memory)
            t = time.monotonic() - t0
            tree, own = tree_rss_mb(proc.pid)
            samples.append((t, tree))
            driver.append((t, own))
            time.sleep(1.0)
    if len(samples) < 10:
        sys.exit(f"the campaign ended after {len(samples)} s: nothing to measure")
    print("  time    all processes   campaign process")
    for (t, mb), (_, own) in list(zip(samples, driver))[:: max(1, len(samples) // 10)]:
        print(f"{t:6.0f} s  {mb:8.1f} MB  {own:8.1f} MB")
    # while the campaign runs (it winds its workers down at the end of its budget)
    warm = [(t, mb) for t, mb in samples if min(60.0, a.time / 2) <= t <= a.time - 2]
    peak = max(mb for _, mb in samples)
    first, last = warm[0], warm[-1]
    growth = slope_mb_per_min(warm)
    driver_warm = [(t, mb) for t, mb in driver if first[0] <= t <= last[0]]
    print(f"peak: {peak:.0f} MB; after warm-up {first[1]:.0f} MB at {first[0]:.0f} s -> {last[1]:.0f} MB at {last[0]:.0f} s")
    print(f"campaign process alone: {driver_warm[0][1]:.0f} MB -> {driver_warm[-1][1]:.0f} MB, "
          f"growth {slope_mb_per_min(driver_warm):.1f} MB/min")
    print(f"memory growth: {growth:.1f} MB/min")


if __name__ == "__main__":
    main()
