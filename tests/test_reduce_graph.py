"""The graph reducer's moves on a finding that needs nodes of two outputs, or a node whose two results feed
one consumer: reference-only predicates, no compiler."""

from __future__ import annotations

import numpy as np

from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph
from dlcfuzz.reduce.graph import reduce_graph

F = TensorType("float32", (2, 4))
HALF = TensorType("float32", (2, 2))


def two_output_graph() -> Graph:
    """relu(y) first; split(x)'s two halves added; sigmoid(x) last: three outputs."""
    g = Graph(
        inputs=[Value("x", F), Value("y", F)], constants={},
        nodes=[Node("relu", ["y"], [Value("r", F)], {}, name="n0"),
               Node("split", ["x"], [Value("a", HALF), Value("b", HALF)], {"axis": 1, "split": [2, 2]}, name="n1"),
               Node("add", ["a", "b"], [Value("s", HALF)], {}, name="n2"),
               Node("sigmoid", ["x"], [Value("g", F)], {}, name="n3")],
        outputs=["r", "s", "g"])
    check_graph(g)
    return g


def test_a_finding_that_needs_two_outputs_drops_the_others_and_cuts_a_two_result_producer():
    g = two_output_graph()
    x = {"x": np.arange(8, dtype=np.float32).reshape(2, 4), "y": np.ones((2, 4), np.float32)}

    def needs_relu_and_add(h: Graph, _: dict) -> bool:  # as a fault that fires on one branch, shows on another
        return {"relu", "add"} <= h.ops_used()

    small, small_in = reduce_graph(g, x, needs_relu_and_add)
    # no single output keeps both; dropping the sigmoid's output, then cutting the split (both its halves
    # read by the add) leaves the two nodes the finding needs
    assert sorted(n.op for n in small.nodes) == ["add", "relu"], [n.op for n in small.nodes]
    check_graph(small)
    add_inputs = next(n for n in small.nodes if n.op == "add").inputs
    np.testing.assert_array_equal(small_in[add_inputs[0]], x["x"][:, :2])  # the cut feeds the split's results
    np.testing.assert_array_equal(small_in[add_inputs[1]], x["x"][:, 2:])
