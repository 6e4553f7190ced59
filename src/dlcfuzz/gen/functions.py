"""Function outlining (HirGen's high-level-IR language features): move ranges of nodes into
sub-functions and call them.

Nodes are kept in topological order, so any contiguous range of a graph's nodes is a valid
subgraph: its parameters are the values it reads that are defined before it (graph inputs,
constants, earlier nodes' outputs), its outputs the values it defines that are read after it
or are outputs of the graph. The range is replaced by one "call" node whose outputs keep the
names of the values they stand for, so nothing after the range changes. A constant that only
the range reads may move into the new function instead of becoming a parameter.
"""

from __future__ import annotations

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value

P_NESTED = 0.3  # outline inside an already outlined function (a call inside a sub-function)
P_MOVE_CONSTANT = 0.5  # a constant only the range reads moves into the function


def _fresh_function_name(g: Graph) -> str:
    i = 0
    while f"f{i}" in g.functions:
        i += 1
    return f"f{i}"


def _fresh_node_name(host: Graph, base: str) -> str:
    taken = {n.name for n in host.nodes}
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    return name


def outline_range(g: Graph, host_name: str, start: int, stop: int, move_constants: bool | None = None,
                  rng: np.random.Generator | None = None) -> str | None:
    """Move nodes[start:stop] of `host_name` ("main" or a sub-function of g) into a new sub-function,
    in place. Returns the new function's name, or None when the range defines nothing anyone reads or
    reads or gives out a data-dependent extent (a function's signature is static, as a region's).
    `move_constants`: True/False for every constant only the range reads, None: a coin flip each (rng)."""
    host = g if host_name == g.name else g.functions[host_name]
    body = host.nodes[start:stop]
    if not body:
        return None
    defined = {v.name for n in body for v in n.outputs}
    reads: list[str] = list(dict.fromkeys(i for n in body for i in n.inputs if i not in defined))
    later = {i for n in host.nodes[stop:] for i in n.inputs} | set(host.outputs)
    outs = [v for n in body for v in n.outputs if v.name in later]
    types = host.types()
    if not outs or any(types[r].unknown for r in reads) or any(v.type.unknown for v in outs):
        return None
    outside_reads = {i for n in host.nodes[:start] + host.nodes[stop:] for i in n.inputs} | set(host.outputs)
    params: list[Value] = []
    moved: dict[str, np.ndarray] = {}
    for r in reads:
        if r in host.constants and r not in outside_reads:
            move = move_constants if move_constants is not None else bool(rng is not None and rng.random() < P_MOVE_CONSTANT)
            if move:
                moved[r] = host.constants[r]
                continue
        params.append(Value(r, types[r]))
    fname = _fresh_function_name(g)
    g.functions[fname] = Graph(
        inputs=params, constants=moved, nodes=list(body), outputs=[v.name for v in outs], name=fname,
    )
    call = Node(CALL_OP, [p.name for p in params], list(outs), {"callee": fname}, name=_fresh_node_name(host, f"call_{fname}"))
    host.nodes[start:stop] = [call]
    for k in moved:
        del host.constants[k]
    return fname


def outline(g: Graph, rng: np.random.Generator, max_functions: int = 2) -> Graph:
    """A copy of `g` with up to `max_functions` random contiguous node ranges moved into new
    sub-functions f0, f1, ... (occasionally inside an earlier one: nested calls). Computes the
    same outputs as `g` bit for bit (reference.run)."""
    h = g.copy()
    if max_functions <= 0:
        return h
    want = int(rng.integers(1, max_functions + 1))
    made = 0
    for _ in range(4 * want):
        if made >= want:
            break
        hosts = [h.name]
        nested = [f for f, sub in h.functions.items() if sub.nodes]
        if nested and rng.random() < P_NESTED:
            hosts = nested
        host_name = hosts[int(rng.integers(len(hosts)))]
        host = h if host_name == h.name else h.functions[host_name]
        n = len(host.nodes)
        if n == 0:
            continue
        start = int(rng.integers(n))
        stop = int(rng.integers(start + 1, n + 1))
        trivial = (host_name != h.name and stop - start == n) or (stop - start == 1 and host.nodes[start].op == CALL_OP)
        if trivial and rng.random() < 0.8:
            continue  # a wrapper around one call or a whole function body: allowed now and then
        if outline_range(h, host_name, start, stop, rng=rng) is not None:
            made += 1
    return h
