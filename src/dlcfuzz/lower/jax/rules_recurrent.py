"""JAX lowering rules of the recurrent operators (ops/recurrent.py): the recurrence unrolled over the
static sequence with ONNX's gate equations (ops.recurrent.unrolled), written by the torch rules'
SourceOps in jax.numpy's vocabulary (lax.scan would need equal steps; sequence_lens masks differ per step)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype
from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.torch.rules_recurrent import SourceOps
from dlcfuzz.ops.recurrent import GATES, unrolled

Types = Sequence[TensorType]

JAX_ACTIVATIONS = {
    "Relu": "jnp.maximum({x}, 0)", "Tanh": "jnp.tanh({x})", "Sigmoid": "jax.nn.sigmoid({x})",
    "Softsign": "{x} / (1 + jnp.abs({x}))", "Softplus": "jax.nn.softplus({x})",
    "Affine": "{a} * {x} + {b}", "LeakyRelu": "jnp.where({x} >= 0, {x}, {a} * {x})",
    "ScaledTanh": "{a} * jnp.tanh({b} * {x})", "HardSigmoid": "jnp.clip({a} * {x} + {b}, 0.0, 1.0)",
    "Elu": "jnp.where({x} >= 0, {x}, {a} * jnp.expm1({x}))",
}


def _rule(kind: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        ops = SourceOps(e, "jnp", jnp_dtype(in_types[0].dtype), JAX_ACTIVATIONS, "jnp.clip")
        return unrolled(kind, ops, ins, attrs, in_types[0])

    return rule


for _kind in GATES:
    TARGET.register(_kind)(_rule(_kind))
