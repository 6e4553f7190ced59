"""NumPy interpreter of a Graph: the ground truth, and the profiler PIOC needs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dlcfuzz.errors import IRError
from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ops import get_op

_WIDEN = (np.dtype("float16"), np.dtype("float32"))


def _store(y: np.ndarray, dtype: np.dtype, exact: bool) -> np.ndarray:
    if exact and dtype in _WIDEN:
        return np.asarray(y).astype(np.float64, copy=False)
    return np.asarray(y).astype(dtype, copy=False)


def run(
    g: Graph, inputs: Mapping[str, np.ndarray], *, keep_all: bool = False, exact: bool = False,
    _functions: Mapping[str, Graph] | None = None,
) -> dict[str, np.ndarray]:
    """Evaluate `g`. Returns its outputs by name, or every value when keep_all.

    exact=True evaluates float16/float32 values in float64 without rounding after each
    operator (explicit casts still round): comparing it with the normal run tells whether an
    output is ill-conditioned, i.e. whether legal rounding differences can move it past the
    tolerance (then no compiler can be judged on it).
    """
    functions = g.functions if _functions is None else _functions
    env: dict[str, np.ndarray] = {}
    for v in g.inputs:
        if v.name not in inputs:
            raise IRError(f"missing input {v.name!r}")
        a = np.asarray(inputs[v.name])
        if not (exact and a.dtype == np.float64 and v.type.np_dtype in _WIDEN):
            a = a.astype(v.type.np_dtype, copy=False)
        env[v.name] = _store(a.reshape(v.type.shape), v.type.np_dtype, exact)
    env.update({k: _store(a, a.dtype, exact) for k, a in g.constants.items()})
    with np.errstate(all="ignore"):
        for n in g.nodes:
            xs = [env[i] for i in n.inputs]
            if n.op == CALL_OP:
                f = functions[n.attrs["callee"]]
                res = run(f, {p.name: x for p, x in zip(f.inputs, xs)}, exact=exact, _functions=functions)
                ys = [res[o] for o in f.outputs]
            else:
                ys = get_op(n.op).reference(xs, n.attrs)
            for v, y in zip(n.outputs, ys, strict=True):
                # References may compute in a wider type; the IR's declared type is authoritative.
                env[v.name] = _store(y, v.type.np_dtype, exact).reshape(v.type.shape)
    if keep_all:
        return env
    return {o: env[o] for o in g.outputs}


def outputs(g: Graph, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    res = run(g, inputs)
    return [res[o] for o in g.outputs]
