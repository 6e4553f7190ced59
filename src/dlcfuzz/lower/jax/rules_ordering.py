"""JAX lowering rules of the ordering operators (ops/ordering.py).

TopK is a stable argsort and a slice: lax.top_k works on the last axis only and does not promise
ONNX's tie order (the lower index first). The scans are shared (pysource/rules_ordering.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types

R = TARGET.register


@R("trilu")
def trilu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    fn = "jnp.triu" if attrs.get("upper", 1) else "jnp.tril"
    return [f"{fn}({ins[0]}, k={int(attrs.get('k', 0))})"]


@R("hardmax")
def hardmax(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    t = in_types[0]
    d = int(attrs.get("axis", -1)) % t.rank
    n = t.shape[d]
    if n == 0 or t.size == 0:
        return [ins[0]]
    best = e.bind(f"jnp.argmax({ins[0]}, axis={d})")
    return [f"jax.nn.one_hot({best}, {n}, axis={d}, dtype={jnp_dtype(t.dtype)})"]


@R("topk")
def topk(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    t = in_types[0]
    d = int(attrs.get("axis", -1)) % t.rank
    k = int(attrs["k"])
    keys = ins[0] if t.dtype.startswith("float") else f"{ins[0]}.astype(jnp.int64)"
    if attrs.get("largest", 1):
        keys = f"-{keys}"
    order = e.bind(f"lax.slice_in_dim(jnp.argsort({keys}, axis={d}, stable=True), 0, {k}, axis={d})"
                   f".astype(jnp.int64)")
    return [f"jnp.take_along_axis({ins[0]}, {order}, axis={d})", order]


@R("eye_like")
def eye_like(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    rows, cols = in_types[0].shape
    return [f"jnp.eye({rows}, {cols}, k={int(attrs.get('k', 0))}, dtype={jnp_dtype(out_types[0].dtype)})"]


@R("range")
def range_(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    import numpy as np

    dt = out_types[0].dtype
    start, limit, delta = (np.asarray(attrs[k]).astype(dt).item() for k in ("start", "limit", "delta"))
    return [f"jnp.arange({literal(start)}, {literal(limit)}, {literal(delta)}, dtype={jnp_dtype(dt)})"]
