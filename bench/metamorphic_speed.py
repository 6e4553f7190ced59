"""Metamorphic strategy speed: reduction of a planted fault, then `mutations/s: N` for iterative
mutation of ResNet-18 (MT-DLComp needed 15-20 s per mutated model, i.e. 0.05-0.07 mutations/s).

  python bench/metamorphic_speed.py [--model resnet18] [--steps 200] [--fault-model tiny_resnet]

The planted fault is ONNXRuntime whose optimized configuration mis-evaluates every Abs node
(`planted:miseval@abs`); Abs occurs only in mutation steps. The campaign stops after its first
test; the time printed is what the campaign spent reducing (ddmin over steps, constant conditions,
node-level reduction), with the node counts before and after.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np


def reduction(model: str) -> None:
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        c = Campaign(campaign_options(compiler="planted:miseval@abs", strategy="metamorphic", model=model, seconds=600,
                                     jobs=1, out=out, max_tests=1, quiet=True))
        c.run()
        db = sqlite3.connect(out / "store.sqlite")
        row = db.execute("SELECT nodes, reduced_nodes FROM findings WHERE duplicate_of IS NULL ORDER BY id").fetchone()
        if row is None:
            print(f"planted fault on {model}: NOT FOUND")
            return
        print(f"planted fault on {model}: reduced {row[0]} -> {row[1]} nodes in {c.ctx.reduce_s[0]:.1f} s")


def mutation_speed(model: str, steps: int) -> float:
    from dlcfuzz.mutate.metamorphic import iterate
    from dlcfuzz.zoo import build, sample_inputs

    g = build(model, 0)
    inputs = sample_inputs(g, 0)
    profile: dict[str, np.ndarray] = {}
    nodes0 = len(g.nodes)
    t0 = time.perf_counter()
    g, done = iterate(g, np.random.default_rng(0), steps, inputs, profile=profile)
    seconds = time.perf_counter() - t0
    kinds = {k: sum(s.kind == k for s in done) for k in ("uoc", "pioc")}
    print(f"{model}: {steps} steps ({kinds['uoc']} UOC, {kinds['pioc']} PIOC), {nodes0} -> {len(g.nodes)} nodes "
          f"in {seconds:.2f} s")
    return steps / seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18", help="model mutated iteratively")
    ap.add_argument("--steps", type=int, default=200, help="chain length (the campaign's chains are 200 steps)")
    ap.add_argument("--fault-model", default="tiny_resnet", help="model of the planted-fault campaign")
    a = ap.parse_args()
    reduction(a.fault_model)
    rate = mutation_speed(a.model, a.steps)
    print(f"vs MT-DLComp (15-20 s per mutated model): {rate * 15:.0f}x-{rate * 20:.0f}x faster")
    print(f"mutations/s: {rate:.1f}")


if __name__ == "__main__":
    main()
