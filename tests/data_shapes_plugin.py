"""A planted data-dependent-shape fault for tests/test_data_shapes.py: ONNXRuntime whose optimized build returns one
index fewer from every NonZero (its count's last index dropped, a Slice after it in the model it compiles), so the
data-dependent extent, not a value, is wrong. The campaign's workers import this module."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.backends import register_backend
from planted_ort import RewrittenOptimizedBuild


def drop_last_nonzero(graph: Any) -> None:
    """Each NonZero of an onnx.GraphProto (nested subgraphs included) gives its indices but the last one."""
    import onnx

    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                drop_last_nonzero(a.g)
    for k, node in enumerate([n for n in graph.node if n.op_type == "NonZero"]):
        full, short = f"__planted_nonzero{k}", node.output[0]
        node.output[0] = full
        bounds = [onnx.numpy_helper.from_array(np.array([v], dtype=np.int64), f"{full}_{name}")
                  for name, v in (("start", 0), ("end", -1), ("axis", 1))]
        graph.initializer.extend(bounds)
        at = list(graph.node).index(node) + 1
        graph.node.insert(at, onnx.helper.make_node("Slice", [full, *(b.name for b in bounds)], [short]))


class ShortNonZeroBackend(RewrittenOptimizedBuild):
    name = "short-nonzero"
    rewrites_op = "non_zero"

    def rewrite(self, graph: Any) -> None:
        drop_last_nonzero(graph)


register_backend("short-nonzero", ShortNonZeroBackend)
