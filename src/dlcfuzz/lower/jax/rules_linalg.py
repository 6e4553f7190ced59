"""JAX lowering rules of the linalg operators (ops/linalg.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types

R = TARGET.register


@R("einsum")
def einsum(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    # HIGHEST: float32 products on TPU/GPU stay float32 (the default may round operands to bfloat16)
    return [f"jnp.einsum({literal(attrs['equation'].replace(' ', ''))}, {', '.join(ins)}, "
            f"precision=lax.Precision.HIGHEST)"]


@R("det")
def det(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    return [f"jnp.linalg.det({ins[0]})"]
