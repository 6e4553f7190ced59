"""JAX lowering rules of the meta operators (ops/meta.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype
from dlcfuzz.lower.pysource.codegen import Emitter, Types

R = TARGET.register


@R("shape")
def _shape(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    return [f"jnp.asarray({ins[0]}.shape[{attrs.get('start', 0)}:{attrs.get('end')}], dtype=jnp.int64)"]


@R("size")
def _size(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [f"jnp.asarray({ins[0]}.size, dtype=jnp.int64)"]


@R("bitcast")
def _bitcast(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    return [f"lax.bitcast_convert_type({ins[0]}, {jnp_dtype(attrs['to'])})"]
