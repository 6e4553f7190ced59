"""The reference's sensitivity analysis: an output that legal rounding can move past the tolerance
is ill-conditioned (never judged), found by perturbing every float result by its operator's
error scale; a well-conditioned output of the same graph shape stays judged."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import check_graph
from dlcfuzz.oracle.policy import reference_of, unstable_outputs
from dlcfuzz.oracle.testcase import TestCase


def chain(w: np.ndarray) -> Graph:
    """fmod(1 / (x @ w), y): found by a campaign on ONNXRuntime, where the conv/matmul sum's
    summation order alone changed the result from 0.067 to 0.91."""
    f = TensorType("float32", (1, 2))
    s = TensorType("float32", (1, 1))
    return Graph(inputs=[Value("x", f), Value("y", s)], constants={"w": w},
                 nodes=[Node("matmul", ["x", "w"], [Value("m", s)], name="n0"),
                        Node("reciprocal", ["m"], [Value("r", s)], name="n1"),
                        Node("mod", ["r", "y"], [Value("z", s)], {"fmod": 1}, name="n2")],
                 outputs=["z"])


def case(w: list[float]) -> TestCase:
    g = chain(np.array(w, np.float32).reshape(2, 1))
    check_graph(g)
    return TestCase(g, {"x": np.array([[1.0, 1.0]], np.float32), "y": np.array([[1.618]], np.float32)}, [], seed=3)


def test_cancelling_sum_feeding_a_discontinuity_is_ill_conditioned():
    # the sum cancels to 1e-3 (evaluating without rounding does not notice); a float32 summation
    # may be off by ~1e-7, i.e. 1e-4 relative, so 1/m = 1000 by 0.1, and the fmod by as much
    tc = case([1.0, -0.999])
    ref = reference.outputs(tc.graph, tc.inputs)
    assert unstable_outputs(tc, ref) == {0}


def test_well_conditioned_output_is_judged():
    tc = case([0.5, 0.25])
    ref = reference.outputs(tc.graph, tc.inputs)
    assert unstable_outputs(tc, ref) == set()


def test_perturbation_stays_within_the_error_scale():
    tc = case([1.0, -0.99999])
    plain = reference.run(tc.graph, tc.inputs, keep_all=True)
    noisy = reference.run(tc.graph, tc.inputs, keep_all=True, perturb=np.random.default_rng(0))
    terms = 1.0 + 0.99999  # |x| @ |w|: the magnitude of the matmul's terms
    bound = reference.PERTURB_EPS * np.finfo(np.float32).eps * terms
    assert 0 < abs(float(noisy["m"][0, 0]) - float(plain["m"][0, 0])) <= bound * 1.01


def test_bounded_transcendental_near_zero_is_judged_in_absolute_terms():
    """sign(sigmoid(-48.5)): ONNXRuntime computes the sigmoid as 0, the reference as 9e-22."""
    t = TensorType("float32", (2,))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("sigmoid", ["x"], [Value("s", t)], name="n0"),
                                             Node("sign", ["s"], [Value("z", t)], name="n1")], outputs=["z"])
    for x, expected in (([-48.5, 2.0], {0}), ([-3.0, 2.0], set())):
        tc = TestCase(g, {"x": np.array(x, np.float32)}, [], seed=0)
        assert unstable_outputs(tc, reference.outputs(tc.graph, tc.inputs)) == expected


def test_integer_division_by_a_computed_zero_has_no_reference():
    t = TensorType("int32", (3,))
    g = Graph(inputs=[Value("x", t), Value("y", t)],
              nodes=[Node("sub", ["y", "y"], [Value("zero", t)], name="n0"),
                     Node("div", ["x", "zero"], [Value("q", t)], name="n1")], outputs=["q"])
    check_graph(g)
    tc = TestCase(g, {"x": np.array([1, 2, 3], np.int32), "y": np.array([4, 5, 6], np.int32)}, [], seed=0)
    ref = reference_of(tc)
    assert ref.outputs is None and ref.reason == "integer-division-by-zero"


def test_hard_swish_uses_onnx_float32_alpha():
    """ONNX defines HardSwish with the float32 attribute alpha = 1/6; near x = -3 the inner sum
    cancels and 1/hard_swish(x) exposes the difference (a default-campaign false positive)."""
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.oracle.numeric import compare

    t = TensorType("float64", (2,))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("hard_swish", ["x"], [Value("h", t)], name="n0"),
                                             Node("reciprocal", ["h"], [Value("r", t)], name="n1")], outputs=["r"])
    x = {"x": np.array([-2.9961583817110213, 1.5])}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    got = ort.InferenceSession(to_onnx(g).SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, x)
    assert compare(got, reference.outputs(g, x)) == []


def test_hard_swish_with_the_exact_sixth_is_its_other_reading():
    """HardSwish's text says alpha = 1/6, its function body the float32 1/6 (our reference, onnxruntime's); TVM's ONNX
    importer computes x * clip(x + 3, 0, 6) / 6. Regression (issue 36's acceptance campaign on TVM 0.27, finding 59):
    tan(sinh(hard_swish(x))) in float64 at x = 1.6175 sits near tan's pole, which carries that 3e-8 to 1.1e-6, past
    the tolerance; the oracle accepts the exact-1/6 reading."""
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    from tvm import relax, runtime
    from tvm.relax.frontend.onnx import from_onnx

    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.oracle.numeric import compare, compare_one
    from dlcfuzz.oracle.policy import other_reading_outputs

    t = TensorType("float64", (2,))
    g = Graph(inputs=[Value("x", t)], outputs=["z"],
              nodes=[Node("hard_swish", ["x"], [Value("h", t)], name="n0"), Node("sinh", ["h"], [Value("s", t)], name="n1"),
                     Node("tan", ["s"], [Value("z", t)], name="n2")])
    x = {"x": np.array([1.6175106135501909, 0.5])}
    ex = relax.build(from_onnx(to_onnx(g), keep_params_in_input=False), target="llvm")
    got = [relax.VirtualMachine(ex, runtime.cpu())["main"](runtime.tensor(x["x"])).numpy()]
    tc = TestCase(g, x, [], seed=0)
    ref = reference_of(tc)
    assert ref.outputs is not None and ref.unstable == set()  # judged: legal rounding alone does not move it
    assert [m.index for m in compare(got, ref.outputs)] == [0]  # the float32 1/6 reading: 1.1e-6 off
    assert compare_one(0, got[0], other_reading_outputs(tc)[0]) is None


def _huge_floor_mod_body() -> Graph:
    """A region body (x, y) -> (floor-mod(x, y), x + y): the quotient of x = 2**63 by y ~ -1.56 is ~6e18, so legal
    rounding of it may land the floor-mod anywhere in (y, 0], while the sum is well-conditioned."""
    t = TensorType("float32", (2,))
    return Graph(inputs=[Value("x", t), Value("y", t)], outputs=["m", "s"],
                 nodes=[Node("mod", ["x", "y"], [Value("m", t)], {"fmod": 0}, name="n0"),
                        Node("add", ["x", "y"], [Value("s", t)], name="n1")])


_HUGE_X = {"x": np.array([-9.223372e18, 3.0], np.float32), "y": np.array([-1.5578597, -1.5578597], np.float32)}


def test_a_near_tie_inside_a_conditional_taints_the_outputs_its_branch_gives_from_it():
    """Regression (issue 40's acceptance campaign on TVM 0.27, finding 10): TVM's floor-mod x - floor(x / y) * y of
    x = -2**63 inside an If gave -5.5e11 where the reference's exact floor-mod gives -1.378. Outside a region the
    near tie makes such an output unstable; inside one it went unseen (near_ties did not enter bodies). Now the
    conditional's output from the tie is unstable and its well-conditioned output stays judged."""
    t, b = TensorType("float32", (2,)), TensorType("bool", ())
    body = _huge_floor_mod_body()
    g = Graph(inputs=[Value("c", b), Value("x", t), Value("y", t)], outputs=["m", "s"],
              nodes=[Node("if", ["c", "x", "y"], [Value("m", t), Value("s", t)],
                          {"then_branch": body, "else_branch": body}, name="n0")])
    check_graph(g)
    for taken in (True, False):
        tc = TestCase(g, {"c": np.array(taken), **_HUGE_X}, [], seed=0)
        assert unstable_outputs(tc, reference.outputs(tc.graph, tc.inputs)) == {0}, taken
    # the same body at the top level: the same verdict
    tc = TestCase(body, dict(_HUGE_X), [], seed=0)
    assert unstable_outputs(tc, reference.outputs(tc.graph, tc.inputs)) == {0}
    # a quotient of 2 is no tie: both outputs judged
    small = {"c": np.array(True), "x": np.array([3.0, 3.0], np.float32), "y": _HUGE_X["y"]}
    tc = TestCase(g, small, [], seed=0)
    assert unstable_outputs(tc, reference.outputs(tc.graph, tc.inputs)) == set()


def test_a_near_tie_in_a_loops_trip_taints_every_output_of_the_loop():
    """A loop carries a value from trip to trip, so a tie in any trip taints all its outputs (coarse, never unseen)."""
    t, i64, b = TensorType("float32", (2,)), TensorType("int64", ()), TensorType("bool", ())
    inner = _huge_floor_mod_body()
    body = Graph(inputs=[Value("i", i64), Value("go", b), Value("acc", t), Value("x", t), Value("y", t)],
                 outputs=["go", "acc2"], nodes=[*inner.nodes, Node("add", ["acc", "m"], [Value("acc2", t)], name="n2")])
    g = Graph(inputs=[Value("n", i64), Value("go", b), Value("acc", t), Value("x", t), Value("y", t)], outputs=["out"],
              nodes=[Node("loop", ["n", "go", "acc", "x", "y"], [Value("out", t)], {"body": body, "num_carried": 1},
                          name="n0")])
    check_graph(g)
    for x, expected in ((_HUGE_X["x"], {0}), (np.array([3.0, 3.0], np.float32), set())):
        inputs = {"n": np.array(2, np.int64), "go": np.array(True), "acc": np.zeros(2, np.float32), "x": x,
                  "y": _HUGE_X["y"]}
        tc = TestCase(g, inputs, [], seed=0)
        assert unstable_outputs(tc, reference.outputs(tc.graph, tc.inputs)) == expected


@pytest.mark.parametrize("big", [2.0**53, 1.5])
def test_a_fused_conv_whose_clipped_terms_cancel_is_ill_conditioned_and_a_tame_one_judged(big):
    """com.microsoft FusedConv's error scale is its convolution's magnitude of terms, not that sum passed through its
    activation: a Clip capped it at the bound, so a float32 window of +-2^53 terms that cancel to 0.68 was judged
    exact, and onnxruntime's legal 0 (the big terms absorb the small ones) a wrong result (issue 40's
    false-positive run, finding 3). The same graph on small inputs stays judged."""
    x_t, b_t = TensorType("float32", (1, 1, 3, 1)), TensorType("float32", (1,))
    g = Graph(inputs=[Value("x", x_t), Value("b", b_t)], constants={"w": np.ones((1, 1, 3, 1), np.float32)},
              nodes=[Node("ms_fused_conv", ["x", "w", "b"], [Value("y", TensorType("float32", (1, 1, 1, 1)))],
                          {"activation": "Clip", "activation_params": [-0.9, 2.0], "dilations": [1, 1], "group": 1,
                           "pads": [0, 0, 0, 0], "strides": [1, 1]}, name="fc")],
              outputs=["y"])
    check_graph(g)
    tc = TestCase(g, {"x": np.array([big, 0.68, -big], np.float32).reshape(x_t.shape),
                      "b": np.array([0.5], np.float32)}, [], seed=0)
    assert unstable_outputs(tc, reference.outputs(tc.graph, tc.inputs)) == ({0} if big > 2**24 else set())


CLASSES = 13862  # ONNXRuntime 1.32 acceptance finding 17: a float64 loss over this many classes


def long_loss(outputs: list[str]) -> tuple[Graph, dict[str, np.ndarray]]:
    """sin(SoftmaxCrossEntropyLoss(x, target, w)), summed over 3 targets of 13,862 classes, one target's weight
    -2^31 - 1 (an edge value): the loss is about 2e10. Each row's scores are 0 but its first, 1e-3 (the finding's
    were mostly tiny edge values and a few up to 1e-3), so its log-sum-exp sums 13,861 equal terms exp(-1e-3),
    which a compiler that adds in sequence rounds the same way many times."""
    x_t, w_t, one = TensorType("float64", (3, CLASSES)), TensorType("float64", (CLASSES,)), TensorType("float64", ())
    g = Graph(inputs=[Value("w", w_t), Value("x", x_t)],
              constants={"target": np.array([CLASSES - 1, 1, 128], np.int64)},
              nodes=[Node("softmax_cross_entropy_loss", ["x", "target", "w"], [Value("loss", one)],
                          {"ignore_index": -100, "log_prob": 0, "reduction": "sum"}, name="n0"),
                     Node("sin", ["loss"], [Value("s", one)], name="n1")],
              outputs=outputs)
    check_graph(g)
    rng = np.random.default_rng(0)
    w = rng.uniform(-1.0, 1.0, CLASSES)
    w[CLASSES - 1] = -2.0 ** 31 - 1
    x = np.zeros((3, CLASSES))
    x[:, 0] = 1e-3
    return g, {"w": w, "x": x}


def test_a_long_log_sum_exp_legally_off_by_hundreds_of_epsilons_is_not_a_wrong_result():
    """Finding 17: every ONNXRuntime configuration's loss differed from the reference by 2.5e-4 in 2e10 (528
    epsilons of its log-sum), far past one epsilon of the loss's error scale, the bound before: a sum of 13,862
    exponentials is legally off by up to 13,861 half-epsilons in sequence (ops/base.summed_roundings), and sin(2e10)
    turns that into a distance of 1e-4. Now the sin output is ill-conditioned (not judged) and the loss itself is
    judged: ONNXRuntime's equal, a 1% error planted in it a wrong result."""
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.oracle.testcase import Observation
    from dlcfuzz.oracle.verdict import judge
    from op_harness import run_ort

    g, x = long_loss(["loss", "s"])
    ort_loss, ort_sin = run_ort(to_onnx(g), x)
    ref = reference_of(TestCase(g, dict(x), [], seed=0), tries=1)
    assert ref.reason is None and ref.unstable == {1}
    off = abs(float(ort_loss) - float(ref.outputs[0]))
    eps = float(np.finfo(np.float64).eps)
    # the cause: the log-sum-exp's rounding, ten times one epsilon of the error scale without the sum's length (the
    # row's largest score, 1e-3, and 1), within the scale with it; the other weights, at most 1, add little
    weight = 2.0 ** 31 + 1
    assert 10 * eps * (1e-3 + 1.0) * weight < off < eps * (1e-3 + np.log(CLASSES) + (CLASSES - 1) / 2) * weight

    def verdicts(outs: list[np.ndarray]) -> list[tuple[str, str, int]]:
        return [(v.kind, v.category, v.output_index) for v in judge(
            "onnxruntime", lambda m: None, ref.outputs, [Observation("ort-disable", "ok", outputs=outs)], ref.unstable)]

    assert verdicts([ort_loss, ort_sin]) == [("pass", "pass", -1)]
    assert verdicts([ort_loss * 1.01, ort_sin]) == [("bug", "wrong-result", 0)]
    assert verdicts([ort_loss * (1 + 1e-5), ort_sin]) == [("bug", "wrong-result", 0)]  # past float64's 1e-6
    # the finding's own graph, the sin alone: unjudged, where it was a wrong result
    alone, _ = long_loss(["s"])
    assert reference_of(TestCase(alone, dict(x), [], seed=0), tries=1).unstable == {0}
