"""Generation speed: ONNX and Relax lowering time per graph, then `valid graphs/s: N` (10-operator graphs, one core).

  python bench/gen_speed.py [--count 300] [--ops 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--ops", type=int, default=10)
    a = ap.parse_args()
    from dlcfuzz.errors import LoweringGap
    from dlcfuzz.gen.random import generate
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.ops import check_graph
    from dlcfuzz.oracle.policy import test_seed

    graphs = []
    t0 = time.perf_counter()
    for i in range(a.count):
        g = generate(np.random.default_rng(test_seed(0, i)), a.ops)
        check_graph(g)
        graphs.append(g)
    gen_s = time.perf_counter() - t0
    sizes = [len(g.nodes) for g in graphs]
    t0 = time.perf_counter()
    for g in graphs:
        to_onnx(g).SerializeToString()
    onnx_s = (time.perf_counter() - t0) / len(graphs)
    print(f"ONNX lowering: {onnx_s * 1e3:.2f} ms/graph")
    try:
        from dlcfuzz.lower.relax import to_relax
    except ImportError:
        print("Relax lowering: skipped (tvm not installed)")
    else:
        # A graph with an operator Relax documents as a gap is timed until it raises and counted apart, so the
        # per-graph time stays over every graph tried.
        sample = graphs[: min(100, len(graphs))]
        gaps = 0
        t0 = time.perf_counter()
        for g in sample:
            try:
                to_relax(g)
            except LoweringGap:
                gaps += 1
        per_graph_ms = (time.perf_counter() - t0) / len(sample) * 1e3
        print(f"Relax lowering: {per_graph_ms:.2f} ms/graph ({gaps} of {len(sample)} graphs hit a Relax gap)")
    print(f"mean operators/graph: {np.mean(sizes):.2f} (requested {a.ops})")
    print(f"generation + check: {gen_s / len(graphs) * 1e3:.2f} ms/graph")
    print(f"valid graphs/s: {len(graphs) / gen_s:.0f}")


if __name__ == "__main__":
    main()
