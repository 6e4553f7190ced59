"""A small graph builder for the model zoo: typed nodes, named parameters, He-style initial weights.

Weights are drawn from one seeded generator in construction order, so `build(name, seed)` is
reproducible bit for bit. Initialization keeps activations near unit scale through the whole
network (no training, no download):
  - convolution weights: He normal, std = sqrt(2 / fan_in), fan_in = in_channels/group * kh * kw,
    which preserves the second moment through conv + ReLU;
  - batch norm: scale near 1, shift and running mean near 0, running variance near 1, so it is
    close to the identity (a normalization with real, non-trivial parameters);
  - the last batch norm of a residual branch gets a smaller scale (`residual_gain`) so that the
    residual sums grow slowly with depth;
  - classifier: std = sqrt(1 / fan_in) (no ReLU after it), bias near 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import get_op

BN_EPSILON = float(np.float32(1e-5))  # exact in the float32 ONNX attribute


class Builder:
    """Appends typed nodes to a Graph; every node's value and node name are the same string."""

    def __init__(self, name: str, seed: int, dtype: str = "float32") -> None:
        self.g = Graph(name=name)
        self.rng = np.random.default_rng(seed)
        self.dtype = dtype
        self._types: dict[str, TensorType] = {}

    # ---- plumbing ------------------------------------------------------------------
    def _fresh(self, name: str) -> str:
        if name in self._types:
            raise ValueError(f"zoo builder: name {name!r} used twice")
        return name

    def type_of(self, v: str) -> TensorType:
        return self._types[v]

    def input(self, name: str, shape: Sequence[int]) -> str:
        t = TensorType(self.dtype, tuple(shape))
        self.g.inputs.append(Value(self._fresh(name), t))
        self._types[name] = t
        return name

    def param(self, name: str, array: np.ndarray, dtype: str | None = None) -> str:
        """A constant in the builder's dtype, or in `dtype` (an integer weight of a quantized pattern)."""
        a = np.ascontiguousarray(array, dtype=dtype or self.dtype)
        self.g.constants[self._fresh(name)] = a
        self._types[name] = TensorType.of(a)
        return name

    def op(self, op: str, inputs: Sequence[str], name: str, **attrs: Any) -> str:
        (t,) = get_op(op).infer([self._types[i] for i in inputs], attrs)
        self.g.nodes.append(Node(op, list(inputs), [Value(self._fresh(name), t)], attrs, name=name))
        self._types[name] = t
        return name

    def scalar(self, name: str, value: float) -> str:
        """A one-element constant of shape [1] in the builder's dtype (a pattern's 0.5, sqrt(2), epsilon;
        `param` keeps at least one dimension, the form the library's patterns were written and checked in)."""
        return self.param(name, np.array(value, dtype=self.dtype))

    def scalar_rank0(self, name: str, value: float) -> str:
        """A 0-d constant in the builder's dtype, for a rewrite that asks a rank-0 input (WhereDummyDq)."""
        a = np.array(value, dtype=self.dtype)
        self.g.constants[self._fresh(name)] = a
        self._types[name] = TensorType.of(a)
        return name

    def output(self, v: str) -> Graph:
        self.g.outputs = [v]
        return self.g

    def outputs(self, *vs: str) -> Graph:
        self.g.outputs = list(vs)
        return self.g

    # ---- layers --------------------------------------------------------------------
    def conv(self, x: str, cout: int, k: int, name: str, stride: int = 1, pad: int | None = None,
             group: int = 1, bias: bool = False) -> str:
        cin = self._types[x].shape[1]
        p = k // 2 if pad is None else pad
        fan_in = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k), dtype=np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        ins = [x, self.param(f"{name}_w", w)]
        if bias:
            ins.append(self.param(f"{name}_b", self.rng.normal(0.0, 0.01, cout)))
        return self.op("conv2d", ins, name, strides=[stride, stride], dilations=[1, 1], pads=[p, p, p, p], group=group)

    def bn(self, x: str, name: str, gain: float = 1.0) -> str:
        c = self._types[x].shape[1]
        r = self.rng
        scale = self.param(f"{name}_scale", gain * r.uniform(0.8, 1.2, c))
        shift = self.param(f"{name}_shift", r.normal(0.0, 0.05, c))
        mean = self.param(f"{name}_mean", r.normal(0.0, 0.05, c))
        var = self.param(f"{name}_var", r.uniform(0.8, 1.25, c))
        return self.op("batch_norm", [x, scale, shift, mean, var], name, epsilon=BN_EPSILON)

    def relu(self, x: str, name: str) -> str:
        return self.op("relu", [x], name)

    def relu6(self, x: str, name: str) -> str:
        return self.op("clip", [x], name, min=0.0, max=6.0)

    def add(self, a: str, b: str, name: str) -> str:
        return self.op("add", [a, b], name)

    def max_pool(self, x: str, name: str, k: int = 2, stride: int = 2) -> str:
        return self.op("max_pool2d", [x], name, kernel=[k, k], strides=[stride, stride], pads=[0, 0, 0, 0],
                       dilations=[1, 1])

    def global_avg_pool(self, x: str, name: str) -> str:
        return self.op("global_avg_pool", [x], name)

    def flatten(self, x: str, name: str) -> str:
        return self.op("flatten", [x], name, axis=1)

    def linear(self, x: str, out: int, name: str) -> str:
        fan_in = self._types[x].shape[1]
        w = self.rng.standard_normal((out, fan_in), dtype=np.float32) * np.float32(np.sqrt(1.0 / fan_in))
        b = self.rng.normal(0.0, 0.01, out)
        return self.op("gemm", [x, self.param(f"{name}_w", w), self.param(f"{name}_b", b)], name,
                       alpha=1.0, beta=1.0, transA=0, transB=1)

    def conv_bn(self, x: str, cout: int, k: int, name: str, stride: int = 1, group: int = 1,
                act: str | None = "relu", gain: float = 1.0) -> str:
        y = self.bn(self.conv(x, cout, k, f"{name}_conv", stride=stride, group=group), f"{name}_bn", gain=gain)
        if act == "relu":
            return self.relu(y, f"{name}_relu")
        if act == "relu6":
            return self.relu6(y, f"{name}_relu6")
        return y
