"""The recurrent operators (ops/recurrent.py), one rule for every Python target.

The recurrence is unrolled over the static sequence with ONNX's gate equations (ops.recurrent.unrolled),
not torch.nn.RNN/GRU/LSTM: torch's GRU computes the candidate as r * (W_hn h + b_hn) always (ONNX's
linear_before_reset=1), has no peepholes, clip, input_forget or activation choice, and orders gates
differently; lax.scan would need equal steps (sequence_lens masks differ per step). `SourceOps` writes
the array operations as source text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Rule, Types, literal
from dlcfuzz.lower.pysource.rules import shared
from dlcfuzz.ops.recurrent import GATES, unrolled

# ONNX's activation functions of the gates, in each target's words (alpha a, beta b)
ACTIVATIONS = {
    "torch": {
        "Relu": "torch.relu({x})", "Tanh": "torch.tanh({x})", "Sigmoid": "torch.sigmoid({x})",
        "Softsign": "{x} / (1 + torch.abs({x}))", "Softplus": "F.softplus({x})",
        "Affine": "{a} * {x} + {b}", "LeakyRelu": "F.leaky_relu({x}, {a})",
        "ScaledTanh": "{a} * torch.tanh({b} * {x})", "HardSigmoid": "torch.clamp({a} * {x} + {b}, 0.0, 1.0)",
        "Elu": "F.elu({x}, {a})",
    },
    "jax": {
        "Relu": "jnp.maximum({x}, 0)", "Tanh": "jnp.tanh({x})", "Sigmoid": "jax.nn.sigmoid({x})",
        "Softsign": "{x} / (1 + jnp.abs({x}))", "Softplus": "jax.nn.softplus({x})",
        "Affine": "{a} * {x} + {b}", "LeakyRelu": "jnp.where({x} >= 0, {x}, {a} * {x})",
        "ScaledTanh": "{a} * jnp.tanh({b} * {x})", "HardSigmoid": "jnp.clip({a} * {x} + {b}, 0.0, 1.0)",
        "Elu": "jnp.where({x} >= 0, {x}, {a} * jnp.expm1({x}))",
    },
}


@dataclass
class SourceOps:
    """ops.recurrent.ArrayOps as source text of a Python target (its spelling: the emitter's)."""

    e: Emitter
    dtype: str  # the computation's dtype (ours)

    def index(self, x: str, i: int) -> str:
        return self.e.bind(f"{x}[{i}]")

    def axis1(self, x: str, i: int) -> str:
        return self.e.bind(f"{x}[:, {i}]")

    def cols(self, x: str, lo: int, hi: int) -> str:
        return self.e.bind(f"{x}[..., {lo}:{hi}]")

    def swap01(self, x: str) -> str:
        return self.e.bind(f"{x}.swapaxes(0, 1)")

    def matmul_bt(self, a: str, b: str) -> str:
        return self.e.bind(f"{self.e.sp.mod}.matmul({a}, {b}.swapaxes(0, 1))")

    def add(self, a: str, b: str) -> str:
        return self.e.bind(f"{a} + {b}")

    def mul(self, a: str, b: str) -> str:
        return self.e.bind(f"{a} * {b}")

    def one_minus(self, a: str) -> str:
        return self.e.bind(f"1 - {a}")

    def clip(self, x: str, c: float) -> str:
        return self.e.bind(f"{self.e.sp.fn('clip')}({x}, {literal(-float(c))}, {literal(float(c))})")

    def act(self, name: str, x: str, alpha: float, beta: float) -> str:
        return self.e.bind(ACTIVATIONS[self.e.sp.target][name].format(x=x, a=literal(float(alpha)), b=literal(float(beta))))

    def zeros(self, shape: tuple[int, ...]) -> str:
        return self.e.bind(f"{self.e.sp.mod}.zeros({literal(tuple(shape))}, dtype={self.e.sp.dtype(self.dtype)})")

    def where(self, mask: np.ndarray, a: str, b: str | None) -> str:
        m = self.e.const(np.asarray(mask, dtype=bool), hint="live")
        return self.e.bind(f"{self.e.sp.mod}.where({m}, {a}, {b if b is not None else '0.0'})")

    def stack(self, xs: list[str], axis: int) -> str:
        return self.e.bind(f"{self.e.sp.mod}.stack([{', '.join(xs)}], {axis})")


def _rule(kind: str) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        return unrolled(kind, SourceOps(e, in_types[0].dtype), ins, attrs, in_types[0])

    return rule


for _kind in GATES:
    shared(_kind)(_rule(_kind))
