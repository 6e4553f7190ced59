"""JAX lowering rules of the ordering operators (ops/ordering.py).

EyeLike is jnp.eye. The other ordering operators are shared (pysource/rules_ordering.py), TopK's
stable argsort sliced with lax (lax.top_k works on the last axis only and does not promise ONNX's
tie order)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype
from dlcfuzz.lower.pysource.codegen import Emitter, Types

R = TARGET.register


@R("eye_like")
def eye_like(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    rows, cols = in_types[0].shape
    return [f"jnp.eye({rows}, {cols}, k={int(attrs.get('k', 0))}, dtype={jnp_dtype(out_types[0].dtype)})"]
