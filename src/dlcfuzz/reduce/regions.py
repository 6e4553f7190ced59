"""Removing a region (ops/regions.py) from a graph: its node replaced by one of its bodies, inlined.

- `if`: one branch (the caller tries the taken one first), its parameters bound to the captures;
- `loop`: one trip of the body (iteration 0, the node's condition, the initial carried values); each scan
  output becomes that trip's slice with a leading axis of one, so only a loop whose scan outputs are one
  trip long (`trips` 1) keeps its types;
- `scan`: one step, where the scan inputs are one slice long (the slice squeezed out of each, the scan
  outputs unsqueezed back).
The inlined values get fresh names in the enclosing graph; the region's outputs keep theirs."""

from __future__ import annotations

import numpy as np

from dlcfuzz.gen.regions import fresh_name
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType


class _Names:
    def __init__(self, g: Graph) -> None:
        self.taken = set(g.types()) | {n.name for n in g.nodes}

    def fresh(self, base: str) -> str:
        return fresh_name(self.taken, base)


def _inline(g: Graph, idx: int, body: Graph, bind: list[str], targets: dict[int, str],
            before: list[Node], after: list[Node], names: _Names) -> Graph:
    """`g` with node `idx` replaced by `before`, `body`'s nodes (its parameters read `bind`) and `after`;
    body output k is named targets[k] (an identity where the body outputs a parameter, a constant or
    a value twice)."""
    out = g.light_copy()
    region = out.nodes[idx]
    prefix = region.name or region.op
    rename = {p.name: b for p, b in zip(body.inputs, bind, strict=True)}
    for k, a in body.constants.items():
        rename[k] = names.fresh(f"{prefix}_{k}")
        out.constants[rename[k]] = a
    produced = {v.name for m in body.nodes for v in m.outputs}
    direct: dict[str, str] = {}
    for k, o in enumerate(body.outputs):
        if k in targets and o in produced and o not in direct:
            direct[o] = targets[k]
    nodes = list(before)
    for m in body.nodes:
        outs = []
        for v in m.outputs:
            rename[v.name] = direct.get(v.name) or names.fresh(f"{prefix}_{v.name}")
            outs.append(Value(rename[v.name], v.type))
        nodes.append(Node(m.op, [rename[i] for i in m.inputs], outs, dict(m.attrs), name=names.fresh(f"{prefix}_{m.name or m.op}")))
    types = {**{p.name: p.type for p in body.inputs}, **body.types()}
    for k, o in enumerate(body.outputs):
        if k in targets and direct.get(o) != targets[k]:
            nodes.append(Node("identity", [rename[o]], [Value(targets[k], types[o])], name=names.fresh(f"{prefix}_out{k}")))
    out.nodes[idx:idx + 1] = nodes + list(after)
    return out


def without_region(g: Graph, idx: int, branch: str | None = None) -> Graph | None:
    """`g` with region node `idx` replaced by one of its bodies inlined (`branch`: which branch of a
    conditional), or None where that would change its output types (a loop or scan longer than one trip
    with scan outputs)."""
    n = g.nodes[idx]
    names = _Names(g)
    if n.op == "if":
        body = n.attrs[branch or "then_branch"]
        return _inline(g, idx, body, list(n.inputs[1:]), dict(enumerate(v.name for v in n.outputs)), [], [], names)
    if n.op == "loop":
        k = int(n.attrs["num_carried"])
        scans = n.outputs[k:]
        if scans and int(n.attrs.get("trips", 0)) != 1:
            return None
        first = names.fresh(f"{n.name or 'loop'}_iteration")
        out_g = g.light_copy()
        out_g.constants[first] = np.array(0, dtype=np.int64)
        targets = {1 + j: v.name for j, v in enumerate(n.outputs[:k])}
        after = []
        for j, v in enumerate(scans):
            slice_name = names.fresh(f"{v.name}_slice")
            targets[1 + k + j] = slice_name
            after.append(Node("unsqueeze", [slice_name], [v], {"axes": [0]}, name=names.fresh(f"n_{slice_name}")))
        return _inline(out_g, idx, n.attrs["body"], [first, n.inputs[1], *n.inputs[2:]], targets, [], after, names)
    if n.op == "scan":
        a = n.attrs
        states, m = int(a["num_states"]), int(a["num_scan_inputs"])
        scanned = n.inputs[states:states + m]
        types = g.types()
        axes = [ax % types[s].rank for ax, s in zip(a["scan_input_axes"], scanned)]
        if any(types[s].shape[ax] != 1 for s, ax in zip(scanned, axes)):
            return None
        before, slices = [], []
        for s, ax in zip(scanned, axes):
            t = types[s]
            name = names.fresh(f"{s}_slice")
            before.append(Node("squeeze", [s], [Value(name, TensorType(t.dtype, t.shape[:ax] + t.shape[ax + 1:]))],
                               {"axes": [ax]}, name=names.fresh(f"n_{name}")))
            slices.append(name)
        targets = {j: v.name for j, v in enumerate(n.outputs[:states])}
        after = []
        for j, (v, ax) in enumerate(zip(n.outputs[states:], a["scan_output_axes"])):
            name = names.fresh(f"{v.name}_slice")
            targets[states + j] = name
            after.append(Node("unsqueeze", [name], [v], {"axes": [ax % v.type.rank]}, name=names.fresh(f"n_{name}")))
        bind = [*n.inputs[:states], *slices, *n.inputs[states + m:]]
        return _inline(g, idx, a["body"], bind, targets, before, after, names)
    return None
