"""Memory of a campaign over time: the resident memory of the campaign process and its workers,
sampled every second, then the peak and, last, `memory growth: X MB/min` (the least-squares slope
after the first minute, when the compiler is loaded and caches are warm; NNSmith grew to 18.8 GB in
10 minutes here). Each process that lives through a third of the window or more (the campaign
process, a worker never replaced) is printed apart with its own slope: the tree's slope also moves
with how many processes are alive and how young they are, a leak shows as one process that grows.

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


def tree_rss_mb(root: int) -> dict[int, float]:
    """Resident memory of `root` and each of its descendants (from /proc), in MB, by pid."""
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
    tree: dict[int, float] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in rss:
            tree[pid] = rss[pid] / 2**20
        todo.extend(children.get(pid, []))
    return tree


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
        lives: dict[int, list[tuple[float, float]]] = {}  # each process's own samples, by pid
        most_alive = 0
        while proc.poll() is None:
            t = time.monotonic() - t0
            tree = tree_rss_mb(proc.pid)
            samples.append((t, sum(tree.values())))
            most_alive = max(most_alive, len(tree))
            for pid, mb in tree.items():
                lives.setdefault(pid, []).append((t, mb))
            time.sleep(1.0)
    if len(samples) < 10:
        sys.exit(f"the campaign ended after {len(samples)} s: nothing to measure")
    driver = lives.get(proc.pid, [])
    own = dict(driver)
    print("  time    all processes   campaign process")
    for t, mb in samples[:: max(1, len(samples) // 10)]:
        print(f"{t:6.0f} s  {mb:8.1f} MB  {own.get(t, 0.0):8.1f} MB")
    # while the campaign runs (it winds its workers down at the end of its budget)
    warm_from, warm_to = min(60.0, a.time / 2), a.time - 2
    warm = [(t, mb) for t, mb in samples if warm_from <= t <= warm_to]
    peak = max(mb for _, mb in samples)
    first, last = warm[0], warm[-1]
    growth = slope_mb_per_min(warm)
    print(f"peak: {peak:.0f} MB; after warm-up {first[1]:.0f} MB at {first[0]:.0f} s -> {last[1]:.0f} MB at {last[0]:.0f} s")
    # The tree's slope also moves with how many processes are alive and how young they are (a
    # replaced worker, a reducer started for a finding and closed when idle, each loading what it
    # needs as it meets new operators); a leak shows as a process that keeps growing. So each
    # process that lived through at least a third of the window is shown with its own slope, after
    # its own first minute.
    long_lived = []
    for pid, pts in lives.items():
        own_warm = [(t, mb) for t, mb in pts if max(warm_from, pts[0][0] + 60.0) <= t <= warm_to]
        if own_warm and own_warm[-1][0] - own_warm[0][0] >= (warm_to - warm_from) / 3:
            long_lived.append((pid, own_warm))
    print(f"processes: {len(lives)} over the run, at most {most_alive} "
          f"at once; {len(long_lived)} lived through a third of the window or more:")
    for pid, pts in sorted(long_lived, key=lambda p: p[1][0][0]):
        role = "campaign" if pid == proc.pid else "worker"
        print(f"  {role:8s} {pts[0][1]:6.0f} MB at {pts[0][0]:5.0f} s -> {pts[-1][1]:6.0f} MB at {pts[-1][0]:5.0f} s, "
              f"growth {slope_mb_per_min(pts):5.1f} MB/min")
    print(f"memory growth: {growth:.1f} MB/min")


if __name__ == "__main__":
    main()
