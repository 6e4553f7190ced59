"""Shrinking a reduced test's extents and values while its finding still shows.

Axes: every long length (over MAX_DIM) of the graph's inputs and constants is shrunk, longest first,
by halving while the predicate holds, then by bisection between the last length that showed and the
first that did not: a fault of lengths over 64 is reported at 65. Changing a length changes every
input and constant axis of that length at once (a broadcast partner, a matmul's shared dimension:
lengths that must agree usually are equal) and keeps the values of the first positions along it;
every node's types are then inferred again. A candidate whose types do not infer (an attribute that
names the length: a reshape target, a slice end), whose strict-domain constants fall out of their
domain (indices into the old length) or whose reference fails is not tried.

Values: ddmin over which inputs and constants keep their values; the others are re-sampled in the
small corner (`gen.inputs.sample_tensor` with the value's domain), so a finding is shown with the
fewest values it needs from its test. Before graph reduction, one check tries every value small.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlcfuzz import reference
from dlcfuzz.gen.inputs import sample_tensor, value_domains
from dlcfuzz.gen.random import MAX_DIM
from dlcfuzz.ir.graph import Graph, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import ANY, check_graph, get_op
from dlcfuzz.reduce.budget import ReductionBudget
from dlcfuzz.reduce.ddmin import ddmin

Predicate = Callable[[Graph, dict[str, np.ndarray]], bool]


def longest_axis(g: Graph) -> int:
    """The longest axis of any value of `g` (0 when all are scalars)."""
    return max((d for t in g.types().values() for d in t.shape), default=0)


def reinfer(g: Graph) -> Graph | None:
    """`g` with every node's output types inferred again from its (changed) input types; None when a node's
    rule refuses them. Graphs with sub-functions are not retyped (None)."""
    if g.functions:
        return None
    out = g.light_copy()
    env = out.types()
    try:
        for n in out.nodes:
            outs = get_op(n.op).infer([env[i] for i in n.inputs], n.attrs)
            n.outputs = [Value(v.name, t) for v, t in zip(n.outputs, outs)]
            env.update({v.name: v.type for v in n.outputs})
        check_graph(out)
    except Exception:  # any rule's refusal: the length is not free to change here
        return None
    return out


def _cut(a: np.ndarray, length: int, new: int) -> np.ndarray:
    """`a` with every axis of `length` cut to its first `new` positions."""
    return a[tuple(slice(0, new) if d == length else slice(None) for d in a.shape)]


def resized(g: Graph, inputs: dict[str, np.ndarray], length: int,
            new: int) -> tuple[Graph, dict[str, np.ndarray]] | None:
    """`g` and its inputs with every input and constant axis of `length` cut to `new` (< length), types
    inferred again; None where that is not consistent (see the module's docstring)."""
    cand = g.light_copy()
    cand.inputs = [Value(v.name, TensorType(v.type.dtype, tuple(new if d == length else d for d in v.type.shape)))
                   for v in g.inputs]
    cand.constants = {k: _cut(a, length, new) for k, a in g.constants.items()}
    typed = reinfer(cand)
    if typed is None:
        return None
    feed = {k: _cut(a, length, new) for k, a in inputs.items()}
    for name, d in value_domains(typed).items():
        a = typed.constants.get(name)
        if d.strict and a is not None and a.size and ((d.lo is not None and a.min() < d.lo)
                                                      or (d.hi is not None and a.max() > d.hi)):
            return None
    try:
        reference.run(typed, feed)
    except Exception:  # an operator's precondition the types do not carry (e.g. an index into the old length)
        return None
    return typed, feed


def shrink_axes(g: Graph, inputs: dict[str, np.ndarray], still_fails: Predicate,
                budget: ReductionBudget) -> tuple[Graph, dict[str, np.ndarray]]:
    """The graph and inputs with each long length as short as the predicate allows (halving, then bisection),
    within `budget`."""
    cur, cur_in = g, inputs
    lengths = sorted({d for v in g.inputs for d in v.type.shape if d > MAX_DIM}
                     | {d for a in g.constants.values() for d in a.shape if d > MAX_DIM}, reverse=True)

    def attempt(length: int, new: int) -> tuple[Graph, dict[str, np.ndarray]] | None:
        cand = resized(cur, cur_in, length, new)
        if cand is None or not budget.take() or not still_fails(*cand):
            return None
        return cand

    for length in lengths:
        shows, gone = length, 0  # shortest length known to show; longest known not to (or not to be possible)
        while shows // 2 > gone and budget.stopped is None:
            cand = attempt(shows, shows // 2)
            if cand is None:
                gone = shows // 2
                break
            (cur, cur_in), shows = cand, shows // 2
        while shows - gone > 1 and budget.stopped is None:
            mid = (shows + gone) // 2
            cand = attempt(shows, mid)
            if cand is None:
                gone = mid
            else:
                (cur, cur_in), shows = cand, mid
    return cur, cur_in


def shrink_values(g: Graph, inputs: dict[str, np.ndarray], still_fails: Predicate, budget: ReductionBudget,
                  seed: int, only_all_small: bool = False) -> tuple[Graph, dict[str, np.ndarray]]:
    """The graph and inputs with as few inputs and constants as possible keeping their values (ddmin over them;
    the rest re-sampled in the small corner of their domain from `seed`), within `budget`. `only_all_small`:
    try every value small at once, one check, and keep the test as it is when that does not show (before
    graph reduction: an edge value that absorbs a difference, 1 added to 1e30, hides it in every smaller
    candidate graph)."""
    rng = np.random.default_rng(seed)
    domains = value_domains(g)
    given = {**g.constants, **inputs}
    types = {v.name: v.type for v in g.inputs} | {k: TensorType(str(a.dtype), a.shape) for k, a in g.constants.items()}
    small = {k: sample_tensor(rng, types[k], domains.get(k, ANY)) for k in given}
    differ = [k for k, a in given.items() if a.dtype.kind != "b" and not np.array_equal(small[k], a, equal_nan=True)]
    if not differ:
        return g, inputs

    def with_kept(kept: list[str]) -> tuple[Graph, dict[str, np.ndarray]]:
        value = {k: (a if k in kept or k not in differ else small[k]) for k, a in given.items()}
        cand = g.light_copy()
        cand.constants = {k: value[k] for k in g.constants}
        return cand, {k: value[k] for k in inputs}

    def shows(kept: list[str]) -> bool:
        return budget.take() and still_fails(*with_kept(kept))

    if shows([]):
        return with_kept([])
    if only_all_small:
        return g, inputs
    return with_kept(ddmin(differ, shows))
