"""Every nn operator agrees across the reference, ONNX, ONNXRuntime, TVM Relax and the importer."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import TensorType
from dlcfuzz.ops import get_op, registry
from tests.op_harness import check_instance, instances

OPS = sorted(n for n, s in registry().items() if s.family == "nn")


@pytest.mark.parametrize("name", OPS)
def test_op_agrees_everywhere(name):
    spec = get_op(name)
    found = instances(spec, seed=sum(map(ord, name)), count=6)
    assert found, f"no valid instance of {name}"
    for g, x in found:
        check_instance(g, x)


def test_conv_type_rules():
    conv = get_op("conv2d")
    attrs = {"strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": 2}
    x = TensorType("float32", (1, 4, 5, 5))
    with pytest.raises(ShapeError, match="channels"):
        conv.infer([x, TensorType("float32", (2, 3, 3, 3))], attrs)
    with pytest.raises(ShapeError, match="group"):
        conv.infer([TensorType("float32", (1, 3, 5, 5)), TensorType("float32", (2, 1, 3, 3))], attrs)
    with pytest.raises(DTypeError):
        conv.infer([TensorType("int32", (1, 4, 5, 5)), TensorType("int32", (2, 2, 3, 3))], attrs)
    with pytest.raises(ShapeError, match="larger than padded"):
        conv.infer([x, TensorType("float32", (2, 2, 7, 7))], attrs)


def test_conv_reference_by_hand():
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), dtype="float32")
    y = get_op("conv2d").reference([x, w], {"strides": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": 1})[0]
    np.testing.assert_array_equal(y, [[[[0 + 1 + 4 + 5, 2 + 3 + 6 + 7], [8 + 9 + 12 + 13, 10 + 11 + 14 + 15]]]])


def test_matmul_broadcasting_rules():
    mm = get_op("matmul")
    assert mm.infer([TensorType("float32", (2, 1, 3, 4)), TensorType("float32", (5, 4, 6))], {})[0].shape == (2, 5, 3, 6)
    assert mm.infer([TensorType("float32", (4,)), TensorType("float32", (4, 6))], {})[0].shape == (6,)
    with pytest.raises(ShapeError):
        mm.infer([TensorType("float32", (3, 4)), TensorType("float32", (5, 6))], {})
