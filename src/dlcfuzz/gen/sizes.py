"""Size profiles: the share of generated tests with long axes, and their bounds.

Most tests keep today's small shapes (every axis 1..MAX_DIM). A long-axis test (LONG_SHARE of them,
drawn per test) gives every fresh shape one or two axes whose lengths are the ones vectorized loops
with remainders, blocked and tiled kernels, split reductions and parallel chunks get wrong: odd,
prime, one below and one above a power of two (LONG_LENGTHS). Its tensors stay within
MAX_LONG_ELEMENTS elements each, and its graph within MAX_WORK element operations in all
(`OpSpec.work` over every node, contractions counted by their products), so that the NumPy
reference and the compile stay fast.

A profile draws from a generator of its own, spawned from the test's (`Generator.spawn` does not
advance the test's stream): a small test is, draw for draw, the test `--sizes small` makes, and
a long one is reproducible from the test's seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dlcfuzz.ir.graph import Graph
    from dlcfuzz.ir.types import TensorType

SIZE_MODES = ("mixed", "small")  # --sizes: `mixed` draws long-axis tests, `small` never does
LONG_SHARE = 0.2  # of generated tests, with --sizes mixed (bench/size_cost.py measures what they cost)
MAX_LONG_ELEMENTS = 100_000  # per tensor of a long-axis test
MAX_WORK = 3_000_000  # element operations of a long-axis test's graph, all nodes (OpSpec.work)
_PRIMES = (13, 61, 97, 251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 99991)
# lengths at which vector, tile and thread-chunk remainders show: 2^k - 1, 2^k + 1 and primes
LONG_LENGTHS: tuple[int, ...] = tuple(sorted({n for k in range(3, 17) for n in (2**k - 1, 2**k + 1)} | set(_PRIMES)))
P_TWO_LONG = 0.3  # of long shapes of rank 2 or more: two long axes (a long matrix, a long image)


@dataclass
class SizeProfile:
    """The bounds of one long-axis test and the generator that lengthens its shapes."""

    rng: np.random.Generator
    max_elements: int = MAX_LONG_ELEMENTS
    max_work: int = MAX_WORK

    def lengthen(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """`shape` with one or two axes made long, within max_elements; a scalar stays one."""
        if not shape:
            return shape
        rng = self.rng
        count = 2 if len(shape) >= 2 and rng.random() < P_TWO_LONG else 1
        dims = list(shape)
        for axis in rng.choice(len(dims), size=count, replace=False):
            room = self.max_elements // math.prod(d for k, d in enumerate(dims) if k != axis)
            fits = [n for n in LONG_LENGTHS if n <= room]
            if fits:
                dims[int(axis)] = fits[int(rng.integers(len(fits)))]
        return tuple(dims)

    def admits(self, work: int, types: Iterable[TensorType]) -> bool:
        """Whether `work` element operations in all, and tensors of `types`, stay within this test's bounds."""
        return work <= self.max_work and all(t.size <= self.max_elements for t in types)

    def holds(self, g: Graph) -> bool:
        """Whether graph `g` (a whole test: its work summed over its nodes, every value's type) stays within them."""
        return self.admits(graph_work(g), g.types().values())


def within_bounds(g: Graph) -> bool:
    """Whether graph `g` stays within a long-axis test's bounds: what every test must, a small one too, since a
    splice's bridge (a reshape or pad to a long axis) can lengthen it. Read at call time (tests lower them)."""
    return graph_work(g) <= MAX_WORK and all(t.size <= MAX_LONG_ELEMENTS for t in g.types().values())


def graph_work(g: Graph) -> int:
    """`OpSpec.work` summed over the nodes of `g`, sub-functions' bodies once per call."""
    from dlcfuzz.ir.graph import CALL_OP, Graph
    from dlcfuzz.ops import get_op

    env = g.types()
    total = 0
    for n in g.nodes:
        if n.op == CALL_OP:
            f = g.functions[n.attrs["callee"]]
            total += graph_work(Graph(f.inputs, f.constants, f.nodes, f.outputs, g.functions))
        else:
            total += get_op(n.op).work([env[i] for i in n.inputs], [v.type for v in n.outputs])
    return total


def draw_sizes(rng: np.random.Generator, mode: str = "mixed") -> SizeProfile | None:
    """The size profile of the test whose generator is `rng`: a long-axis one for LONG_SHARE of tests with
    `mode` "mixed", None (today's small shapes) otherwise. `rng`'s own stream is not advanced."""
    if mode not in SIZE_MODES:
        raise ValueError(f"unknown size mode {mode!r} (choose from {', '.join(SIZE_MODES)})")
    if mode == "small":
        return None
    own = rng.spawn(1)[0]
    return SizeProfile(own) if own.random() < LONG_SHARE else None


def largest_axis(shapes: list[tuple[int, ...]]) -> int:
    """The longest axis among `shapes` (0 when all are scalars)."""
    return max((d for s in shapes for d in s), default=0)
