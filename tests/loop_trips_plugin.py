"""A planted fault in loops with a computed trip count, for tests/test_loop_trip_count.py: ONNXRuntime whose
optimized build runs one trip fewer of every Loop whose trip count the graph computes (its M replaced by
Max(M - 1, 0) in the model it compiles), so the scan outputs' data-dependent extent is one short and the carried
values are a trip behind. A Loop whose trip count is a constant (a static `trips`) is left as it is. The campaign's
workers import this module."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.backends import register_backend
from planted_ort import RewrittenOptimizedBuild


def drop_last_trip(graph: Any) -> None:
    """Each Loop of an onnx.GraphProto (nested subgraphs included) whose M a node computes runs one trip fewer."""
    import onnx

    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                drop_last_trip(a.g)
    computed = {o for n in graph.node if n.op_type != "Constant" for o in n.output}
    for k, node in enumerate([n for n in graph.node if n.op_type == "Loop" and n.input[0] in computed]):
        one, zero = f"__planted_trip{k}_one", f"__planted_trip{k}_zero"
        graph.initializer.extend([onnx.numpy_helper.from_array(np.array(1, np.int64), one),
                                  onnx.numpy_helper.from_array(np.array(0, np.int64), zero)])
        fewer, clipped = f"__planted_trip{k}_fewer", f"__planted_trip{k}_m"
        at = list(graph.node).index(node)
        graph.node.insert(at, onnx.helper.make_node("Max", [fewer, zero], [clipped]))
        graph.node.insert(at, onnx.helper.make_node("Sub", [node.input[0], one], [fewer]))
        node.input[0] = clipped


class ShortLoopBackend(RewrittenOptimizedBuild):
    name = "short-loop"
    rewrites_op = "loop"

    def rewrite(self, graph: Any) -> None:
        drop_last_trip(graph)


register_backend("short-loop", ShortLoopBackend)
