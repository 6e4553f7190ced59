"""The type check of a whole graph: each node typed with its operator's rule (above `ir`, which
holds graphs without knowing any operator)."""

from __future__ import annotations

import numpy as np

from dlcfuzz.errors import IRError, TypeRuleError
from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops.base import registry
from dlcfuzz.ops.regions import REGION_OPS


def check_graph(g: Graph) -> None:
    """Raise IRError (or a ShapeError/DTypeError) naming the offending node of `g` or of one of its
    sub-functions: each value defined once before use, each node's declared output types the ones
    its operator's rule infers, each call matching its callee's parameters, no recursion; each region
    body checked the same way (its parameters are its only scope: bodies are closed)."""
    for fname, f in g.functions.items():
        if f.functions:
            raise IRError("sub-functions must be declared at the top level", fname)
        _check_body(f, g.functions)
    _check_no_recursion(g)
    _check_body(g, g.functions)


def _check_body(g: Graph, functions: dict[str, Graph]) -> None:
    specs = registry()
    env: dict[str, TensorType] = {}
    for v in g.inputs:
        _define(env, v.name, v.type, "input")
    for k, a in g.constants.items():
        if not isinstance(a, np.ndarray):
            raise IRError("constant data must be a numpy array", k)
        _define(env, k, TensorType.of(a), "constant")
    names: set[str] = set()
    for idx, n in enumerate(g.nodes):
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
            spec = specs.get(n.op) or REGION_OPS.get(n.op)
            if spec is None:
                raise IRError(f"unknown operator {n.op!r}", label)
            for attr in getattr(spec, "body_attrs", ()):
                body = n.attrs.get(attr)
                if not isinstance(body, Graph):
                    raise IRError(f"region attribute {attr!r} must be a graph", label)
                if body.functions:
                    raise IRError("a region body declares no functions", f"{label}.{attr}")
                try:
                    _check_body(body, functions)
                except IRError as e:
                    raise type(e)(f"in its {attr}: {e}", label) from None
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
    if not g.outputs:
        raise IRError("graph has no outputs", g.name)
    for o in g.outputs:
        if o not in env:
            raise IRError(f"output {o!r} is not defined", g.name)


def _define(env: dict[str, TensorType], name: str, t: TensorType, where: str) -> None:
    if name in env:
        raise IRError(f"value {name!r} is defined twice", where)
    env[name] = t


def _check_no_recursion(g: Graph) -> None:
    calls = {
        fname: {n.attrs["callee"] for n in f.all_nodes() if n.op == CALL_OP}
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
