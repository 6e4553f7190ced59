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
from dlcfuzz.ir.graph import Graph, Node, Value, live_nodes
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


def _read_params(body: Graph, outputs: list[str]) -> set[str]:
    """The parameters of `body` that its nodes computing `outputs` read (or that are among `outputs`)."""
    live = set(outputs)
    for m in reversed(body.nodes):
        if any(v.name in live for v in m.outputs):
            live.update(m.inputs)
    return {p.name for p in body.inputs} & live


def _slim_body(body: Graph, params: list[int], outputs: list[int]) -> Graph:
    """`body` keeping parameters `params` and outputs `outputs` (indices), without the nodes and constants
    that no kept output needs."""
    out = Graph(inputs=[body.inputs[i] for i in params], constants=dict(body.constants),
                nodes=list(body.nodes), outputs=[body.outputs[i] for i in outputs], name=body.name)
    out.nodes, live = live_nodes(out.nodes, out.outputs)
    out.constants = {k: a for k, a in out.constants.items() if k in live}
    return out


def without_unused_region_outputs(g: Graph, idx: int) -> Graph | None:
    """`g` with region node `idx` computing only what the rest of `g` reads of it: a conditional's unread
    outputs, a loop's or scan's unread scan outputs and carried values (a state whose final value nobody
    reads and whose parameter no kept output's computation reads) dropped, with the body nodes only they
    needed and the captures nobody reads then; None where nothing is unused. A finding in a region whose
    body also computes values the test does not return is otherwise reduced with them (its operators, the
    register's facts, are theirs too)."""
    n = g.nodes[idx]
    read = set(g.outputs) | {i for m in g.nodes if m is not n for i in m.inputs}
    used = [v.name in read for v in n.outputs]
    if n.op == "if":
        keep_out = [k for k, u in enumerate(used) if u]
        bodies = [n.attrs["then_branch"], n.attrs["else_branch"]]
        reads = set().union(*(_read_params(b, [b.outputs[k] for k in keep_out]) for b in bodies))
        keep_cap = [k for k, p in enumerate(bodies[0].inputs)
                    if p.name in reads or bodies[1].inputs[k].name in reads]
        if len(keep_out) == len(n.outputs) and len(keep_cap) == len(bodies[0].inputs):
            return None
        out = g.light_copy()
        m = out.nodes[idx]
        for a, b in zip(("then_branch", "else_branch"), bodies):
            m.attrs[a] = _slim_body(b, keep_cap, keep_out)
        m.inputs = [m.inputs[0], *(m.inputs[1 + k] for k in keep_cap)]
        m.outputs = [m.outputs[k] for k in keep_out]
        return out
    if n.op not in ("loop", "scan"):
        return None
    body = n.attrs["body"]
    loop = n.op == "loop"
    states = int(n.attrs["num_carried" if loop else "num_states"])
    scanned = 0 if loop else int(n.attrs["num_scan_inputs"])
    first_param = 2 if loop else 0  # a loop's body starts with the iteration number and the condition
    first_out = 1 if loop else 0  # and returns its next condition first
    kept_scans = [j for j in range(len(n.outputs) - states) if used[states + j]]
    kept_states = {j for j in range(states) if used[j]}
    while True:  # a kept output's computation may read another state's parameter: that state stays too
        outs = [body.outputs[first_out + j] for j in sorted(kept_states)]
        outs += [body.outputs[first_out + states + j] for j in kept_scans]
        if loop:
            outs.append(body.outputs[0])
        reads = _read_params(body, outs)
        more = {j for j in range(states) if body.inputs[first_param + j].name in reads} - kept_states
        if not more:
            break
        kept_states |= more
    states_kept = sorted(kept_states)
    captures = range(first_param + states + scanned, len(body.inputs))
    caps_kept = [c for c in captures if body.inputs[c].name in reads]
    if len(states_kept) == states and len(kept_scans) == len(n.outputs) - states and len(caps_kept) == len(captures):
        return None
    params = [*range(first_param), *(first_param + j for j in states_kept),
              *range(first_param + states, first_param + states + scanned), *caps_kept]
    body_outs = [*range(first_out), *(first_out + j for j in states_kept), *(first_out + states + j for j in kept_scans)]
    out = g.light_copy()
    m = out.nodes[idx]
    m.attrs["body"] = _slim_body(body, params, body_outs)
    lead = 2 if loop else 0  # a loop's node inputs: trip count, condition, then as its body's parameters
    m.inputs = [*m.inputs[:lead], *(m.inputs[p - first_param + lead] for p in params[first_param:])]
    m.outputs = [*(m.outputs[j] for j in states_kept), *(m.outputs[states + j] for j in kept_scans)]
    m.attrs["num_carried" if loop else "num_states"] = len(states_kept)
    if not loop:
        for a in ("scan_output_axes", "scan_output_directions"):
            if a in m.attrs:
                m.attrs[a] = [m.attrs[a][j] for j in kept_scans]
    return out
