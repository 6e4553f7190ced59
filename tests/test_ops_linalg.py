"""linalg operators (Einsum, Det): every spec against ONNX, ONNXRuntime, TVM Relax and the importer,
the references against NumPy, and Det's error scale on a near-singular matrix."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import get_op
from op_harness import check_instance, instances


@pytest.mark.parametrize("op", ["einsum", "det"])
def test_op_agrees_everywhere(op):
    spec = get_op(op)
    assert spec.family == "linalg"
    got = instances(spec, seed=5, count=4)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs, relax=op != "det")  # det: a documented Relax gap (no determinant op)


def test_einsum_infer_and_reference():
    spec = get_op("einsum")
    f = TensorType("float32", (2, 3, 3))
    assert spec.infer([f], {"equation": "...ii->...i"})[0].shape == (2, 3)
    assert spec.infer([f], {"equation": "...ii"})[0].shape == (2,)
    assert spec.infer([f, TensorType("float32", (1, 3, 4))], {"equation": "...ij,...jk"})[0].shape == (2, 3, 4)
    with pytest.raises(ShapeError):
        spec.infer([f, TensorType("float32", (2, 4, 4))], {"equation": "bij,bjk->bik"})
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(spec.reference([a, a], {"equation": "ij,ij->"})[0], (a * a).sum())


def test_det_reference_and_near_singular_scale():
    spec = get_op("det")
    x = np.array([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0 + 1e-6]]], dtype=np.float32)
    y = spec.reference([x], {})[0]
    np.testing.assert_allclose(y, [5.0, 1e-6], rtol=0.1)  # 4 + 1e-6 rounds in float32
    scale = spec.error_scale([x], {}, y)
    assert scale[1] > 1e5 * abs(y[1])  # an absolute scale where cancellation makes |det| tiny
    with pytest.raises(ShapeError):
        spec.infer([TensorType("float32", (2, 3))], {})
