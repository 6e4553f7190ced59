"""Coverage-guided graph generation (HirGen, strict mode).

Each insertion step samples candidate operator instances; a candidate is inserted only when it
adds coverage (operator x dtype, operator x output shape, operator -> operator edge, path of
length 3) beyond the campaign's coverage and what this graph already covers. After
`candidates` fruitless tries the last valid one is inserted anyway (the bounded fallback:
generation always progresses). With candidates=1 the same loop is the unguided ablation
(`hirgen-random`). Input 0 of a new operator prefers the output of an existing operator node
(deep data flow) over graph inputs; fresh inputs/constants of compatible type are created
only when no existing value fits. Regions (gen/regions.py) are placed the same way: among
`candidates` wrappings of the generated graph, the one adding the most coverage (`guided_regions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dlcfuzz.gen.coverage import Coverage, graph_items, kind, node_items
from dlcfuzz.gen.random import GraphBuilder, Proposal, takes
from dlcfuzz.gen.regions import REGION_KINDS, Supported, add_regions
from dlcfuzz.gen.sizes import SizeProfile
from dlcfuzz.ir.graph import Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import OpSpec

GUIDED_CANDIDATES = 8
# Output shapes are new almost every time, edges rarely: the scarce criteria weigh more.
WEIGHT = {"edge": 4, "path3": 2, "op-dtype": 3, "op-shape": 1, "op-attr": 2, "region": 4}
P_CONNECT = 0.9  # input 0 from an existing value when one fits
P_OPERATOR_VALUE = 0.85  # ... and then from an operator's output rather than a graph input


def proposal_items(b: GraphBuilder, p: Proposal) -> list[str]:
    upstream = []
    for src in dict.fromkeys(s for s in p.sources if s is not None):
        prod = b.producer.get(src)
        if prod is not None:
            upstream.append((prod.op, sorted({b.producer[j].op for j in prod.inputs if j in b.producer})))
    return node_items(p.spec.name, p.dtype, p.outs, upstream, p.attrs)


def propose_one(b: GraphBuilder, choices: Sequence[tuple[OpSpec, list[str]]]) -> Proposal | None:
    rng = b.rng
    spec, ds = choices[int(rng.integers(len(choices)))]
    fits = [v for v in b.values if v.type.dtype in ds and v.type.rank in spec.ranks and takes(spec, v.type)]
    if fits and rng.random() < P_CONNECT:
        computed = [v for v in fits if v.name in b.producer]
        pool = computed if computed and rng.random() < P_OPERATOR_VALUE else fits
        v = pool[int(rng.integers(len(pool)))]
        p = b.propose(spec, v.name, v.type)
        if p is not None:
            return p
    dtype = ds[int(rng.integers(len(ds)))]
    rank = int(spec.ranks[int(rng.integers(len(spec.ranks)))])
    return b.propose(spec, None, TensorType(dtype, b.fresh_shape(rank)))


def generate_guided(
    rng: np.random.Generator,
    n_ops: int,
    coverage: Coverage,
    choices: Sequence[tuple[OpSpec, list[str]]],
    *,
    candidates: int = GUIDED_CANDIDATES,
    weights: Mapping[str, int] | None = None,
    start: GraphBuilder | None = None,
    sizes: SizeProfile | None = None,
) -> Graph:
    """A valid graph of `n_ops` operators; does not modify `coverage` (the caller adds
    graph_items(g) once the test is stored, so that a resumed campaign sees the same state).
    `weights` (criterion -> weight, default WEIGHT) scores new items; a criterion left out is ignored.
    `start`: a builder already holding nodes (a kept graph's prefix, GraphBuilder.from_prefix) to grow.
    `sizes`: a long-axis test's profile (gen/sizes.draw_sizes); None: small shapes."""
    weights = WEIGHT if weights is None else weights
    enough = max(weights.values(), default=1)
    b = GraphBuilder(rng, sizes) if start is None else start
    mine: set[str] = set()  # what this graph covers so far, beyond the campaign's coverage
    attempts = 0
    while len(b.g.nodes) < n_ops and attempts < 40 * max(n_ops, 1):
        chosen: tuple[Proposal, list[str]] | None = None
        best = 0
        for _ in range(max(candidates, 1)):
            attempts += 1
            p = propose_one(b, choices)
            if p is None:
                continue
            items = proposal_items(b, p)
            if candidates <= 1:
                chosen = (p, items)
                break
            score = sum(weights.get(kind(i), 0) for i in coverage.unseen(items) if i not in mine)
            if chosen is None or score > best:
                chosen, best = (p, items), score
            if score >= enough:  # new in the scarcest criterion: insert now
                break
        if chosen is None:
            continue
        b.commit(chosen[0])
        mine.update(chosen[1])
    if not b.g.nodes:
        raise ValueError("could not place any operator")
    return b.finish()


def guided_regions(g: Graph, rng: np.random.Generator, coverage: Coverage, kinds: tuple[str, ...] = REGION_KINDS,
                   supported: Supported | None = None, *, candidates: int = GUIDED_CANDIDATES,
                   weights: Mapping[str, int] | None = None) -> Graph:
    """`g` with node ranges in regions (gen/regions.add_regions): of up to `candidates` wrappings, the one whose items
    (its control-flow items, region kind x nesting depth x carried dtypes, and the items of the nodes around them)
    the campaign's `coverage` lacks weigh the most, drawn until one adds a control-flow item. With candidates=1, one
    wrapping (the ablation). Does not modify `coverage`."""
    weights = WEIGHT if weights is None else weights
    best, best_score = g, -1
    for _ in range(max(candidates, 1)):
        h = add_regions(g, rng, kinds=kinds, **({} if supported is None else {"supported": supported}))
        if candidates <= 1:
            return h
        new = coverage.unseen(sorted(graph_items(h)))
        score = sum(weights.get(kind(i), 0) for i in new)
        if score > best_score:
            best, best_score = h, score
        if any(kind(i) == "region" for i in new):  # the scarce criterion: no more draws
            break
    return best


__all__ = ["generate_guided", "graph_items", "guided_regions", "propose_one"]
