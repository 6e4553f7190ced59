"""JAX lowering rules of the quant_integer operators (ops/quant_integer.py).

The integer products run in int32 (XLA's integer dot and convolution, preferred_element_type int32),
exactly as ONNX accumulates; the requantization multiplies in float64 by the float32 multiplier and
rounds half to even (jnp.round)."""

from __future__ import annotations

from dlcfuzz.lower.jax.codegen import literal
from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.pysource.rules_quant_integer import (
    DYNAMIC_QUANTIZE,
    INTEGER_PRODUCTS,
    DynamicQuantize,
    IntegerProducts,
)

_DIMS = {3: "('NCH', 'OIH', 'NCH')", 4: "('NCHW', 'OIHW', 'NCHW')"}


class _JaxIntegerProducts(IntegerProducts):
    """Products in int32, as ONNX accumulates (XLA's integer dot and convolution)."""

    acc_dtype = "int32"

    def float64_scalar(self, v: float) -> str:
        return f"jnp.float64({literal(v)})"

    def as_float64(self, e: Emitter, acc: str) -> str:
        return e.sp.cast(acc, "float64")

    def conv(self, e: Emitter, x: str, w: str, attrs: dict, rank: int) -> str:
        nd = rank - 2
        pads = list(attrs["pads"])
        padding = literal([(pads[i], pads[nd + i]) for i in range(nd)])
        return e.bind(f"lax.conv_general_dilated({x}, {w}, {literal(tuple(attrs['strides']))}, {padding}, "
                      f"rhs_dilation={literal(tuple(attrs['dilations']))}, dimension_numbers={_DIMS[rank]}, "
                      f"feature_group_count={int(attrs.get('group', 1))}, preferred_element_type=jnp.int32)")

    def matmul(self, x: str, w: str) -> str:
        return f"jnp.matmul({x}, {w}, preferred_element_type=jnp.int32)"

    def as_int32(self, acc: str) -> str:
        return acc

    def plus_bias(self, acc: str, bias: str, rank: int) -> str:
        return f"{acc} + {bias}.reshape({literal((1, -1) + (1,) * (rank - 2))})"


INTEGER_PRODUCTS["jax"] = _JaxIntegerProducts()


DYNAMIC_QUANTIZE["jax"] = DynamicQuantize(
    empty=("jnp.zeros({shape}, dtype=jnp.uint8)", "jnp.float32(1.0)", "jnp.uint8(0)"),
    high="jnp.maximum(jnp.max({x}), jnp.float32(0))", low="jnp.minimum(jnp.min({x}), jnp.float32(0))",
    scale="jnp.where({hi} == {lo}, jnp.float32(1), ({hi} - {lo}) / jnp.float32(255))",
    zero_point="jnp.round(jnp.clip(jnp.float32(0) - {lo} / {scale}, 0, 255))",
    quantized="jnp.clip(jnp.round({x} / {scale}) + {zp}, 0, 255)",
)
