"""Graph reduction: shrink a failing test while a predicate still holds.

Moves, repeated to a fixed point:
  - keep a single output (each intermediate value, earliest first, is tried as the only output);
  - cut upstream: replace a node's computed input by a fresh graph input that carries the
    reference value it had, which deletes everything upstream that is no longer needed.
Inputs stay realistic because cut values come from the reference interpreter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlcfuzz import reference
from dlcfuzz.ir.graph import Graph, Value

Predicate = Callable[[Graph, dict[str, np.ndarray]], bool]


def prune(g: Graph) -> Graph:
    """Drop nodes, inputs and constants that no output depends on."""
    live = set(g.outputs)
    keep = []
    for n in reversed(g.nodes):
        if any(v.name in live for v in n.outputs):
            keep.append(n)
            live.update(n.inputs)
    out = g.copy()
    out.nodes = list(reversed(keep))
    out.inputs = [v for v in g.inputs if v.name in live]
    out.constants = {k: a for k, a in g.constants.items() if k in live}
    used_funcs = {n.attrs["callee"] for n in out.nodes if n.op == "call"}
    out.functions = {k: f for k, f in g.functions.items() if k in used_funcs or _called_by(g, used_funcs, k)}
    return out


def _called_by(g: Graph, roots: set[str], name: str) -> bool:
    seen, todo = set(), list(roots)
    while todo:
        f = todo.pop()
        if f in seen or f not in g.functions:
            continue
        seen.add(f)
        todo.extend(n.attrs["callee"] for n in g.functions[f].nodes if n.op == "call")
    return name in seen


def reduce_graph(g: Graph, inputs: dict[str, np.ndarray], still_fails: Predicate, max_checks: int = 200) -> tuple[Graph, dict[str, np.ndarray]]:
    checks = 0

    def attempt(cand: Graph, cand_inputs: dict[str, np.ndarray]) -> bool:
        nonlocal checks
        if checks >= max_checks:
            return False
        checks += 1
        try:
            cand.check()
        except Exception:
            return False
        return still_fails(cand, cand_inputs)

    cur, cur_in = prune(g), {k: v for k, v in inputs.items()}
    cur_in = {v.name: cur_in[v.name] for v in cur.inputs}
    changed = True
    while changed and checks < max_checks:
        changed = False
        # 1. a single output, earliest intermediate first (smallest graphs first)
        candidates = [v.name for n in cur.nodes for v in n.outputs]
        if len(cur.outputs) > 1 or candidates[:1] != cur.outputs:
            for name in candidates:
                if [name] == cur.outputs:
                    break
                cand = cur.copy()
                cand.outputs = [name]
                cand = prune(cand)
                if len(cand.nodes) >= len(cur.nodes) and len(cand.outputs) >= len(cur.outputs):
                    continue
                if attempt(cand, {v.name: cur_in[v.name] for v in cand.inputs}):
                    cur, cur_in, changed = cand, {v.name: cur_in[v.name] for v in cand.inputs}, True
                    break
        # 2. cut upstream of each node
        env = reference.run(cur, cur_in, keep_all=True)
        produced = {v.name: v for n in cur.nodes for v in n.outputs}
        for n in list(cur.nodes):
            for i in n.inputs:
                if i not in produced:
                    continue
                cand = cur.copy()
                fresh = cand.fresh_name("r")
                cand.inputs.append(Value(fresh, produced[i].type))
                for m in cand.nodes:
                    if m.name == n.name:
                        m.inputs = [fresh if x == i else x for x in m.inputs]
                cand = prune(cand)
                if len(cand.nodes) >= len(cur.nodes):
                    continue
                cand_in = {v.name: (env[i] if v.name == fresh else cur_in[v.name]) for v in cand.inputs}
                if attempt(cand, cand_in):
                    cur, cur_in, changed = cand, cand_in, True
                    break
            if changed:
                break
    return cur, cur_in
