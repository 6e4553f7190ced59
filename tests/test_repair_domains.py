"""Domain repair (gen/repair.repair_domains) inside region bodies, and of graph inputs whose consumers' domains do
not meet: a computed value that leaves an operator's domain in a conditional's branch or on a loop's later trip is
clipped there, as the same nodes outside a region are, and an input sampled for one consumer's domain is clipped in
front of the other consumer it leaves, so the test is judged instead of left unjudged for a non-finite reference
(issue 37's non-finite share)."""

from __future__ import annotations

import numpy as np

from dlcfuzz import reference
from dlcfuzz.gen.inputs import sample_inputs, value_domains
from dlcfuzz.gen.repair import repair_domains
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.ops import check_graph
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.policy import reference_of
from dlcfuzz.oracle.testcase import TestCase

F4 = TensorType("float32", (4,))
I64 = TensorType("int64", ())
B = TensorType("bool", ())


def doubled_asin(p: str) -> list[Node]:
    """asin(p + p): p in asin's domain, p + p not."""
    return [Node("add", [p, p], [Value("s", F4)], name="twice"), Node("asin", ["s"], [Value("a", F4)], name="asin")]


def if_graph() -> Graph:
    then = Graph(inputs=[Value("p", F4)], nodes=doubled_asin("p"), outputs=["a"], name="then_branch")
    other = Graph(inputs=[Value("p", F4)], nodes=[Node("neg", ["p"], [Value("e", F4)], name="n")], outputs=["e"],
                  name="else_branch")
    return Graph(inputs=[Value("x", F4)], constants={"go": np.array([True])},
                 nodes=[Node("if", ["go", "x"], [Value("out", F4)], {"then_branch": then, "else_branch": other},
                             name="if")],
                 outputs=["out"])


def loop_graph() -> Graph:
    """acc <- acc + acc over 3 trips, carried, and acos(acc + acc) beside it: in acos's domain on the first trip
    (acc 0.2 -> 0.4), out of it on the third (0.8 -> 1.6)."""
    body = Graph(inputs=[Value("i", I64), Value("cond_in", B), Value("acc", F4), Value("angle", F4)],
                 nodes=[Node("add", ["acc", "acc"], [Value("next", F4)], name="twice"),
                        Node("acos", ["next"], [Value("c", F4)], name="acos")],
                 outputs=["cond_in", "next", "c"], name="body")
    return Graph(inputs=[Value("x", F4)],
                 constants={"n": np.array(3, np.int64), "go": np.array(True), "zero": np.zeros(4, np.float32)},
                 nodes=[Node("loop", ["n", "go", "x", "zero"], [Value("acc_out", F4), Value("angle_out", F4)],
                             {"body": body, "num_carried": 2}, name="loop")],
                 outputs=["acc_out", "angle_out"])


X = np.array([0.2, -0.1, 0.3, 0.1], np.float32)


def reason(g: Graph, x: np.ndarray) -> str | None:
    return reference_of(TestCase(g, {"x": x}, [], seed=0), tries=1, stability=False).reason


def body_ops(g: Graph) -> list[str]:
    return [n.op for body in g.nodes[0].bodies().values() for n in body.nodes]


def test_a_branch_is_repaired_as_the_same_nodes_outside_a_region_are():
    flat = Graph(inputs=[Value("x", F4)], nodes=doubled_asin("x"), outputs=["a"])
    g = if_graph()
    x = X * 3  # 0.6 and 0.9 doubled leave asin's domain
    assert reason(flat, x) == reason(g, x) == C.NONFINITE_REFERENCE
    assert [n.op for n in repair_domains(flat, {"x": x}).nodes] == ["add", "clip", "asin"]
    repair_domains(g, {"x": x})
    check_graph(g)
    assert [n.op for n in g.nodes] == ["if"]  # the clip goes into the branch, where the value is
    assert body_ops(g) == ["add", "clip", "asin", "neg"]
    assert reason(g, x) is None
    np.testing.assert_array_equal(reference.outputs(g, {"x": x})[0], reference.outputs(flat, {"x": x})[0])


def test_a_value_that_leaves_the_domain_on_a_later_trip_is_clipped_inside_the_loop():
    g = loop_graph()
    assert reason(g, X) == C.NONFINITE_REFERENCE  # trip 3: 0.3 * 8 = 2.4
    out = repair_domains(g, {"x": X})
    check_graph(out)
    assert body_ops(out) == ["add", "clip", "acos"]
    body = out.nodes[0].attrs["body"]
    clip = body.nodes[1]
    others = set(out.types()) | {p.name for p in body.inputs} | {v.name for n in body.nodes if n is not clip
                                                                  for v in n.outputs}
    assert clip.outputs[0].name not in others  # fresh in every scope
    assert -1 <= clip.attrs["min"] < clip.attrs["max"] <= 1
    assert reason(out, X) is None
    acc, angle = reference.outputs(out, {"x": X})
    np.testing.assert_array_equal(acc, X * 8)  # the carried value itself is not clipped: only acos's input is
    np.testing.assert_allclose(angle, np.arccos(np.clip(X * 8, clip.attrs["min"], clip.attrs["max"])), rtol=1e-6)


def test_a_graph_whose_bodies_stay_in_their_domains_is_left_as_it_is():
    g = loop_graph()
    small = np.array([0.01, -0.02, 0.05, 0.1], np.float32)  # 8 times each stays in acos's domain
    assert body_ops(repair_domains(g, {"x": small})) == ["add", "acos"]


def test_the_repaired_loop_runs_on_onnxruntime_as_the_reference_says():
    from op_harness import run_ort

    g = repair_domains(loop_graph(), {"x": X})
    for theirs, ours in zip(run_ort(to_onnx(g), {"x": X}), reference.outputs(g, {"x": X}), strict=True):
        np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-6)


def test_an_input_sampled_for_one_consumer_is_clipped_in_front_of_another_whose_domain_it_leaves():
    """ORT's false-positive run with regions, 11 of its 54 non-finite references: an input that a Gemm reads in
    [-1, 1] and an Acosh in [1.1, 4]; the domains do not meet, sampling takes the first, Acosh gets NaN."""
    g = Graph(inputs=[Value("x", F4)], nodes=[Node("asin", ["x"], [Value("a", F4)], name="n0"),
                                              Node("acosh", ["x"], [Value("b", F4)], name="n1")],
              outputs=["a", "b"])
    check_graph(g)
    assert value_domains(g)["x"].hi <= 1  # asin's, the first consumer's
    x = sample_inputs(g, np.random.default_rng(0))
    assert reason(g, x["x"]) == C.NONFINITE_REFERENCE
    out = repair_domains(g, x)
    assert [(n.op, n.inputs) for n in out.nodes] == [("asin", ["x"]), ("clip", ["x"]),
                                                     ("acosh", [out.nodes[1].outputs[0].name])]
    assert out.nodes[1].attrs["min"] >= 1.0
    assert reason(out, x["x"]) is None
    # an input whose sampling keeps it in every consumer's domain is never clipped, whatever values it is given (as
    # test_hirgen's asin of an input): repair mends what generation computes, not what a caller feeds
    alone = Graph(inputs=[Value("x", F4)], nodes=[Node("acosh", ["x"], [Value("b", F4)], name="n1")], outputs=["b"])
    assert [n.op for n in repair_domains(alone, {"x": np.full(4, 0.5, np.float32)}).nodes] == ["acosh"]
