"""The meta operators (ops/meta.py) that every Python target writes alike up to spelling."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types, literal
from dlcfuzz.lower.pysource.rules import shared


@shared("constant_of_shape")
def _constant_of_shape(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                       out_types: Types) -> list[str]:
    value, dtype = literal(attrs["value"]), e.sp.dtype(attrs["dtype"])
    return [f"{e.sp.mod}.full({literal(tuple(attrs['shape']))}, {value}, dtype={dtype})"]


@shared("cast_like")
def _cast_like(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    return [f"{ins[0]}.{e.sp.cast_method}({ins[1]}.dtype)"]  # float -> int truncates, as the reference
