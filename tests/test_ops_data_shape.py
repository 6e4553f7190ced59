"""Operators whose output extent depends on their input values (ops/data_shape.py): each agrees with the ONNX
lowering, ONNXRuntime and the importer on sampled instances (Relax: a documented gap); their rules state the bound."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.ir import TensorType
from dlcfuzz.ops import get_op, registry
from op_harness import check_instance, instances

DATA_SHAPE_OPS = sorted(name for name, spec in registry().items() if spec.family == "data_shape")


def test_family_is_registered():
    assert set(DATA_SHAPE_OPS) == {"non_zero", "unique", "compress_computed", "non_max_suppression"}


@pytest.mark.parametrize("op", DATA_SHAPE_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=3, count=4)
    assert len(got) >= 3, f"{op}: sample() produced too few instances"
    for g, inputs in got:
        check_instance(g, inputs, relax=False)  # Relax: a documented gap (lower/relax/data_shape.py)


def test_bounds_hold_the_largest_extent():
    """An all-true input reaches each bound: NonZero's every position, Compress's whole condition, every box."""
    x = np.ones((2, 3), np.float32)
    (nz,) = get_op("non_zero").infer([TensorType.of(x)], {})
    assert nz.unknown == (1,) and nz.admits(get_op("non_zero").reference([x], {})[0].shape) and nz.shape == (2, 6)
    cond = np.ones(3, bool)
    (kept,) = get_op("compress_computed").infer([TensorType.of(x), TensorType.of(cond)], {"axis": 1})
    assert kept.shape == (2, 3) and kept.unknown == (1,)
    assert get_op("compress_computed").reference([x, cond], {"axis": 1})[0].shape == kept.shape
    boxes = np.array([[[0, 0, 1, 1], [2, 2, 3, 3]]], np.float32)  # apart: neither suppresses the other
    attrs = {"center_point_box": 0, "max_output_boxes_per_class": 5, "iou_threshold": 0.5}
    scores = np.array([[[0.9, 0.8]]], np.float32)
    (sel,) = get_op("non_max_suppression").infer([TensorType.of(boxes), TensorType.of(scores)], attrs)
    assert sel.shape == (2, 3) and sel.unknown == (0,)
    assert get_op("non_max_suppression").reference([boxes, scores], attrs)[0].tolist() == [[0, 0, 0], [0, 0, 1]]
