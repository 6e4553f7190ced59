"""The framework-neutral program: values, nodes, graphs with named sub-functions and regions.

A region is a node whose attributes hold graphs (its bodies: a conditional's two branches, a loop's or
a scan's body). A body is closed: everything it reads from the enclosing scope is a trailing input of
the node, bound to the body's trailing parameters (its captures), so a node's inputs are all it reads
and every analysis of the enclosing graph (consumers, liveness, reduction) stays what it was. Which
leading inputs and parameters a region has is its operator's (`ops/regions.py`); the IR only knows
that a graph-valued attribute is a body, to print, copy, serialize and walk it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.ir.types import TensorType

CALL_OP = "call"
Attrs = dict[str, Any]


@dataclass(frozen=True)
class Value:
    name: str
    type: TensorType


@dataclass
class Node:
    op: str
    inputs: list[str]
    outputs: list[Value]
    attrs: Attrs = field(default_factory=dict)
    name: str = ""

    @property
    def output_names(self) -> list[str]:
        return [v.name for v in self.outputs]

    def bodies(self) -> dict[str, Graph]:
        """The region bodies among the attributes (attribute name -> graph), in attribute order."""
        return {k: a for k, a in self.attrs.items() if isinstance(a, Graph)}


@dataclass
class Graph:
    """A function: typed inputs, constants, nodes in topological order, outputs.

    Sub-functions live in the top-level graph's `functions` map; a node with
    op "call" and attrs {"callee": NAME} calls one of them.
    """

    inputs: list[Value] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    functions: dict[str, Graph] = field(default_factory=dict)
    name: str = "main"

    # ---- queries -------------------------------------------------------
    def types(self) -> dict[str, TensorType]:
        env = {v.name: v.type for v in self.inputs}
        env.update({k: TensorType.of(a) for k, a in self.constants.items()})
        for n in self.nodes:  # a loop, not a dict per node: asked per step of a mutation chain, per test, per check
            for v in n.outputs:
                env[v.name] = v.type
        return env

    def output_types(self) -> list[TensorType]:
        env = self.types()
        return [env[o] for o in self.outputs]

    def producers(self) -> dict[str, Node]:
        return {v.name: n for n in self.nodes for v in n.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        use: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                use.setdefault(i, []).append(n)
        return use

    def all_nodes(self) -> list[Node]:
        """Nodes of this graph, of every region body in it and of every sub-function."""
        out: list[Node] = []
        for n in self.nodes:
            out.append(n)
            for body in n.bodies().values():
                out.extend(body.all_nodes())
        for f in self.functions.values():
            out.extend(f.all_nodes())
        return out

    def call_order(self) -> list[str]:
        """The sub-functions, each after the ones it calls (how a target must define them)."""
        order: list[str] = []

        def visit(f: str) -> None:
            if f in order:
                return
            for n in self.functions[f].all_nodes():
                if n.op == CALL_OP:
                    visit(n.attrs["callee"])
            order.append(f)

        for f in self.functions:
            visit(f)
        return order

    def ops_used(self) -> set[str]:
        return {n.op for n in self.all_nodes()}

    def fresh_name(self, prefix: str = "v") -> str:
        taken = set(self.types())
        i = len(taken)
        while f"{prefix}{i}" in taken:
            i += 1
        return f"{prefix}{i}"

    def copy(self) -> Graph:
        """A deep copy built from the structure: new nodes, lists, attributes and constant arrays; values and
        types are immutable and shared. (copy.deepcopy walked every frozen Value and TensorType: a quarter of
        an ONNXRuntime oatest campaign's process time went to it.)"""
        return Graph(
            inputs=list(self.inputs), constants={k: a.copy() for k, a in self.constants.items()},
            nodes=[Node(n.op, list(n.inputs), list(n.outputs), _copy_attrs(n.attrs, Graph.copy), n.name)
                   for n in self.nodes],
            outputs=list(self.outputs), functions={k: f.copy() for k, f in self.functions.items()}, name=self.name,
        )

    def light_copy(self) -> Graph:
        """A copy whose structure (nodes, inputs, outputs, functions) is new but whose constant
        arrays are shared: they are never written in place, and full-size models carry tens of
        MB of them (resnet18: 44 MB) that mutation and reduction would otherwise copy per step."""
        return Graph(
            inputs=list(self.inputs), constants=dict(self.constants),
            nodes=[Node(n.op, list(n.inputs), list(n.outputs), _copy_attrs(n.attrs, Graph.light_copy), n.name)
                   for n in self.nodes],
            outputs=list(self.outputs), functions={k: f.light_copy() for k, f in self.functions.items()},
            name=self.name,
        )


_IMMUTABLE = (int, float, str, bool, type(None))
_SCALARS = frozenset(_IMMUTABLE)  # exact types: what a flat list may hold to be copied as a new list of its items


def _copy_attrs(attrs: Attrs, copy_body: Callable[[Graph], Graph]) -> Attrs:
    """A deep copy of a node's attributes, its region bodies copied by `copy_body` (Graph.copy or light_copy). A flat
    list of immutable scalars (axes, pads, shapes: most list attributes) becomes a new list of the same items, which
    is what copy.deepcopy makes of it at a fraction of the cost: a metamorphic chain copies its growing mutant at
    every step, and deepcopy was most of that."""
    out = {}
    for k, a in attrs.items():
        if isinstance(a, _IMMUTABLE):
            out[k] = a
        elif type(a) is list and set(map(type, a)) <= _SCALARS:
            out[k] = list(a)
        elif isinstance(a, Graph):
            out[k] = copy_body(a)
        else:
            out[k] = copy.deepcopy(a)
    return out


def live_nodes(nodes: list[Node], outputs: list[str]) -> tuple[list[Node], set[str]]:
    """The nodes that `outputs` depend on, in their order, and the names of every value they read (with `outputs`):
    dead-code removal of a graph (reduce.graph.prune) and of a region's body (reduce.regions) alike."""
    live = set(outputs)
    keep = []
    for n in reversed(nodes):
        if any(v.name in live for v in n.outputs):
            keep.append(n)
            live.update(n.inputs)
    return list(reversed(keep)), live
