"""HirGen coverage: the same number of graphs with `hirgen` (coverage-guided) and `hirgen-random`
(the same loop, unguided); prints the three coverage counts of each, then `edge coverage ratio: X`.

  python bench/hirgen_coverage.py [--graphs 1000] [--ops 10] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=1000)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from dlcfuzz.gen.coverage import Coverage, graph_items
    from dlcfuzz.gen.hirgen import GUIDED_CANDIDATES, generate_guided
    from dlcfuzz.gen.random import allowed_choices
    from dlcfuzz.oracle.policy import test_seed

    choices = allowed_choices(None, None, None)
    counts = {}
    for strategy, candidates in (("hirgen", GUIDED_CANDIDATES), ("hirgen-random", 1)):
        cov = Coverage()
        t0 = time.perf_counter()
        for i in range(a.graphs):
            g = generate_guided(np.random.default_rng(test_seed(a.seed, i)), a.ops, cov, choices, candidates=candidates)
            cov.add(graph_items(g))
        ms = (time.perf_counter() - t0) / a.graphs * 1e3
        counts[strategy] = cov.counts()
        c = counts[strategy]
        print(f"{strategy:14s} {a.graphs} graphs ({ms:.2f} ms each): op x dtype {c['op-dtype']}, "
              f"op x shape {c['op-shape']}, op -> op edges {c['edge']} (paths of 3: {c['path3']})")
    print(f"edge coverage ratio: {counts['hirgen']['edge'] / max(counts['hirgen-random']['edge'], 1):.2f}")


if __name__ == "__main__":
    main()
