"""Sampling graph inputs inside every consumer's value domain."""

from __future__ import annotations

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import ANY, Domain, get_op

INT_DEFAULT = (-5, 5)
FLOAT_DEFAULT = (-2.0, 2.0)


def merge_domains(domains: list[Domain]) -> Domain:
    """The intersection of several domains (the first wins when they are disjoint)."""
    if not domains:
        return ANY
    lo = max((d.lo for d in domains if d.lo is not None), default=None)
    hi = min((d.hi for d in domains if d.hi is not None), default=None)
    if lo is not None and hi is not None and lo > hi:
        return domains[0]
    return Domain(lo, hi, any(d.nonzero for d in domains), any(d.strict for d in domains))


def value_domains(g: Graph) -> dict[str, Domain]:
    """Domain needs of every value, from the operators that consume it (through calls too)."""
    types = g.types()
    needs: dict[str, list[Domain]] = {}
    for n in g.nodes:
        if n.op == CALL_OP:
            f = g.functions[n.attrs["callee"]]
            inner = value_domains(Graph(f.inputs, f.constants, f.nodes, f.outputs, g.functions))
            for p, a in zip(f.inputs, n.inputs):
                if p.name in inner:
                    needs.setdefault(a, []).append(inner[p.name])
            continue
        spec = get_op(n.op)
        in_types = [types[i] for i in n.inputs]
        for k, i in enumerate(n.inputs):
            d = spec.domain(k, in_types, n.attrs)
            if d != ANY:
                needs.setdefault(i, []).append(d)
    return {k: merge_domains(v) for k, v in needs.items()}


def sample_tensor(rng: np.random.Generator, t: TensorType, d: Domain = ANY) -> np.ndarray:
    dt = t.np_dtype
    if t.dtype == "bool":
        return np.asarray(rng.random(t.shape) < 0.5)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        lo = int(np.ceil(d.lo)) if d.lo is not None else INT_DEFAULT[0]
        hi = int(np.floor(d.hi)) if d.hi is not None else INT_DEFAULT[1]
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        if lo > hi:
            lo = hi
        a = rng.integers(lo, hi + 1, size=t.shape, dtype=np.int64)
        if d.nonzero:
            a = np.where(a == 0, hi if hi != 0 else lo if lo != 0 else 1, a)
        return a.astype(dt)
    lo = d.lo if d.lo is not None else FLOAT_DEFAULT[0]
    hi = d.hi if d.hi is not None else FLOAT_DEFAULT[1]
    a = rng.uniform(lo, hi, size=t.shape)
    if d.nonzero:
        # keep divisors away from zero, not just nonzero: 1/1e-9 is legal but flaky to compare
        a = np.where(np.abs(a) < 0.25, np.copysign(0.25 + np.abs(a), a), a)
    return a.astype(dt)


def sample_inputs(g: Graph, rng: np.random.Generator) -> dict[str, np.ndarray]:
    doms = value_domains(g)
    return {v.name: sample_tensor(rng, v.type, doms.get(v.name, ANY)) for v in g.inputs}
