"""The graph reducer's moves on a finding that needs nodes of two outputs, or a node whose two results feed
one consumer, or one state of a loop whose other states nobody reads: reference-only predicates, no compiler."""

from __future__ import annotations

import numpy as np

from dlcfuzz import reference
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph
from dlcfuzz.reduce.graph import reduce_graph
from dlcfuzz.reduce.regions import without_unused_region_outputs

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


F3 = TensorType("float32", (3,))
B = TensorType("bool", ())


def three_state_loop() -> Graph:
    """A four-trip loop of three states and a scan output: a <- relu(a) + d (the finding's), d <- d * 2 (read by
    a's next value), b <- sigmoid(w) (w captured; nobody reads b), plus each trip's b stacked. Only a is
    returned; the scan output keeps the loop from being unrolled (four trips)."""
    body = Graph(inputs=[Value("i", TensorType("int64", ())), Value("go_in", B), Value("a", F3), Value("d", F3),
                         Value("b", F3), Value("w", F3)],
                 constants={"two": np.full(3, 2.0, np.float32)},
                 nodes=[Node("relu", ["a"], [Value("ra", F3)], name="r"),
                        Node("add", ["ra", "d"], [Value("a_next", F3)], name="p"),
                        Node("mul", ["d", "two"], [Value("d_next", F3)], name="m"),
                        Node("sigmoid", ["w"], [Value("b_next", F3)], name="s")],
                 outputs=["go_in", "a_next", "d_next", "b_next", "b_next"], name="body")
    g = Graph(inputs=[Value("a0", F3), Value("d0", F3), Value("b0", F3), Value("w", F3)],
              constants={"n": np.array(4, np.int64), "go": np.array(True)},
              nodes=[Node("loop", ["n", "go", "a0", "d0", "b0", "w"],
                          [Value("a_final", F3), Value("d_final", F3), Value("b_final", F3),
                           Value("b_trace", TensorType("float32", (4, 3)))],
                          {"body": body, "num_carried": 3, "trips": 4}, name="loop"),
                     Node("neg", ["a_final"], [Value("out", F3)], name="n0")],
              outputs=["out"])
    check_graph(g)
    return g


def test_a_loop_keeps_only_the_states_its_read_output_needs():
    """Issue 40's acceptance campaign reduced a RoiAlign finding to one loop whose body still computed a Trilu and
    a MatMul into states nobody read (a loop longer than one trip with scan outputs is not unrolled), so the
    finding's operators were theirs too. The region is slimmed: the unread state b, its scan output and its
    capture w go, with the sigmoid; d stays, since a's next value reads it; the outputs' values do not move."""
    g = three_state_loop()
    rng = np.random.default_rng(0)
    x = {v.name: rng.standard_normal(3).astype(np.float32) for v in g.inputs}
    slim = without_unused_region_outputs(g, 0)
    assert slim is not None
    check_graph(slim)
    loop = slim.nodes[0]
    assert loop.inputs == ["n", "go", "a0", "d0"] and [v.name for v in loop.outputs] == ["a_final", "d_final"]
    assert loop.attrs["num_carried"] == 2 and sorted(n.op for n in loop.attrs["body"].nodes) == ["add", "mul", "relu"]
    np.testing.assert_array_equal(reference.outputs(slim, x)[0], reference.outputs(g, x)[0])
    assert without_unused_region_outputs(slim, 0) is None  # nothing left unread: no candidate

    def needs_the_loops_relu(h: Graph, _: dict) -> bool:  # a fault in the loop's relu
        return any(n.op == "loop" and "relu" in {m.op for m in n.attrs["body"].nodes} for n in h.nodes)

    small, _ = reduce_graph(g, x, needs_the_loops_relu)
    check_graph(small)
    assert small.ops_used() == {"loop", "relu", "add", "mul"}, small.ops_used()


def test_slimming_regions_of_random_graphs_keeps_the_read_outputs_and_a_valid_onnx_model():
    """On random region graphs cut to each single output, every slimmed conditional, loop and scan passes the
    check and onnx's full check, and the output keeps its reference value."""
    import onnx

    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.reduce.graph import prune
    from tests.test_regions import feeds, random_region_graphs

    slimmed: dict[str, int] = {}
    for k, g in enumerate(random_region_graphs(20)):
        x = feeds(g, k)
        for o in g.outputs:
            h = g.light_copy()
            h.outputs = [o]
            h = prune(h)
            h_in = {v.name: x[v.name] for v in h.inputs}
            for idx, n in enumerate(h.nodes):
                s = without_unused_region_outputs(h, idx)
                if s is None:
                    continue
                s = prune(s)
                check_graph(s)
                onnx.checker.check_model(to_onnx(s), full_check=True)
                got = reference.outputs(s, {v.name: h_in[v.name] for v in s.inputs})
                np.testing.assert_array_equal(got[0], reference.outputs(h, h_in)[0])
                slimmed[n.op] = slimmed.get(n.op, 0) + 1
    assert set(slimmed) == {"if", "loop", "scan"} and min(slimmed.values()) >= 5, slimmed
