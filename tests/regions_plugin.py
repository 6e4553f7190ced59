"""A planted region fault for tests/test_regions.py: ONNXRuntime whose optimized build takes the other branch
of every If (the branches swapped in the model it compiles). The campaign's workers import this module."""

from __future__ import annotations

from typing import Any

from dlcfuzz.backends import register_backend
from planted_ort import RewrittenOptimizedBuild


def swap_branches(graph: Any) -> None:
    """Swap then_branch and else_branch of every If in an onnx.GraphProto, nested subgraphs included."""
    import onnx

    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                swap_branches(a.g)
        if node.op_type == "If":
            for a in node.attribute:
                a.name = {"then_branch": "else_branch", "else_branch": "then_branch"}.get(a.name, a.name)


class WrongBranchBackend(RewrittenOptimizedBuild):
    name = "wrong-branch"
    rewrites_op = "if"

    def rewrite(self, graph: Any) -> None:
        swap_branches(graph)


register_backend("wrong-branch", WrongBranchBackend)
