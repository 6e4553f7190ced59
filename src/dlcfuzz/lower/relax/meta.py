"""Relax lowering rules of the meta operators (ops/meta.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const
from dlcfuzz.ops.base import Attrs

RELAX = target("relax")


@RELAX.register("shape", "size")
def shape_or_size(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                  out_types: Any) -> list[Any]:
    from tvm import relax

    # static shapes: the value is known here, as TVM's own ONNX frontend makes Shape of a static tensor a constant
    (y,) = spec.reference([np.broadcast_to(np.zeros((), in_types[0].dtype), in_types[0].shape)], attrs)
    return [relax.const(y, "int64")]


@RELAX.register("constant_of_shape")
def constant_of_shape(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                      out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.full(tuple(attrs["shape"]), relax_dtype_const(attrs["value"], attrs["dtype"]), attrs["dtype"])]


@RELAX.register("cast_like")
def cast_like(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.astype(ins[0], in_types[1].dtype)]


RELAX.gap("bitcast", "Relax (apache-tvm 0.27) has no operator that reinterprets a tensor's bits as another dtype")
