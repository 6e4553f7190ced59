"""Relax lowering rules of the recurrent operators (ops/recurrent.py): the recurrence unrolled over the
static sequence with ONNX's gate equations (ops.recurrent.unrolled), in Relax operators. Relax has no
recurrent operator of its own (its ONNX frontend unrolls these too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import type_of
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.recurrent import RecurrentOp, unrolled

RELAX = target("relax")


@dataclass
class RelaxOps:
    """ops.recurrent.ArrayOps as Relax expressions (each emitted into the block builder)."""

    bb: Any
    dtype: str

    def _c(self, v: float) -> Any:
        from tvm import relax

        return relax.const(np.array(v, dtype=self.dtype), self.dtype)

    def _emit(self, e: Any) -> Any:
        return self.bb.emit(e)

    def _rank(self, x: Any) -> int:
        return len(type_of(x).shape)

    def index(self, x: Any, i: int) -> Any:
        from tvm import relax

        return self._emit(relax.op.take(x, relax.const(i, "int64"), axis=0))

    def axis1(self, x: Any, i: int) -> Any:
        from tvm import relax

        return self._emit(relax.op.take(x, relax.const(i, "int64"), axis=1))

    def cols(self, x: Any, lo: int, hi: int) -> Any:
        from tvm import relax

        return self._emit(relax.op.strided_slice(x, [self._rank(x) - 1], [lo], [hi], [1]))

    def swap01(self, x: Any) -> Any:
        from tvm import relax

        r = self._rank(x)
        return self._emit(relax.op.permute_dims(x, [1, 0] + list(range(2, r))))

    def matmul_bt(self, a: Any, b: Any) -> Any:
        from tvm import relax

        return self._emit(relax.op.matmul(a, self._emit(relax.op.permute_dims(b, [1, 0]))))

    def add(self, a: Any, b: Any) -> Any:
        from tvm import relax

        return self._emit(relax.op.add(a, b))

    def mul(self, a: Any, b: Any) -> Any:
        from tvm import relax

        return self._emit(relax.op.multiply(a, b))

    def one_minus(self, a: Any) -> Any:
        from tvm import relax

        return self._emit(relax.op.subtract(self._c(1.0), a))

    def clip(self, x: Any, c: float) -> Any:
        from tvm import relax

        return self._emit(relax.op.clip(x, -float(c), float(c)))

    def act(self, name: str, x: Any, alpha: float, beta: float) -> Any:
        from tvm import relax

        op = relax.op
        if name == "Relu":
            return self._emit(op.nn.relu(x))
        if name == "Tanh":
            return self._emit(op.tanh(x))
        if name == "Sigmoid":
            return self._emit(op.sigmoid(x))
        if name == "Softsign":
            return self._emit(op.divide(x, self._emit(op.add(self._c(1.0), self._emit(op.abs(x))))))
        if name == "Softplus":  # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))
            tail = self._emit(op.log(self._emit(op.add(self._c(1.0), self._emit(op.exp(self._emit(op.negative(self._emit(op.abs(x))))))))))
            return self._emit(op.add(self._emit(op.nn.relu(x)), tail))
        if name == "Affine":
            return self._emit(op.add(self._emit(op.multiply(self._c(alpha), x)), self._c(beta)))
        if name == "LeakyRelu":
            return self._emit(op.where(self._emit(op.greater_equal(x, self._c(0.0))), x,
                                       self._emit(op.multiply(self._c(alpha), x))))
        if name == "ScaledTanh":
            return self._emit(op.multiply(self._c(alpha), self._emit(op.tanh(self._emit(op.multiply(self._c(beta), x))))))
        if name == "HardSigmoid":
            return self._emit(op.clip(self._emit(op.add(self._emit(op.multiply(self._c(alpha), x)), self._c(beta))), 0.0, 1.0))
        if name == "Elu":
            em1 = self._emit(op.subtract(self._emit(op.exp(x)), self._c(1.0)))
            return self._emit(op.where(self._emit(op.greater_equal(x, self._c(0.0))), x,
                                       self._emit(op.multiply(self._c(alpha), em1))))
        raise ValueError(f"unknown recurrent activation {name!r}")

    def zeros(self, shape: tuple[int, ...]) -> Any:
        from tvm import relax

        return relax.const(np.zeros(shape, dtype=self.dtype), self.dtype)

    def where(self, mask: np.ndarray, a: Any, b: Any | None) -> Any:
        from tvm import relax

        m = relax.const(np.asarray(mask, dtype=bool), "bool")
        return self._emit(relax.op.where(m, a, b if b is not None else self._c(0.0)))

    def stack(self, xs: list[Any], axis: int) -> Any:
        from tvm import relax

        return self._emit(relax.op.stack(xs, axis=axis))


@RELAX.register("rnn", "gru", "lstm")
def recurrent(spec: RecurrentOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    return unrolled(spec.kind, RelaxOps(bb, in_types[0].dtype), ins, attrs, in_types[0])
