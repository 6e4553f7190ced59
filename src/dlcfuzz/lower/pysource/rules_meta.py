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


@shared("shape")
def _shape(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    # read from the tensor, not from our static type: under torch's dynamic=True the dims are symbolic
    dims = f"list({ins[0]}.shape)[{attrs.get('start', 0)}:{attrs.get('end')}]"
    return [f"{e.sp.tensor}({dims}, dtype={e.sp.dtype('int64')})"]


@shared("size")
def _size(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [f"{e.sp.tensor}({e.sp.numel.format(x=ins[0])}, dtype={e.sp.dtype('int64')})"]


@shared("bitcast")
def _bitcast(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    return [e.sp.bitcast.format(x=ins[0], dtype=e.sp.dtype(attrs["to"]))]  # the same width: the bytes reinterpreted
