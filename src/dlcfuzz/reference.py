"""NumPy interpreter of a Graph: the ground truth, and the profiler PIOC needs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dlcfuzz.errors import IRError
from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ops import get_op


def run(
    g: Graph, inputs: Mapping[str, np.ndarray], *, keep_all: bool = False,
    _functions: Mapping[str, Graph] | None = None,
) -> dict[str, np.ndarray]:
    """Evaluate `g`. Returns its outputs by name, or every value when keep_all."""
    functions = g.functions if _functions is None else _functions
    env: dict[str, np.ndarray] = {}
    for v in g.inputs:
        if v.name not in inputs:
            raise IRError(f"missing input {v.name!r}")
        env[v.name] = np.asarray(inputs[v.name], dtype=v.type.np_dtype).reshape(v.type.shape)
    env.update(g.constants)
    with np.errstate(all="ignore"):
        for n in g.nodes:
            xs = [env[i] for i in n.inputs]
            if n.op == CALL_OP:
                f = functions[n.attrs["callee"]]
                res = run(f, {p.name: x for p, x in zip(f.inputs, xs)}, _functions=functions)
                ys = [res[o] for o in f.outputs]
            else:
                ys = get_op(n.op).reference(xs, n.attrs)
            for v, y in zip(n.outputs, ys, strict=True):
                # References may compute in a wider type; the IR's declared type is authoritative.
                env[v.name] = np.asarray(y).astype(v.type.np_dtype, copy=False).reshape(v.type.shape)
    if keep_all:
        return env
    return {o: env[o] for o in g.outputs}


def outputs(g: Graph, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    res = run(g, inputs)
    return [res[o] for o in g.outputs]
