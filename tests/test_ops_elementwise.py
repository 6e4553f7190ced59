"""Every elementwise operator agrees across the reference, ONNX, ONNXRuntime, TVM Relax and the importer."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import TensorType
from dlcfuzz.ops import get_op, registry
from tests.op_harness import check_instance, instances

OPS = sorted(n for n, s in registry().items() if s.family == "elementwise")


@pytest.mark.parametrize("name", OPS)
def test_op_agrees_everywhere(name):
    spec = get_op(name)
    found = instances(spec, seed=zlib.crc32(name.encode()) % 1000, count=len(spec.dtypes) + 2)  # stable per process
    assert found, f"no valid instance of {name}"
    for g, x in found:
        check_instance(g, x)


def test_type_rules_raise():
    with pytest.raises(DTypeError):
        get_op("sin").infer([TensorType("int32", (2,))], {})
    with pytest.raises(ShapeError):
        get_op("add").infer([TensorType("float32", (2, 3)), TensorType("float32", (4,))], {})
    with pytest.raises(DTypeError):
        get_op("add").infer([TensorType("float32", (2,)), TensorType("float64", (2,))], {})
    with pytest.raises(DTypeError):
        get_op("mod").infer([TensorType("float32", (2,)), TensorType("float32", (2,))], {"fmod": 0})


def test_onnx_semantics_of_tricky_ops():
    a = np.array([-7, 7, -7, 7], dtype="int32")
    b = np.array([2, -2, -2, 2], dtype="int32")
    np.testing.assert_array_equal(get_op("div").reference([a, b], {})[0], [-3, -3, 3, 3])  # truncation
    np.testing.assert_array_equal(get_op("mod").reference([a, b], {"fmod": 0})[0], [1, -1, -1, 1])  # divisor's sign
    np.testing.assert_array_equal(get_op("mod").reference([a, b], {"fmod": 1})[0], [-1, 1, -1, 1])  # dividend's sign
    x = np.array([0.5, 1.5, 2.5, -0.5], dtype="float32")
    np.testing.assert_array_equal(get_op("round").reference([x], {})[0], [0, 2, 2, -0.0])  # half to even
