"""Domain repair: values that reach an operator lie in its domain, intermediate values included.

Value domains constrain the graph's inputs and constants when they are sampled; a computed value
that feeds a domain-restricted operator (asin of a sum, log of a difference) is not constrained,
and about one generated graph in six went non-finite, so its test was never judged. After
generation the reference runs on the sampled inputs; where an operator makes a non-finite value
out of finite inputs, the computed input that leaves the operator's domain is clipped into it by
an inserted `clip` node, and the check runs again. Deterministic: a function of graph and inputs.
"""

from __future__ import annotations

import numpy as np

from dlcfuzz import reference
from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value
from dlcfuzz.ir.types import FLOATS
from dlcfuzz.ops import get_op

MAX_REPAIRS = 8


def _bounded_computed_inputs(g: Graph) -> dict[str, list[tuple[int, float, float]]]:
    """Per node name: its inputs that another node computes, of a float type, whose domain is
    bounded on both sides, as (input index, low, high): the only inputs a clip can repair."""
    produced = {v.name for n in g.nodes for v in n.outputs}
    types = g.types()
    found: dict[str, list[tuple[int, float, float]]] = {}
    for n in g.nodes:
        if n.op == CALL_OP:
            continue
        spec = get_op(n.op)
        for k, name in enumerate(n.inputs):
            if name not in produced or types[name].dtype not in FLOATS:
                continue
            d = spec.domain(k, [types[i] for i in n.inputs], n.attrs)
            if d.lo is not None and d.hi is not None:
                found.setdefault(n.name, []).append((k, float(d.lo), float(d.hi)))
    return found


def _offender(g: Graph, env: dict[str, np.ndarray],
              bounded: dict[str, list[tuple[int, float, float]]]) -> tuple[Node, int, float, float] | None:
    """The first node that makes a non-finite value out of finite inputs, with the computed input
    of it that leaves the operator's domain and that domain's bounds."""
    for n in g.nodes:
        if n.op == CALL_OP or all(reference.finite(env[v.name]) for v in n.outputs):
            continue
        ins = [env[i] for i in n.inputs]
        if not all(reference.finite(x) for x in ins):
            return None  # an earlier offender that could not be repaired
        for k, lo, hi in bounded.get(n.name, ()):
            x = ins[k]
            if x.size and (x.min() < lo or x.max() > hi):
                return n, k, lo, hi
        return None
    return None


def repair_domains(g: Graph, inputs: dict[str, np.ndarray]) -> Graph:
    """`g` with clips inserted where a computed value leaves an operator's domain (in place)."""
    for _ in range(MAX_REPAIRS):
        bounded = _bounded_computed_inputs(g)
        if not bounded:  # nothing a clip could repair: no need to evaluate (most graphs)
            return g
        # the nodes after the last one with a bounded input cannot lead to a repair (_offender stops
        # at the first non-finite result): they are not evaluated
        last = max(i for i, n in enumerate(g.nodes) if n.name in bounded)
        prefix = Graph(inputs=g.inputs, constants=g.constants, nodes=g.nodes[:last + 1], functions=g.functions)
        try:
            with np.errstate(all="ignore"):
                env = reference.run(prefix, inputs, keep_all=True)
        except Exception:  # noqa: BLE001 - the reference policy reports what it cannot evaluate
            return g
        bad = _offender(prefix, env, bounded)
        if bad is None:
            return g
        node, k, lo, hi = bad
        x = node.inputs[k]
        t = g.types()[x]
        clipped = Value(g.fresh_name("dom"), t)
        at = g.nodes.index(node)
        g.nodes.insert(at, Node("clip", [x], [clipped], {"min": lo, "max": hi}, name=f"domain_{clipped.name}"))
        node.inputs[k] = clipped.name
    return g
