"""The framework-neutral program: values, nodes, graphs with named sub-functions."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.errors import IRError, TypeRuleError
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
        for n in self.nodes:
            env.update({v.name: v.type for v in n.outputs})
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
        """Nodes of this graph and of every sub-function."""
        out = list(self.nodes)
        for f in self.functions.values():
            out.extend(f.all_nodes())
        return out

    def call_order(self) -> list[str]:
        """The sub-functions, each after the ones it calls (how a target must define them)."""
        order: list[str] = []

        def visit(f: str) -> None:
            if f in order:
                return
            for n in self.functions[f].nodes:
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
        return copy.deepcopy(self)

    def light_copy(self) -> Graph:
        """A copy whose structure (nodes, inputs, outputs, functions) is new but whose constant
        arrays are shared: they are never written in place, and full-size models carry tens of
        MB of them (resnet18: 44 MB) that mutation and reduction would otherwise copy per step."""
        return Graph(
            inputs=list(self.inputs), constants=dict(self.constants),
            nodes=[Node(n.op, list(n.inputs), list(n.outputs), copy.deepcopy(n.attrs), n.name) for n in self.nodes],
            outputs=list(self.outputs), functions={k: f.light_copy() for k, f in self.functions.items()},
            name=self.name,
        )

    # ---- validation ----------------------------------------------------
    def check(self, _functions: dict[str, Graph] | None = None) -> None:
        """Raise IRError (or a ShapeError/DTypeError) naming the offending node."""
        from dlcfuzz.ops import get_op  # ops depend on ir, not the reverse at import time

        functions = self.functions if _functions is None else _functions
        if _functions is None:
            for fname, f in self.functions.items():
                if f.functions:
                    raise IRError("sub-functions must be declared at the top level", fname)
                f.check(functions)
            _check_no_recursion(self)
        env: dict[str, TensorType] = {}
        for v in self.inputs:
            _define(env, v.name, v.type, "input")
        for k, a in self.constants.items():
            if not isinstance(a, np.ndarray):
                raise IRError("constant data must be a numpy array", k)
            _define(env, k, TensorType.of(a), "constant")
        names: set[str] = set()
        for idx, n in enumerate(self.nodes):
            label = n.name or f"node#{idx}({n.op})"
            if n.name:
                if n.name in names:
                    raise IRError("duplicate node name", label)
                names.add(n.name)
            for i in n.inputs:
                if i not in env:
                    raise IRError(f"input {i!r} is not defined before use", label)
            in_types = [env[i] for i in n.inputs]
            if n.op == CALL_OP:
                callee = n.attrs.get("callee")
                if callee not in functions:
                    raise IRError(f"call to unknown function {callee!r}", label)
                f = functions[callee]
                expected_in = [v.type for v in f.inputs]
                if in_types != expected_in:
                    raise IRError(
                        f"call arguments {list(map(str, in_types))} do not match "
                        f"{callee}'s parameters {list(map(str, expected_in))}",
                        label,
                    )
                inferred = f.output_types()
            else:
                try:
                    spec = get_op(n.op)
                except KeyError:
                    raise IRError(f"unknown operator {n.op!r}", label) from None
                try:
                    inferred = spec.infer(in_types, n.attrs)
                except TypeRuleError as e:
                    raise type(e)(str(e), label) from None
            declared = [v.type for v in n.outputs]
            if declared != list(inferred):
                raise IRError(
                    f"declared output types {list(map(str, declared))} differ from "
                    f"inferred {list(map(str, inferred))}",
                    label,
                )
            for v in n.outputs:
                _define(env, v.name, v.type, label)
        if not self.outputs:
            raise IRError("graph has no outputs", self.name)
        for o in self.outputs:
            if o not in env:
                raise IRError(f"output {o!r} is not defined", self.name)


def _define(env: dict[str, TensorType], name: str, t: TensorType, where: str) -> None:
    if name in env:
        raise IRError(f"value {name!r} is defined twice", where)
    env[name] = t


def _check_no_recursion(g: Graph) -> None:
    calls = {
        fname: {n.attrs["callee"] for n in f.nodes if n.op == CALL_OP}
        for fname, f in g.functions.items()
    }
    state: dict[str, int] = {}

    def visit(f: str) -> None:
        if state.get(f) == 1:
            raise IRError("recursive function calls are not supported", f)
        if state.get(f) == 2:
            return
        state[f] = 1
        for c in calls.get(f, ()):
            visit(c)
        state[f] = 2

    for f in calls:
        visit(f)
