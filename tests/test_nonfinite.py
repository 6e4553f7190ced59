"""Non-finite values (issue 37): edge tests draw +-inf and NaN only where every operator they reach defines them
(OpSpec.nonfinite, gen/inputs.nonfinite_allowed), the reference judges such tests, comparisons take NaN and inf at
the same places as equal, and a compiler that loses a NaN is found while the correct one stays quiet."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcfuzz import reference
from dlcfuzz.gen.inputs import nonfinite_allowed
from dlcfuzz.gen.random import generate
from dlcfuzz.gen.repair import sample_values
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import get_op
from dlcfuzz.ops.base import IEEE, INFINITIES, UNDEFINED
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.numeric import compare_one
from dlcfuzz.oracle.policy import reference_of
from dlcfuzz.oracle.policy import test_seed as seed_of
from dlcfuzz.oracle.testcase import TestCase

# operators that define non-finite inputs, and some that do not (a reduction, a cast, a clip, a clamping activation)
MIX = ["add", "sub", "mul", "div", "neg", "exp", "sqrt", "tanh", "sigmoid", "relu", "max", "less", "isnan", "where",
       "reduce_sum", "reduce_max", "cast", "clip", "softplus", "argmax"]


def _nonfinite_test(seed: int) -> tuple[Graph, dict[str, np.ndarray], bool]:
    rng = np.random.default_rng(seed_of(37, seed))
    g, inputs, _ = sample_values(generate(rng, 6, ops=[get_op(k) for k in MIX]), rng)
    held = any(x.dtype.kind == "f" and not np.isfinite(x).all() for x in [*inputs.values(), *g.constants.values()])
    return g, inputs, held


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 20))
def test_a_nonfinite_value_never_reaches_an_operator_that_leaves_it_undefined(seed):
    """Whatever the seed: every operator that sees an inf defines infinities, every one that sees a NaN is IEEE's,
    and none makes an inf or NaN of finite values."""
    g, inputs, _ = _nonfinite_test(seed)
    env = reference.run(g, inputs, keep_all=True)
    for n in g.nodes:
        xs = [env[i] for i in n.inputs]
        if all(map(reference.finite, xs)):
            assert all(reference.finite(env[v.name]) for v in n.outputs), (n.op, seed)
            continue
        kind = get_op(n.op).nonfinite
        assert kind != UNDEFINED, (n.op, seed)
        assert kind == IEEE or not any(x.dtype.kind == "f" and np.isnan(x).any() for x in xs), (n.op, seed)


def test_the_reference_judges_the_tests_that_hold_nonfinite_values():
    """Some tests of a mix of operators hold inf or NaN (edge tests, on tensors whose consumers define them), and the
    reference judges every one of them, its outputs holding the non-finite values."""
    held = judged = nonfinite_out = 0
    for s in range(300):
        g, inputs, has = _nonfinite_test(s)
        if not has:
            continue
        held += 1
        ref = reference_of(TestCase(g, dict(inputs), [], seed=s), tries=1, stability=False)
        judged += ref.outputs is not None
        nonfinite_out += ref.outputs is not None and not all(map(reference.finite, ref.outputs))
    assert held >= 5 and judged == held and nonfinite_out >= 3, (held, judged, nonfinite_out)


def test_downstream_facts_decide_which_tensors_may_hold_what():
    """A value read by an IEEE operator whose result reaches Relu may hold infinities only where Relu reads them
    directly; a value a reduction reads may hold none; a comparison's bool result stops the walk."""
    f = TensorType("float32", (3,))
    b = TensorType("bool", (3,))
    g = Graph(inputs=[Value("x", f), Value("y", f), Value("z", f)], nodes=[
        Node("add", ["x", "y"], [Value("s", f)], {}, name="n0"),
        Node("relu", ["s"], [Value("r", f)], {}, name="n1"),
        Node("less", ["z", "r"], [Value("c", b)], {}, name="n2"),
        Node("reduce_sum", ["z"], [Value("t", TensorType("float32", ()))], {"axes": [0], "keepdims": 0}, name="n3"),
    ], outputs=["c", "t", "r"])
    allowed = nonfinite_allowed(g)
    assert allowed["s"] == INFINITIES and allowed["r"] == IEEE
    assert allowed["x"] == allowed["y"] == UNDEFINED  # add may make NaN of inf - inf, which Relu does not define
    assert allowed["z"] == UNDEFINED  # ReduceSum reads it
    # without graph outputs (hirgen's disruptive mode leaves the broken node out), an unread result allows nothing
    assert nonfinite_allowed(Graph(g.inputs, g.constants, g.nodes[:2], [])).get("x", UNDEFINED) == UNDEFINED


def _binary(op: str, a: np.ndarray, b: np.ndarray) -> TestCase:
    t = TensorType(str(a.dtype), a.shape)
    out = get_op(op).infer([t, t], {})[0]
    g = Graph(inputs=[Value("a", t), Value("b", t)], nodes=[Node(op, ["a", "b"], [Value("y", out)], {}, name="n0")],
              outputs=["y"])
    return TestCase(g, {"a": a, "b": b}, [], seed=0)


def test_the_reference_accepts_inherited_nonfinite_values_and_refuses_the_rest():
    nan, inf = np.nan, np.inf
    a = np.array([inf, -inf, nan, 1.0], dtype=np.float32)
    ref = reference_of(_binary("add", a, np.array([-inf, 1.0, 2.0, 3.0], dtype=np.float32)), tries=1)
    assert ref.outputs is not None and ref.unstable == set()
    np.testing.assert_array_equal(ref.outputs[0], np.array([nan, -inf, nan, 4.0], dtype=np.float32))
    # infinities through Max are defined; a NaN there is not (maxss and fmax differ)
    b = np.array([0.0, 1.0, 2.0, 3.0], dtype=np.float32)
    assert reference_of(_binary("max", np.array([inf, -inf, 0.0, 1.0], np.float32), b), tries=1).outputs is not None
    assert reference_of(_binary("max", a, b), tries=1).reason == C.NONFINITE_REFERENCE
    # a result of an inf is no rounding of a tiny value: Sigmoid's outputs stay judged (not ill-conditioned)
    t = TensorType("float32", (4,))
    g = Graph(inputs=[Value("a", t)], nodes=[Node("sigmoid", ["a"], [Value("y", t)], {}, name="n0")], outputs=["y"])
    ref = reference_of(TestCase(g, {"a": np.array([inf, -inf, nan, 0.5], np.float32)}, [], seed=0), tries=1)
    assert ref.outputs is not None and ref.unstable == set()
    # an inf made of finite values (overflow: rounding decides it) stays unjudged, as before
    big = np.full(4, 3e38, dtype=np.float32)
    assert reference_of(_binary("add", big, big), tries=1).reason == C.NONFINITE_REFERENCE


def test_compare_takes_nan_and_inf_at_the_same_places_as_equal():
    ref = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    assert compare_one(0, ref.copy(), ref) is None
    assert compare_one(0, np.array([0.0, np.inf, -np.inf, 1.0], np.float32), ref).reason == "nan"
    assert compare_one(0, np.array([np.nan, -np.inf, -np.inf, 1.0], np.float32), ref).reason == "inf"


def test_a_compiler_that_loses_nan_is_found_with_profiles_and_not_without(tmp_path):
    """planted:nan@add turns every NaN of its outputs into 0: edge tests' non-finite values find it, `--values small`
    does not; the correct ONNXRuntime stays quiet on the same edge tests (test_values: the same campaign)."""
    pytest.importorskip("onnxruntime")
    from tests.test_values import _campaign

    found = _campaign(tmp_path, "planted:nan@add", "edge")
    assert found and all(f["category"] in ("wrong-result", "inconsistency") and "NaN" in f["detail"]
                         for f in found), found
    assert _campaign(tmp_path, "planted:nan@add", "small") == []


def test_a_nan_a_loop_body_hides_leaves_the_reference_unjudged_as_at_top_level():
    """Issue 40's acceptance campaign: a Loop body's ArgMin over Atanh of values past 1 (a NaN, which ONNX leaves
    to the implementation: ORT skips it, numpy picks it) was judged a wrong result, since the non-finite check saw
    only the loop's own inputs and outputs. The body's values are checked on each trip now: the same NaN at top
    level and in the body both leave the reference unjudged; finite values in the body are judged."""
    t, idx = TensorType("float32", (1, 4)), TensorType("int64", (1,))
    body = Graph(inputs=[Value("i", TensorType("int64", ())), Value("cond", TensorType("bool", ())),
                         Value("acc", idx), Value("x", t)],
                 nodes=[Node("atanh", ["x"], [Value("a", t)], name="at"),
                        Node("argmin", ["a"], [Value("m", idx)], {"axis": 1, "keepdims": 0, "select_last_index": 0},
                             name="am")],
                 outputs=["cond", "m"], name="body")
    g = Graph(inputs=[Value("x", t)], constants={"trips": np.array(1, np.int64), "go": np.array(True),
                                                 "init": np.zeros(1, np.int64)},
              nodes=[Node("loop", ["trips", "go", "init", "x"], [Value("out", idx)], {"body": body, "num_carried": 1},
                          name="loop")],
              outputs=["out"])
    flat = Graph(inputs=[Value("x", t)], nodes=body.nodes, outputs=["m"])
    past_one = {"x": np.array([[0.5, -0.9, 1.2, 0.1]], np.float32)}
    for h in (flat, g):
        assert reference_of(TestCase(h, dict(past_one), [], seed=0), tries=1).reason == C.NONFINITE_REFERENCE
    with pytest.raises(reference.NonfiniteInBody, match="at in the body of loop"):
        reference.run(g, past_one, check_nonfinite=True)
    np.testing.assert_array_equal(reference.run(g, past_one)["out"], [2])  # unchecked: numpy's argmin takes the NaN
    inside = {"x": np.array([[0.5, -0.9, 0.2, 0.1]], np.float32)}
    ref = reference_of(TestCase(g, inside, [], seed=0), tries=1)
    assert ref.outputs is not None and ref.outputs[0].tolist() == [1]
