"""PyTorch lowering rules of the quant_integer operators (ops/quant_integer.py).

torch has no integer convolution or matmul kernels on CPU ("not implemented for 'Int'") and its
quantized tensors are a separate backend Inductor does not lower, so the integer products are
computed in float64: every product and partial sum is an integer far below 2**53, hence exact.
The requantization multiplies by the float32 multiplier and rounds half to even (torch.round).
"""

from __future__ import annotations

from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.pysource.rules_quant_integer import (
    DYNAMIC_QUANTIZE,
    INTEGER_PRODUCTS,
    DynamicQuantize,
    IntegerProducts,
)
from dlcfuzz.lower.torch.codegen import literal


class _TorchIntegerProducts(IntegerProducts):
    """Products in float64 (exact: every partial sum is an integer far below 2**53)."""

    acc_dtype = "float64"

    def float64_scalar(self, v: float) -> str:
        return literal(v)

    def as_float64(self, e: Emitter, acc: str) -> str:
        return acc

    def conv(self, e: Emitter, x: str, w: str, attrs: dict, rank: int) -> str:
        nd = rank - 2
        pads = list(attrs["pads"])
        if pads[:nd] != pads[nd:]:
            flat: list[int] = []
            for i in reversed(range(nd)):  # F.pad lists the last dim first
                flat += [pads[i], pads[nd + i]]
            x = e.bind(f"F.pad({x}, {literal(flat)})")  # zero: x is already shifted by its zero point
            pads = [0] * (2 * nd)
        fn = "F.conv1d" if nd == 1 else "F.conv2d"
        return e.bind(f"{fn}({x}, {w}, None, stride={literal(list(attrs['strides']))}, padding={literal(pads[:nd])}, "
                      f"dilation={literal(list(attrs['dilations']))}, groups={int(attrs.get('group', 1))})")

    def matmul(self, x: str, w: str) -> str:
        return f"torch.matmul({x}, {w})"

    def as_int32(self, acc: str) -> str:
        return f"{acc}.to(torch.int32)"

    def plus_bias(self, acc: str, bias: str, rank: int) -> str:
        return f"{acc} + {bias}.to(torch.float64).reshape({literal((1, -1) + (1,) * (rank - 2))})"


INTEGER_PRODUCTS["torch"] = _TorchIntegerProducts()


DYNAMIC_QUANTIZE["torch"] = DynamicQuantize(
    empty=("torch.zeros({shape}, dtype=torch.uint8)", "torch.tensor(1.0, dtype=torch.float32)",
           "torch.tensor(0, dtype=torch.uint8)"),
    high="torch.clamp(torch.amax({x}), min=0.0)", low="torch.clamp(torch.amin({x}), max=0.0)",
    scale="torch.where({hi} == {lo}, torch.ones_like({hi}), ({hi} - {lo}) / 255.0)",
    zero_point="torch.round(torch.clamp(0.0 - {lo} / {scale}, 0.0, 255.0))",
    quantized="torch.clamp(torch.round({x} / {scale}) + {zp}, 0.0, 255.0)",
)
