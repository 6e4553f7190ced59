"""Graph reduction: shrink a failing test while a predicate still holds.

Moves, repeated to a fixed point:
  - keep a single output (each intermediate value, earliest first, is tried as the only output);
  - cut upstream: replace a node's computed input by a fresh graph input that carries the
    reference value it had, which deletes everything upstream that is no longer needed;
  - remove a region: a conditional becomes one branch (the taken one first), a loop one trip, a
    one-slice scan one step (reduce/regions.py), its body's nodes inlined;
  - slim a region: its outputs nothing reads (a loop's or scan's states and scan outputs, a conditional's
    results) dropped with the body nodes only they needed.
Inputs stay realistic because cut values come from the reference interpreter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlcfuzz import reference
from dlcfuzz.ir.graph import Graph, Value, live_nodes
from dlcfuzz.ops import check_graph
from dlcfuzz.reduce.budget import ReductionBudget
from dlcfuzz.reduce.regions import without_region, without_unused_region_outputs

Predicate = Callable[[Graph, dict[str, np.ndarray]], bool]


def prune(g: Graph) -> Graph:
    """Drop nodes, inputs and constants that no output depends on."""
    nodes, live = live_nodes(g.nodes, g.outputs)
    out = g.light_copy()
    out.nodes = nodes
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


def reduce_graph(g: Graph, inputs: dict[str, np.ndarray], still_fails: Predicate, max_checks: int = 200,
                 budget: ReductionBudget | None = None) -> tuple[Graph, dict[str, np.ndarray]]:
    """The smallest graph (and its inputs) the moves reach while `still_fails` holds, within
    `max_checks` predicate calls, or within `budget` when one is given (it then says why it stopped)."""
    budget = budget or ReductionBudget(float("inf"), max_checks)

    def attempt(cand: Graph, cand_inputs: dict[str, np.ndarray]) -> bool:
        try:
            check_graph(cand)
        except Exception:
            return False
        return budget.take() and still_fails(cand, cand_inputs)

    cur, cur_in = prune(g), {k: v for k, v in inputs.items()}
    cur_in = {v.name: cur_in[v.name] for v in cur.inputs}
    changed = True
    while changed and budget.stopped is None:
        changed = False
        # 1. a single output, earliest intermediate first (smallest graphs first)
        candidates = [v.name for n in cur.nodes for v in n.outputs]
        if len(cur.outputs) > 1 or candidates[:1] != cur.outputs:
            for name in candidates:
                if [name] == cur.outputs:
                    break
                cand = cur.light_copy()
                cand.outputs = [name]
                cand = prune(cand)
                if len(cand.nodes) >= len(cur.nodes) and len(cand.outputs) >= len(cur.outputs):
                    continue
                if attempt(cand, {v.name: cur_in[v.name] for v in cand.inputs}):
                    cur, cur_in, changed = cand, {v.name: cur_in[v.name] for v in cand.inputs}, True
                    break
        # 1b. one output fewer: a bug that needs two outputs' nodes (an optimization that fires on one branch
        # and shows on another) has no single output that keeps it
        if not changed and len(cur.outputs) > 1:
            for name in cur.outputs:
                cand = cur.light_copy()
                cand.outputs = [o for o in cur.outputs if o != name]
                cand = prune(cand)
                if attempt(cand, {v.name: cur_in[v.name] for v in cand.inputs}):
                    cur, cur_in, changed = cand, {v.name: cur_in[v.name] for v in cand.inputs}, True
                    break
        # 1c. a region without the outputs nothing reads: its body then holds only what the finding's
        # output needs (a single output keeps a whole loop whose other states compute values nobody returns)
        if not changed:
            for idx in range(len(cur.nodes)):
                cand = without_unused_region_outputs(cur, idx)
                if cand is None:
                    continue
                cand = prune(cand)
                if attempt(cand, {v.name: cur_in[v.name] for v in cand.inputs}):
                    cur, cur_in, changed = cand, {v.name: cur_in[v.name] for v in cand.inputs}, True
                    break
        # 2. cut upstream of a node; the cuts that delete the most are tried first (building and
        # pruning candidates costs no compile, each attempt does)
        env = reference.run(cur, cur_in, keep_all=True)
        produced = {v.name: v for n in cur.nodes for v in n.outputs}
        cuts = []
        for n in cur.nodes:
            for i in dict.fromkeys(n.inputs):
                if i not in produced:
                    continue
                cand = cur.light_copy()
                fresh = cand.fresh_name("r")
                cand.inputs.append(Value(fresh, produced[i].type))
                for m in cand.nodes:
                    if m.name == n.name:
                        m.inputs = [fresh if x == i else x for x in m.inputs]
                cand = prune(cand)
                if len(cand.nodes) < len(cur.nodes):
                    cuts.append((len(cand.nodes), len(cuts), cand, {fresh: i}))
        # a node whose consumers all read fresh inputs in its place: the cut that removes a node feeding one
        # consumer twice (an LSTM's two states into one Add), where cutting one edge removes nothing
        read = {i for m in cur.nodes for i in m.inputs}
        for n in cur.nodes:
            used = [v for v in n.outputs if v.name in read and v.name not in cur.outputs]
            if len(used) < 2:
                continue  # one edge: the cut above
            cand = cur.light_copy()
            fresh: dict[str, str] = {}
            for v in used:  # each name taken (an input) before the next is drawn
                fresh[v.name] = cand.fresh_name("r")
                cand.inputs.append(Value(fresh[v.name], v.type))
            for m in cand.nodes:
                m.inputs = [fresh.get(x, x) for x in m.inputs]
            cand = prune(cand)
            if len(cand.nodes) < len(cur.nodes):
                cuts.append((len(cand.nodes), len(cuts), cand, {f: v for v, f in fresh.items()}))
        for _, _, cand, sources in sorted(cuts, key=lambda c: c[:2]):
            cand_in = {v.name: (env[sources[v.name]] if v.name in sources else cur_in[v.name]) for v in cand.inputs}
            if attempt(cand, cand_in):
                cur, cur_in, changed = cand, cand_in, True
                break
        # 3. a region replaced by one of its bodies
        if not changed:
            for cand in _without_regions(cur, env):
                cand = prune(cand)
                cand_in = {v.name: cur_in[v.name] for v in cand.inputs}
                if attempt(cand, cand_in):
                    cur, cur_in, changed = cand, cand_in, True
                    break
    return cur, cur_in


def _without_regions(g: Graph, env: dict[str, np.ndarray]) -> list[Graph]:
    """`g` with one region removed, per region and (a conditional) branch, the taken branch first."""
    out = []
    for idx, n in enumerate(g.nodes):
        if n.op == "if":
            taken = "then_branch" if bool(np.asarray(env[n.inputs[0]]).reshape(-1)[0]) else "else_branch"
            branches = [taken, "else_branch" if taken == "then_branch" else "then_branch"]
        elif n.op in ("loop", "scan"):
            branches = [None]
        else:
            continue
        out.extend(c for b in branches if (c := without_region(g, idx, b)) is not None)
    return out


def isolate_node(g: Graph, inputs: dict[str, np.ndarray], node_name: str) -> tuple[Graph, dict[str, np.ndarray]]:
    """The graph of one node alone: its computed inputs become graph inputs carrying the values
    the (valid) rest of the graph gives them. For a disruptive graph, whose broken node has no
    reference semantics, this is the whole reduction; the caller checks the finding still shows."""
    node = next(n for n in g.nodes if n.name == node_name)
    produced = {v.name: v for n in g.nodes for v in n.outputs}
    computed = [i for i in dict.fromkeys(node.inputs) if i in produced]
    values: dict[str, np.ndarray] = {}
    if computed:
        upstream = g.light_copy()
        upstream.outputs = computed
        upstream = prune(upstream)
        values = reference.run(upstream, {v.name: inputs[v.name] for v in upstream.inputs})
    out = g.light_copy()
    out.nodes = [n for n in out.nodes if n.name == node_name]
    out.inputs = [v for v in g.inputs if v.name in node.inputs] + [produced[i] for i in computed]
    out.constants = {k: a for k, a in g.constants.items() if k in node.inputs}
    out.outputs = [v.name for v in node.outputs]
    out.functions = {}
    feed = {v.name: (values[v.name] if v.name in values else inputs[v.name]) for v in out.inputs}
    return out, feed
