"""Each false-positive class seen in campaigns is an unknown, never a finding: regression tests built
from their reduced cases, judged by the real compiler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import check_graph
from dlcfuzz.oracle.testcase import TestCase
from dlcfuzz.strategies import Context
from dlcfuzz.strategies import Test as StrategyTest  # not a pytest class
from dlcfuzz.strategies.graph import RandomStrategy

pytest.importorskip("onnxruntime")


def judged(g: Graph, inputs: dict[str, np.ndarray], tmp_path: Path, compiler: str = "onnxruntime",
           config_names: list[str] | None = None, input_sets: int = 1) -> list:
    """The verdicts of the differential strategy on one test, run in a real worker (on the backend's default pair of
    configurations, or on those named; on `input_sets` input sets, the given inputs first)."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.pool import WorkerPool

    backend = get_backend(compiler)
    configs = [backend.configs()[n] for n in config_names] if config_names else list(backend.default_pair())
    ctx = Context(compiler=compiler, seed=0, params={"ops": 1, "only_ops": []}, configs=configs, configs_picked=False,
                  backend=backend, version=backend.version(), store=None, coverage=None, out=tmp_path, reduce=False,
                  seconds=60, max_tests=1, reducer_pool=lambda: None)
    tc = TestCase(g, inputs, configs, seed=1, compiler=compiler, input_sets=input_sets)
    with WorkerPool("dlcfuzz.exec.worker:make_handler", {"compiler": compiler}, jobs=1, timeout_s=60) as pool:
        res = pool.run(tc.to_bytes())
    return RandomStrategy(ctx).judge(StrategyTest(0, 1, tc.to_bytes(), tc), res).verdicts


def test_zero_constant_divisor_is_undefined_not_a_bug(tmp_path):
    """ONNX leaves integer division by zero undefined: ORT rejecting the constant divisor (1.32) or
    dying of SIGFPE (1.20) is legal behaviour, not an unexpected error or a crash."""
    for op in ("mod", "div"):
        t = TensorType("int32", (4,))
        g = Graph(inputs=[Value("x", t)], constants={"c": np.array([0, 1, 2, 3], np.int32)},
                  nodes=[Node(op, ["x", "c"], [Value("y", t)], {"fmod": 0} if op == "mod" else {})], outputs=["y"])
        check_graph(g)
        verdicts = judged(g, {"x": np.array([5, 6, 7, 8], np.int32)}, tmp_path)
        assert [v.kind for v in verdicts] == ["unknown"] and verdicts[0].category == "integer-division-by-zero"


def test_a_crash_on_another_input_sets_zero_divisor_is_undefined_not_a_crash(tmp_path):
    """Regression (issue 37's TVM finding 164): a uint32 Mod of an input by its one-input Min (itself), on eight
    input sets. Set 0's inputs hold no zero; the other sets' 64 draws in [0, 5] all do (the reference re-samples
    them and gives up), and TVM's kernel dies of SIGFPE on one of them. The crash was judged by set 0's reference
    alone, so it became a crash finding; every set the dead worker ran is undefined behaviour's to excuse."""
    pytest.importorskip("tvm")
    t = TensorType("uint32", (4, 16))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("min", ["x"], [Value("m", t)], {}),
                                             Node("mod", ["x", "m"], [Value("y", t)], {"fmod": 1})], outputs=["y"])
    check_graph(g)
    x = np.arange(1, 65, dtype=np.uint32).reshape(4, 16)
    verdicts = judged(g, {"x": x}, tmp_path, "tvm", ["tvm-unopt"], input_sets=8)
    assert [(v.kind, v.category) for v in verdicts] == [("unknown", "integer-division-by-zero")]
    # the same test on set 0 alone is defined and passes: the excuse comes from the other sets
    assert [v.kind for v in judged(g, {"x": x}, tmp_path, "tvm", ["tvm-unopt"])] == ["pass"]


def test_an_int64_shrink_computed_exactly_is_correct_too(tmp_path):
    """Regression (issue 37's TVM finding 212): Shrink (lambd 0, bias 0) of int64 values past 2^53, then Mod
    (fmod) by -2. The reference computes Shrink in float64, as ONNX's reference does, which rounds
    5120687294167091615 to an even number (Mod gives 0); TVM's ONNX importer keeps the integer (Mod gives 1).
    ONNX does not say which precision Shrink's float attributes meet an integer in: both readings are right."""
    pytest.importorskip("tvm")
    from dlcfuzz import reference

    t = TensorType("int64", (4,))
    g = Graph(inputs=[Value("x", t)], constants={"c": np.array(-2, np.int64)},
              nodes=[Node("shrink", ["x"], [Value("s", t)], {"bias": 0.0, "lambd": 0.0}),
                     Node("mod", ["s", "c"], [Value("y", t)], {"fmod": 1})], outputs=["y"])
    check_graph(g)
    x = np.array([5120687294167091615, -6930516695955406023, 3, 4], np.int64)
    assert reference.run(g, {"x": x})["y"].tolist() == [0, 0, 1, 0]  # the float reading
    assert reference.run(g, {"x": x}, other_readings=True)["y"].tolist() == [1, -1, 1, 0]  # the exact one
    verdicts = judged(g, {"x": x}, tmp_path, "tvm", ["tvm-unopt", "tvm-onnx-opt"])
    assert "bug" not in [v.kind for v in verdicts], verdicts


def test_normalizations_always_have_a_positive_epsilon():
    """Regression (issue 19): an attribute rounded to 4 decimals turned epsilon 1e-5 into 0, and a
    LayerNorm/InstanceNorm of a near-constant row became 0/0 in one configuration and not another."""
    from dlcfuzz.ops import get_op

    rng = np.random.default_rng(0)
    for name in ("layer_norm", "instance_norm", "batch_norm"):
        spec = get_op(name)
        eps = {spec.sample(rng, TensorType("float32", (2, 3, 4, 4)))[1]["epsilon"] for _ in range(60)}
        assert min(eps) > 0 and any(abs(e - 1e-5) < 1e-9 for e in eps), (name, eps)


def test_integer_pow_of_a_negative_base_to_a_fractional_power_is_undefined():
    """Regression (XLA and OpenVINO hirgen campaigns): pow with an int32 base and a float exponent is
    NaN inside the operator for a negative base; converting that to int32 is undefined (NumPy gives
    INT_MIN, XLA 0), so the reference is unknown, not something to compare."""
    from dlcfuzz.oracle.policy import reference_of

    t, e = TensorType("int32", (3,)), TensorType("float32", (3,))
    g = Graph(inputs=[Value("x", t), Value("y", e)], nodes=[Node("pow", ["x", "y"], [Value("z", t)])], outputs=["z"])
    check_graph(g)
    tc = TestCase(g, {"x": np.array([-2, 3, 4], np.int32), "y": np.array([0.5, 2.0, 1.0], np.float32)}, [])
    ref = reference_of(tc, tries=1)
    assert ref.outputs is None and ref.reason == "integer-overflow"
    tc.inputs["x"] = np.array([2, 3, 4], np.int32)  # a defined case stays judged
    assert reference_of(tc, tries=1).outputs is not None


def test_signed_minimum_divided_by_minus_one_is_undefined_not_a_crash(tmp_path):
    """Regression (hirgen on ORT 1.32): int64 Div of the minimum by a constant -1 killed the worker with
    SIGFPE (x86's idiv traps on the unrepresentable quotient, as on a zero divisor). That is undefined
    behaviour of the program: the reference refuses such inputs, the worker samples others (or the test
    is an unknown), and it is never a crash finding."""
    import subprocess
    import sys

    from dlcfuzz import reference

    t = TensorType("int64", (4,))
    x = np.array([np.iinfo(np.int64).min, 4, -3, 0], np.int64)
    for op in ("div", "mod"):
        g = Graph(inputs=[Value("x", t)], constants={"c": np.array(-1, np.int64)},
                  nodes=[Node(op, ["x", "c"], [Value("y", t)], {"fmod": 1} if op == "mod" else {})], outputs=["y"])
        check_graph(g)
        verdicts = judged(g, {"x": x}, tmp_path)
        assert verdicts and all(v.kind == "pass" or v.category == "integer-division-overflow" for v in verdicts), op
    with pytest.raises(reference.IntegerDivisionOverflow):
        reference.run(g, {"x": x}, check_overflow=True)
    # the compiler does trap on it: without the policy this test would be a crash finding
    from dlcfuzz.lower.onnx import to_onnx

    path = tmp_path / "div.onnx"
    g = Graph(inputs=[Value("x", t)], constants={"c": np.array(-1, np.int64)},
              nodes=[Node("div", ["x", "c"], [Value("y", t)], {})], outputs=["y"])
    path.write_bytes(to_onnx(g).SerializeToString())
    code = ("import numpy as np, onnxruntime as ort, sys; so = ort.SessionOptions(); "
            "so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL; "
            "s = ort.InferenceSession(sys.argv[1], so, providers=['CPUExecutionProvider']); "
            f"s.run(None, {{'x': np.array({x.tolist()}, np.int64)}})")
    assert subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True).returncode != 0


def test_fmod_by_a_tiny_divisor_is_ill_conditioned_not_a_bug(tmp_path):
    """Regression (auto on ORT 1.32): Mod(fmod=1) of 0.707 by sigmoid(-275.6) = 2.9e-120 in float64.
    The quotient is 2.4e119, so the last ulp of the sigmoid decides the result: ORT's exp and NumPy's
    differ there, legally. fmod's near tie marks the output ill-conditioned: an unknown."""
    t = TensorType("float64", (3,))
    g = Graph(inputs=[Value("a", t), Value("b", t)],
              nodes=[Node("sigmoid", ["b"], [Value("s", t)], {}),
                     Node("mod", ["a", "s"], [Value("y", t)], {"fmod": 1})], outputs=["y"])
    check_graph(g)
    x = {"a": np.array([0.7071067811865476, 0.5, 2.0]), "b": np.array([-275.2490623136715, 0.3, 1.0])}
    verdicts = judged(g, x, tmp_path)
    assert "bug" not in [v.kind for v in verdicts]
    assert "ill-conditioned-output" in [v.category for v in verdicts]


def test_normalization_whose_squared_deviations_overflow_float32_is_not_compared(tmp_path):
    """Regression (auto on ORT 1.32): LayerNormalization of a float32 row holding 6.5e29. ONNX computes
    (x - mean)^2 in its float32 stash type, which overflows: ORT returns the bias there, a wider
    accumulation would return the exact value. Implementation-defined, so never a wrong result."""
    t, p = TensorType("float32", (2, 3)), TensorType("float32", (3,))
    g = Graph(inputs=[Value("x", t), Value("s", p), Value("b", p)],
              nodes=[Node("layer_norm", ["x", "s", "b"], [Value("y", t)], {"axis": -1, "epsilon": 1e-3})],
              outputs=["y"])
    check_graph(g)
    x = {"x": np.array([[6.481597e29, -1.0, 2.0], [0.5, 1.5, -2.0]], np.float32),
         "s": np.array([-0.28, -0.92, 1.82], np.float32), "b": np.array([-0.2, 1.51, 1.26], np.float32)}
    verdicts = judged(g, x, tmp_path)
    assert "bug" not in [v.kind for v in verdicts], verdicts


def sigmoid_tan_div() -> Graph:
    """The reduced case of issue 19's `sigmoid -> tan -> div`: a / tan(sigmoid(x))."""
    t = TensorType("float32", (6,))
    g = Graph(inputs=[Value("x", t), Value("a", t)],
              nodes=[Node("sigmoid", ["x"], [Value("s", t)], name="n0"), Node("tan", ["s"], [Value("u", t)], name="n1"),
                     Node("div", ["a", "u"], [Value("y", t)], name="n2")], outputs=["y"])
    check_graph(g)
    return g


def test_sigmoid_tan_div_zero_over_a_rounding_zero_is_unknown_on_every_ort_configuration(tmp_path):
    """Regression (issue 19, "0/0 in one and not the other"): sigmoid(-20) = 2e-9, which ORT computes
    as exactly 0 (within sigmoid's absolute error), so 0 / tan(sigmoid(x)) is 0/0 = NaN on ORT and 0
    in the reference. The policy "rounding-induced zero" (reference.run(perturb=ZERO), one of the
    sensitivity evaluations of oracle/policy.unstable_outputs) makes such an output ill-conditioned:
    an unknown, never a finding. Without that evaluation the same verdicts are a wrong-result."""
    from dlcfuzz import reference
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.verdict import judge

    g = sigmoid_tan_div()
    x = {"x": np.array([-16, -18, -20, -25, -30, -40], np.float32), "a": np.zeros(6, np.float32)}
    backend = get_backend("onnxruntime")
    configs = list(backend.configs()[f"ort-{lvl}"] for lvl in ("disable", "basic", "extended", "all"))
    tc = TestCase(g, {k: v.copy() for k, v in x.items()}, configs, seed=1, compiler="onnxruntime")
    ref = reference_of(tc)
    assert ref.outputs is not None and tc.inputs["x"].tolist() == x["x"].tolist()  # judged on these inputs
    observations = run_configs(backend, tc)
    assert all(o.status == "ok" and np.isnan(o.outputs[0]).any() for o in observations)  # ORT's 0/0
    verdicts = judge("onnxruntime", backend.expected_error, ref.outputs, observations, ref.unstable)
    assert ref.unstable == {0} and "bug" not in [v.kind for v in verdicts]  # output 0 is not compared
    # the policy is what decides: every other sensitivity evaluation keeps the output finite and close
    rng = np.random.default_rng(0)
    for how in (1.0, -1.0, rng):
        y = reference.run(g, x, perturb=how)["y"]
        assert np.isfinite(y).all() and np.allclose(y, ref.outputs[0])
    assert not np.isfinite(reference.run(g, x, perturb=reference.ZERO)["y"]).all()
    without = judge("onnxruntime", backend.expected_error, ref.outputs, observations, set())
    assert any(v.kind == "bug" and v.category == "wrong-result" for v in without), without
    # and in a real worker, with the default pair: an unknown
    in_worker = judged(g, x, tmp_path)
    assert "bug" not in [v.kind for v in in_worker] and "ill-conditioned-output" in [v.category for v in in_worker]


@pytest.mark.parametrize("op,attrs,x", [
    # sqrt(sum of squares) = 139503 fits int32, the sum of squares (1.9e10) does not: TVM 0.27 gave INT_MIN
    ("reduce_l2", {"axes": [0, 1], "keepdims": 1, "noop_with_empty_axes": 0}, np.full((3, 2), 56953, np.int32)),
    ("reduce_mean", {"axes": [0], "keepdims": 0, "noop_with_empty_axes": 0}, np.array([2**31 - 1, 2**31 - 1], np.int32)),
])
def test_an_integer_intermediate_that_overflows_is_undefined_though_the_result_fits(op, attrs, x):
    from dlcfuzz import reference
    from dlcfuzz.ir import Graph, Node, TensorType, Value
    from dlcfuzz.ops import get_op
    from dlcfuzz.reference import IntegerOverflow

    t = TensorType.of(x)
    (out,) = get_op(op).infer([t], attrs)
    g = Graph(inputs=[Value("x", t)], nodes=[Node(op, ["x"], [Value("y", out)], attrs, name="n")], outputs=["y"])
    y = np.asarray(reference.outputs(g, {"x": x})[0], np.float64)
    assert np.abs(y).max() <= np.iinfo(np.int32).max  # the result itself fits
    with pytest.raises(IntegerOverflow):
        reference.run(g, {"x": x}, check_overflow=True)
    small = (x // 1000).astype(np.int32)  # and a sum that fits is judged
    reference.run(g, {"x": small}, check_overflow=True)


def test_a_configuration_that_writes_into_a_fed_buffer_does_not_change_the_next_ones_inputs(tmp_path):
    """Regression (hirgen on ORT 1.32: ten 'new' inconsistency clusters `batch_norm,<op>` in 2 minutes):
    ORT's BatchNormalization in training mode aliases its running-mean output to the mean input
    (by design: "We alias the running mean to the mean so it stays preserved across multiple batches",
    batch_norm.cc), so when that output feeds another node, `sess.run` updates the caller's mean array
    in place. Fed the same arrays, the second configuration saw a moved mean and differed from the
    first. Every configuration now gets its own copy, in the worker and in the reproducer."""
    import subprocess
    import sys

    from dlcfuzz.backends import get_backend

    t3, v = TensorType("float64", (3,)), TensorType("float64", (3, 3, 6))
    g = Graph(inputs=[Value("x", v), Value("scale", t3), Value("mean", t3)],
              constants={"bias": np.array([-0.4, 0.5, 0.8]), "var": np.array([1.7, 1.0, 1.6])},
              nodes=[Node("batch_norm", ["x", "scale", "bias", "mean", "var"],
                          [Value("y", v), Value("running_mean", t3), Value("running_var", t3)],
                          {"epsilon": 1e-3, "momentum": 0.99, "training_mode": 1}),
                     Node("neg", ["running_mean"], [Value("out", t3)])], outputs=["out"])
    check_graph(g)
    rng = np.random.default_rng(3)
    inputs = {"x": rng.uniform(0, 10, (3, 3, 6)), "scale": rng.uniform(-1, 1, 3), "mean": rng.uniform(-1, 1, 3)}
    verdicts = judged(g, inputs, tmp_path)
    assert [v.kind for v in verdicts] == ["pass"], [(v.kind, v.category, v.detail) for v in verdicts]

    backend = get_backend("onnxruntime")
    configs = list(backend.default_pair())
    script = tmp_path / "repro.py"
    script.write_text(backend.reproducer(g, inputs, None, configs, "inconsistency", "t", "d"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "BUG REPRODUCED" not in done.stdout, done.stdout + done.stderr


def test_a_kernels_documented_refusal_of_a_mode_is_unsupported_not_a_bug(tmp_path):
    """ORT's Resize refuses cubic mode on a 4-D input whose outer scales are not 1 ("'Cubic' mode only
    support 2-D inputs ('Bicubic') or 4-D inputs with the corresponding outermost 2 scale values being 1"),
    by an explicit check in every release (an onnxruntime 1.20.1 campaign reported it as an unexpected
    error). A refusal in those words is an expected error; the same resize with outer scales 1 runs."""
    t = TensorType("float32", (1, 2, 3, 2))
    for scales, want in (([2.0, 1.0, 3.0, 1.0], "expected-error:unsupported"), ([1.0, 1.0, 2.0, 2.0], None)):
        out = TensorType("float32", tuple(int(d * s) for d, s in zip(t.shape, scales)))
        g = Graph(inputs=[Value("x", t)], outputs=["y"], nodes=[Node("resize", ["x"], [Value("y", out)], attrs={
            "antialias": 0, "coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.75,
            "exclude_outside": 0, "mode": "cubic", "nearest_mode": "round_prefer_floor", "scales": scales})])
        check_graph(g)
        verdicts = judged(g, {"x": np.linspace(-1, 1, 12, dtype=np.float32).reshape(t.shape)}, tmp_path)
        if want is None:
            assert [v.kind for v in verdicts] == ["pass"], verdicts
        else:
            assert verdicts and {(v.kind, v.category) for v in verdicts} == {("unknown", want)}, verdicts


def test_a_float_product_whose_partial_products_overflow_in_some_order_is_not_compared(tmp_path):
    """Regression (ORT 1.32 acceptance campaign, finding 41): ReduceProd of float32 [2, 3] holding 3e37, 8e20 and a 0.
    The exact product is 0, but 3e37 * 8e20 overflows to inf, and inf * 0 is NaN: ORT's order multiplies them first
    (NaN), the reference's reaches the 0 first (0); elsewhere it is the other way round. The order is the compiler's,
    so the output is ill-conditioned, never a wrong result; a product within range is still compared."""
    from dlcfuzz.ops import get_op

    t = TensorType("float32", (2, 3))
    attrs = {"axes": [-2, 1], "keepdims": 0, "noop_with_empty_axes": 0}
    g = Graph(inputs=[Value("x", t)], nodes=[Node("reduce_prod", ["x"], [Value("y", TensorType("float32", ()))], attrs)],
              outputs=["y"])
    check_graph(g)
    x = np.array([[3e37, 0.0, 8e20], [1.0, 1.0, 1.0]], np.float32)
    verdicts = judged(g, {"x": x}, tmp_path)
    assert "bug" not in [v.kind for v in verdicts], [v.detail for v in verdicts]
    assert "ill-conditioned-output" in [v.category for v in verdicts]
    prod = get_op("reduce_prod")
    assert not prod.near_tie([np.array([[3e18, 8e15, 0.0], [1.0, 1.0, 1.0]], np.float32)], attrs, 1e-3)
    assert prod.near_tie([np.array([[1e-30, 1e-20, np.inf], [1.0, 1.0, 1.0]], np.float32)], attrs, 1e-3)  # underflow
    assert not get_op("reduce_sum").near_tie([x], attrs, 1e-3)


@pytest.mark.parametrize("op", ["cast", "cast_like"])
def test_a_computed_float_cast_to_an_integer_out_of_its_range_is_undefined(op):
    """A float converted to an integer type out of that type's range (or NaN) is undefined behaviour (the C++
    conversion; LLVM's fptosi gives poison): TVM 0.27 gave -32768 where NumPy wraps -1.84e9 to 26707 (issue 36's
    TVM acceptance campaign, a cast_like whose input a cut producer had computed). A generated input keeps inside
    the cast's domain; a computed value did not, and the reference judged it. An integer narrowed still wraps."""
    from dlcfuzz import reference
    from dlcfuzz.ops import get_op
    from dlcfuzz.reference import IntegerOverflow

    x_t, like = TensorType("float64", (3,)), TensorType("int16", (1,))
    attrs = {"to": "int16"} if op == "cast" else {}
    ins = [x_t] if op == "cast" else [x_t, like]
    (out,) = get_op(op).infer(ins, attrs)
    g = Graph(inputs=[Value("x", x_t), *([Value("k", like)] if op == "cast_like" else [])],
              nodes=[Node("mul", ["x", "x"], [Value("sq", x_t)], {}, name="square"),
                     Node(op, ["sq", *(["k"] if op == "cast_like" else [])], [Value("y", out)], attrs, name="n")],
              outputs=["y"])
    check_graph(g)
    feeds = {"k": np.zeros(1, np.int16)} if op == "cast_like" else {}
    with pytest.raises(IntegerOverflow, match="overflows int16"):
        reference.run(g, {"x": np.array([1.0, -3.0, 42893.0]), **feeds}, check_overflow=True)  # 1.84e9
    with pytest.raises(IntegerOverflow):
        reference.run(g, {"x": np.array([1.0, np.nan, 2.0]), **feeds}, check_overflow=True)
    y = reference.run(g, {"x": np.array([1.5, -3.0, 181.0]), **feeds}, check_overflow=True)["y"]
    assert y.tolist() == [2, 9, 32761]  # in range: judged, truncated toward zero
    narrow = Graph(inputs=[Value("i", TensorType("int64", (1,)))],
                   nodes=[Node("cast", ["i"], [Value("j", TensorType("int16", (1,)))], {"to": "int16"})],
                   outputs=["j"])
    assert reference.run(narrow, {"i": np.array([70000])}, check_overflow=True)["j"].tolist() == [4464]


def test_a_nearest_grid_sample_at_a_half_pixel_inside_a_loop_is_ill_conditioned_not_a_bug(tmp_path):
    """Issue 40's ORT campaign: a 5-D GridSample (nearest) in a Loop body, on a grid of tiny edge values, whose
    positions 0.5 + 1e-10 the float64 reference rounds up and ORT's float32 (0.5, a tie rounded to even) down: a
    wrong result while the same node at top level is ill-conditioned (OpSpec.near_tie). A region's body is checked
    for near ties on each trip now, so the loop's output is not compared either."""
    x, grid = TensorType("float32", (1, 1, 1, 2)), TensorType("float32", (1, 1, 1, 2))
    y = TensorType("float32", (1, 1, 1, 1))
    attrs = {"align_corners": 0, "mode": "nearest", "padding_mode": "zeros"}
    body = Graph(inputs=[Value("i", TensorType("int64", ())), Value("cond", TensorType("bool", ())), Value("acc", y),
                         Value("x", x), Value("grid", grid)],
                 nodes=[Node("grid_sample", ["x", "grid"], [Value("s", y)], attrs, name="gs")],
                 outputs=["cond", "s"], name="body")
    g = Graph(inputs=[Value("x", x), Value("grid", grid)],
              constants={"trips": np.array(1, np.int64), "go": np.array(True), "init": np.zeros((1, 1, 1, 1), np.float32)},
              nodes=[Node("loop", ["trips", "go", "init", "x", "grid"], [Value("out", y)], {"body": body, "num_carried": 1},
                          name="loop")],
              outputs=["out"])
    check_graph(g)
    inputs = {"x": np.array([1.0, 2.0], np.float32).reshape(1, 1, 1, 2),
              "grid": np.array([1e-10, 0.0], np.float32).reshape(1, 1, 1, 2)}  # (x, y): x at 0.5 + 1e-10 pixels
    verdicts = judged(g, inputs, tmp_path)
    assert not [v for v in verdicts if v.kind == "bug"], [v.detail for v in verdicts]
    assert "ill-conditioned-output" in [v.category for v in verdicts], [v.category for v in verdicts]


def test_an_integer_scatter_reduction_that_overflows_is_undefined_not_a_bug():
    """Issue 37's edge values in issue 40's OpenVINO campaign: ScatterElements (reduction mul) of an int16 32767 by
    updates -3 and -2 is 196602, past int16 (numpy wraps it to -6, OpenVINO's CPU plugin does not): an integer
    overflow, implementation-defined as for Mul itself, so the reference is not judged; a product that fits is."""
    from dlcfuzz import reference
    from dlcfuzz.reference import IntegerOverflow

    t, u = TensorType("int16", (3,)), TensorType("int16", (2,))
    attrs = {"axis": 0, "indices": [1, 1], "reduction": "mul", "index_dtype": "int64"}
    g = Graph(inputs=[Value("x", t), Value("u", u)],
              nodes=[Node("scatter_elements", ["x", "u"], [Value("y", t)], attrs, name="s")], outputs=["y"])
    check_graph(g)
    with pytest.raises(IntegerOverflow):
        reference.run(g, {"x": np.array([1, 32767, 2], np.int16), "u": np.array([-3, -2], np.int16)}, check_overflow=True)
    fits = reference.run(g, {"x": np.array([1, 300, 2], np.int16), "u": np.array([-3, -2], np.int16)}, check_overflow=True)
    assert fits["y"].tolist() == [1, 1800, 2]


def _normalized_product(n: int) -> Graph:
    t = TensorType("float32", (n,))
    g = Graph(inputs=[Value("x", t)],
              nodes=[Node("mean_variance_norm", ["x"], [Value("y", t)], {"axes": [0]}),
                     Node("reduce_prod", ["y"], [Value("p", TensorType("float32", ()))], {"axes": [0], "keepdims": 0, "noop_with_empty_axes": 0})],
              outputs=["p"])
    check_graph(g)
    return g


def test_a_product_of_many_normalized_values_is_ill_conditioned_not_a_bug(tmp_path):
    """Regression (the default campaign, `scripts/fuzz.sh`, on ORT 1.32; finding 10): ReduceProd of a
    MeanVarianceNormalization over 1,999 values of +-1 (an edge size with boundary values). ORT's float32
    deviation is 11 ulps off, which scales every output by the same 1.3e-6: the product of 1,999 of them moves by
    2.6e-3. Moving the values up or down by a legal error cancels between the positive and the negative ones; moving
    their magnitudes (reference.AWAY_FROM_ZERO) shows the product ill-conditioned: an unknown. A short product
    stays judged."""
    x = np.repeat(np.array([-1.0, 1.0], np.float32), [1004, 995])  # the finding's values, sorted: ORT is 4e-3 off
    verdicts = judged(_normalized_product(1999), {"x": x}, tmp_path)
    assert "bug" not in [v.kind for v in verdicts], [v.detail for v in verdicts]
    assert "ill-conditioned-output" in [v.category for v in verdicts]
    short = judged(_normalized_product(6), {"x": np.array([1.0, -1.0, 0.5, -0.25, 2.0, 1.5], np.float32)}, tmp_path)
    assert [v.kind for v in short] and {v.kind for v in short} == {"pass"}, [(v.kind, v.category) for v in short]
