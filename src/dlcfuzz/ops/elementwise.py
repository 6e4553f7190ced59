"""Elementwise operators: unary, binary (numpy broadcasting), where, cast, clip."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS, NUMERIC, TensorType
from dlcfuzz.ops.base import (
    ANY, Attrs, Domain, OpSpec, broadcast_shapes, expect_attrs, register, require_arity, require_dtype,
    require_same_dtype, sample_broadcast_partner,
)


class UnaryOp(OpSpec):
    family = "elementwise"
    n_inputs = 1

    def __init__(self, name: str, dtypes: Sequence[str], np_fn: Callable[[np.ndarray], np.ndarray],
                 onnx_op: str, relax_fn: str, domain: Domain = ANY, out_dtype: str | None = None) -> None:
        self.name = name
        self.dtypes = tuple(dtypes)
        self.np_fn = np_fn
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.relax_fn = relax_fn
        self.in_domain = domain
        self.out_dtype = out_dtype

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        return [TensorType(self.out_dtype or ins[0].dtype, ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return self.in_domain

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [self.np_fn(xs[0])]

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node(self.onnx_op, ins, outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        fn = relax.op
        for part in self.relax_fn.split("."):
            fn = getattr(fn, part)
        return [fn(ins[0])]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node)
        return [node.input[0]], {}


class BinaryOp(OpSpec):
    family = "elementwise"
    n_inputs = 2

    def __init__(self, name: str, dtypes: Sequence[str], np_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 onnx_op: str, relax_fn: str, rhs_domain: Domain = ANY, out_dtype: str | None = None) -> None:
        self.name = name
        self.dtypes = tuple(dtypes)
        self.np_fn = np_fn
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.relax_fn = relax_fn
        self.rhs_domain = rhs_domain
        self.out_dtype = out_dtype

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        require_same_dtype(self, ins)
        return [TensorType(self.out_dtype or ins[0].dtype, broadcast_shapes(self, ins[0].shape, ins[1].shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first, first.with_shape(sample_broadcast_partner(rng, first.shape))], {}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return self.rhs_domain if index == 1 else ANY

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [self.np_fn(xs[0], xs[1])]

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node(self.onnx_op, ins, outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [getattr(relax.op, self.relax_fn)(ins[0], ins[1])]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node)
        return [node.input[0], node.input[1]], {}


register(UnaryOp("relu", FLOATS + ("int8", "int16", "int32", "int64"), lambda x: np.maximum(x, 0).astype(x.dtype), "Relu", "nn.relu"))
register(BinaryOp("add", NUMERIC, lambda a, b: (a + b).astype(a.dtype), "Add", "add"))
