"""PyTorch lowering rules of the recurrent operators (ops/recurrent.py).

The recurrence is unrolled over the static sequence with ONNX's gate equations (ops.recurrent.unrolled),
not torch.nn.RNN/GRU/LSTM: torch's GRU computes the candidate as r * (W_hn h + b_hn) always (ONNX's
linear_before_reset=1), has no peepholes, clip, input_forget or activation choice, and orders gates
differently. `SourceOps` writes the array operations as source text; the JAX rules use it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype
from dlcfuzz.ops.recurrent import GATES, unrolled

Types = Sequence[TensorType]

TORCH_ACTIVATIONS = {
    "Relu": "torch.relu({x})", "Tanh": "torch.tanh({x})", "Sigmoid": "torch.sigmoid({x})",
    "Softsign": "{x} / (1 + torch.abs({x}))", "Softplus": "F.softplus({x})",
    "Affine": "{a} * {x} + {b}", "LeakyRelu": "F.leaky_relu({x}, {a})",
    "ScaledTanh": "{a} * torch.tanh({b} * {x})", "HardSigmoid": "torch.clamp({a} * {x} + {b}, 0.0, 1.0)",
    "Elu": "F.elu({x}, {a})",
}


@dataclass
class SourceOps:
    """ops.recurrent.ArrayOps as source text of a torch-like array module (torch, jax.numpy)."""

    e: Any  # Emitter or Emitter: bind() and const()
    mod: str  # "torch" or "jnp"
    dtype: str  # the module's dtype expression, e.g. "torch.float32"
    activations: dict[str, str]
    clip_fn: str  # "torch.clamp" or "jnp.clip"

    def index(self, x: str, i: int) -> str:
        return self.e.bind(f"{x}[{i}]")

    def axis1(self, x: str, i: int) -> str:
        return self.e.bind(f"{x}[:, {i}]")

    def cols(self, x: str, lo: int, hi: int) -> str:
        return self.e.bind(f"{x}[..., {lo}:{hi}]")

    def swap01(self, x: str) -> str:
        return self.e.bind(f"{x}.swapaxes(0, 1)")

    def matmul_bt(self, a: str, b: str) -> str:
        return self.e.bind(f"{self.mod}.matmul({a}, {b}.swapaxes(0, 1))")

    def add(self, a: str, b: str) -> str:
        return self.e.bind(f"{a} + {b}")

    def mul(self, a: str, b: str) -> str:
        return self.e.bind(f"{a} * {b}")

    def one_minus(self, a: str) -> str:
        return self.e.bind(f"1 - {a}")

    def clip(self, x: str, c: float) -> str:
        return self.e.bind(f"{self.clip_fn}({x}, {literal(-float(c))}, {literal(float(c))})")

    def act(self, name: str, x: str, alpha: float, beta: float) -> str:
        return self.e.bind(self.activations[name].format(x=x, a=literal(float(alpha)), b=literal(float(beta))))

    def zeros(self, shape: tuple[int, ...]) -> str:
        return self.e.bind(f"{self.mod}.zeros({literal(tuple(shape))}, dtype={self.dtype})")

    def where(self, mask: np.ndarray, a: str, b: str | None) -> str:
        m = self.e.const(np.asarray(mask, dtype=bool), hint="live")
        return self.e.bind(f"{self.mod}.where({m}, {a}, {b if b is not None else '0.0'})")

    def stack(self, xs: list[str], axis: int) -> str:
        return self.e.bind(f"{self.mod}.stack([{', '.join(xs)}], {axis})")


def _rule(kind: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        ops = SourceOps(e, "torch", torch_dtype(in_types[0].dtype), TORCH_ACTIVATIONS, "torch.clamp")
        return unrolled(kind, ops, ins, attrs, in_types[0])

    return rule


for _kind in GATES:
    TARGET.register(_kind)(_rule(_kind))
