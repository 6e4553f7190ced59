"""Bugs of onnxruntime that dlcfuzz found and keeps in its known-bugs register: each still fires the
oracle through the real worker, matches its register entry, and its standalone reproducer shows it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import check_graph
from tests.test_false_positives import judged

pytest.importorskip("onnxruntime")


def reproduce(g: Graph, inputs: dict, expected: list | None, category: str, tmp_path) -> subprocess.CompletedProcess:
    """Run the finding's standalone reproducer (onnx, onnxruntime and numpy only)."""
    from dlcfuzz.backends import get_backend

    backend = get_backend("onnxruntime")
    script = tmp_path / "repro.py"
    script.write_text(backend.reproducer(g, inputs, expected, list(backend.default_pair()), category, "t", "d"))
    assert "dlcfuzz" not in "".join(ln for ln in script.read_text().splitlines(True) if ln.startswith(("import", "from")))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)


def known_as(category: str, ops: set[str], dtypes: set[str], configs: tuple[str, ...], detail: str) -> str | None:
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    facts = FindingFacts(id=1, compiler="onnxruntime", category=category, configs=configs, opts="",
                         ops=frozenset(ops), dtypes=frozenset(dtypes), message="")
    k = Register(use_env=False).match(facts, detail)
    return k.id if k else None


def test_a_second_reader_of_the_overwritten_mean_is_still_a_bug_and_known(tmp_path):
    """The other side of test_false_positives' fresh inputs per configuration: when the graph itself reads
    BatchNormalization's mean input after the node (`sub(running_mean, mean)`), ORT's in-place write makes every configuration wrong. That
    stays a wrong-result finding (fresh inputs per configuration do not hide it), matches the register's
    entry, and the standalone reproducer shows it."""
    t2, x = TensorType("float32", (2,)), TensorType("float32", (4, 2))
    g = Graph(inputs=[Value("x", x), Value("mean", t2)],
              constants={"scale": np.ones(2, np.float32), "bias": np.zeros(2, np.float32),
                         "var": np.ones(2, np.float32)},
              nodes=[Node("batch_norm", ["x", "scale", "bias", "mean", "var"],
                          [Value("y", x), Value("running_mean", t2), Value("running_var", t2)],
                          {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 1}),
                     Node("sub", ["running_mean", "mean"], [Value("delta", t2)])], outputs=["delta"])
    check_graph(g)
    inputs = {"x": np.arange(1, 9, dtype=np.float32).reshape(4, 2), "mean": np.zeros(2, np.float32)}
    verdicts = judged(g, inputs, tmp_path)
    assert [(v.kind, v.category) for v in verdicts] == [("bug", "wrong-result")], [v.detail for v in verdicts]
    from dlcfuzz.backends import get_backend

    configs = tuple(c.name for c in get_backend("onnxruntime").default_pair())
    assert known_as("wrong-result", {"batch_norm", "sub"}, {"float32"}, configs, verdicts[0].detail) == \
        "ort-batchnorm-training-overwrites-mean-input"
    done = reproduce(g, inputs, [np.array([0.4, 0.5], np.float32)], "wrong-result", tmp_path)
    assert done.returncode == 1 and "BUG REPRODUCED" in done.stdout, done.stdout + done.stderr


def test_instance_norm_of_an_empty_intermediate_crashes_and_is_known(tmp_path):
    """InstanceNormalization of Relu's empty output dies with SIGSEGV (1.20.1, 1.32.0; fed the empty
    tensor directly it runs); the worker attributes the crash to the run, the register knows it, the
    standalone script shows it."""
    e, s = TensorType("float32", (1, 1, 0, 1)), TensorType("float32", (1,))
    g = Graph(inputs=[Value("x", e), Value("scale", s), Value("bias", s)],
              nodes=[Node("relu", ["x"], [Value("r", e)]),
                     Node("instance_norm", ["r", "scale", "bias"], [Value("y", e)], {"epsilon": 1e-3})],
              outputs=["y"])
    check_graph(g)
    inputs = {"x": np.ones((1, 1, 0, 1), np.float32), "scale": np.ones(1, np.float32), "bias": np.zeros(1, np.float32)}
    verdicts = judged(g, inputs, tmp_path)
    assert [(v.kind, v.category) for v in verdicts] == [("bug", "crash")], [v.detail for v in verdicts]
    assert "SIGSEGV" in verdicts[0].detail
    assert known_as("crash", {"relu", "instance_norm"}, {"float32"}, ("ort-disable",), verdicts[0].detail) == \
        "ort-instance-norm-empty-intermediate-segfault"
    done = reproduce(g, inputs, None, "crash", tmp_path)
    assert done.returncode != 0 and done.returncode != 1, done.stdout + done.stderr


def test_a_script_counts_the_same_failure_under_another_releases_error_class(tmp_path):
    """FuseReluClip's int64 error (microsoft/onnxruntime#11836) is RuntimeException in onnxruntime 1.20.1 and
    Fail in 1.32.0: a 1.20.1 finding's script expected RuntimeException and called the bug fixed. Any of
    onnxruntime's status exceptions counts for one of them; an exception of another kind still does not."""
    from dlcfuzz.backends import get_backend

    t = TensorType("int64", (2, 3))
    g = Graph(inputs=[Value("x", t)], outputs=["z"], nodes=[
        Node("relu", ["x"], [Value("r", t)]), Node("clip", ["r"], [Value("z", t)], attrs={"min": 1, "max": 5})])
    backend = get_backend("onnxruntime")
    old_detail = ("RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Exception during initialization: "
                  "relu_clip_fusion.cc:52 Unexpected data type for Clip 'min' input of 7")
    script = tmp_path / "repro.py"
    for detail, status in ((old_detail, 1), ("MemoryError: out of memory", 0)):
        script.write_text(backend.reproducer(g, {"x": np.arange(-3, 3).reshape(2, 3)}, None,
                                             [backend.configs()["ort-all"]], "unexpected-error", "t", detail))
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert r.returncode == status and "Unexpected data type for Clip" in r.stdout, r.stdout + r.stderr


def test_optimizations_of_an_oatest_campaign_are_bugs_and_known(tmp_path):
    """Two optimization bugs an oatest campaign's pattern variants found (onnxruntime 1.32.0): DivMulFusion on
    integers (`1/x * y` becomes `y / x`) and LayerNormFusion with a Pow exponent that is not 2. Each is a bug
    through the real worker at the default pair and matches its register entry under its optimization."""
    ints = TensorType("int32", (4,))
    div_mul = Graph(inputs=[Value("x", ints), Value("y", ints)], constants={"one": np.array(1, np.int32)},
                    nodes=[Node("div", ["one", "x"], [Value("r", ints)]), Node("mul", ["r", "y"], [Value("z", ints)])],
                    outputs=["z"])
    t, col = TensorType("float32", (2, 4)), TensorType("float32", (2, 1))
    mean = {"keepdims": 1, "axes": [-1], "noop_with_empty_axes": 0}
    layer_norm = Graph(
        inputs=[Value("x", t)], constants={"e": np.array(3, np.float32), "eps": np.array(1e-5, np.float32),
                                      "g": np.ones(4, np.float32), "b": np.zeros(4, np.float32)},
        nodes=[Node("reduce_mean", ["x"], [Value("m", col)], mean), Node("sub", ["x", "m"], [Value("d", t)]),
               Node("pow", ["d", "e"], [Value("p", t)]), Node("reduce_mean", ["p"], [Value("v", col)], mean),
               Node("add", ["v", "eps"], [Value("ve", col)]), Node("sqrt", ["ve"], [Value("s", col)]),
               Node("div", ["d", "s"], [Value("n", t)]), Node("mul", ["n", "g"], [Value("ng", t)]),
               Node("add", ["ng", "b"], [Value("y", t)])], outputs=["y"])
    cases = [(div_mul, {"x": np.array([1, 2, 3, 4], np.int32), "y": np.array([5, 6, 7, 8], np.int32)},
              "DivMulFusion", "ort-div-mul-fusion-integer"),
             (layer_norm, {"x": np.array([[0, 0, 0, 4], [1, 1, 2, 8]], np.float32)},  # skewed: mean cube > 0
              "LayerNormFusionL1", "ort-layer-norm-fusion-pow-exponent")]
    for g, inputs, optimization, entry in cases:
        check_graph(g)
        verdicts = judged(g, inputs, tmp_path)
        assert [v.kind for v in verdicts] == ["bug"], (entry, [v.detail for v in verdicts])
        category, dtype = verdicts[0].category, g.inputs[0].type.dtype
        assert known_as(category, {n.op for n in g.nodes}, {dtype}, ("ort-all", optimization), "") == entry
        assert known_as(category, {n.op for n in g.nodes}, {dtype}, ("ort-all", "ConstantFolding"), "") is None
    # an RMS-norm's fusion over the same operators is another optimization, not this entry's
    assert known_as("wrong-result", {"pow", "reduce_mean", "sqrt", "div"}, {"float32"},
                    ("ort-all", "SimplifiedLayerNormFusion"), "") != "ort-layer-norm-fusion-pow-exponent"


def test_qdq_propagation_at_opset_21_is_rejected_and_known(tmp_path):
    """An int8 Q/DQ pair before a Reshape, at opset 21 (a uint16 pair raises it): QDQPropagationTransformer's
    inserted QuantizeLinear carries output_dtype INT8, QDQS8ToU8Transformer moves its zero point to uint8, and the
    session fails (onnxruntime 1.32.0; microsoft/onnxruntime#25526). A bug through the real worker, matched by its
    register entry, shown by the standalone reproducer."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.zoo.builder import Builder

    b = Builder("qdq_reshape", 0)
    x = b.input("x", (3, 4))
    q = b.op("quantize_linear", [x], "q", scale=0.0625, zero_point=0, to="int8")
    r = b.op("reshape", [b.op("dequantize_linear", [q], "dq", scale=0.0625, zero_point=0)], "r", shape=[4, 3])
    q16 = b.op("quantize_linear", [x], "q16", scale=0.0625, zero_point=0, to="uint16")
    g = b.outputs(r, b.op("dequantize_linear", [q16], "dq16", scale=0.0625, zero_point=0))
    check_graph(g)
    inputs = {"x": np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)}
    verdicts = judged(g, inputs, tmp_path)
    assert [(v.kind, v.category) for v in verdicts] == [("bug", "unexpected-error")], [v.detail for v in verdicts]
    assert "output_dtype INT8 does not match y_zero_point type UINT8" in verdicts[0].detail
    configs = tuple(c.name for c in get_backend("onnxruntime").default_pair())
    assert known_as("unexpected-error", {n.op for n in g.nodes}, {"float32"}, configs, verdicts[0].detail) == \
        "ort-qdq-s8-to-u8-keeps-output-dtype"
    done = reproduce(g, inputs, None, "unexpected-error", tmp_path)
    assert done.returncode == 1 and "output_dtype INT8" in done.stdout, done.stdout + done.stderr


def test_int64_sum_beyond_two_to_the_53_is_inexact_and_known(tmp_path):
    """ReduceSum of int64 [2^53+1, 1, 1] gives 9007199254740994 in every configuration of onnxruntime 1.32.0
    (as if summed in double): an exact reference makes it a wrong-result finding that the register knows,
    and the standalone script shows it."""
    x, y = TensorType("int64", (3,)), TensorType("int64", ())
    g = Graph(inputs=[Value("x", x)],
              nodes=[Node("reduce_sum", ["x"], [Value("y", y)], {"axes": [], "keepdims": 0, "noop_with_empty_axes": 0})],
              outputs=["y"])
    check_graph(g)
    inputs = {"x": np.array([2**53 + 1, 1, 1], np.int64)}
    verdicts = judged(g, inputs, tmp_path)
    assert [(v.kind, v.category) for v in verdicts] == [("bug", "wrong-result")], [v.detail for v in verdicts]
    from dlcfuzz.backends import get_backend

    configs = tuple(c.name for c in get_backend("onnxruntime").default_pair())
    assert known_as("wrong-result", {"reduce_sum"}, {"int64"}, configs, verdicts[0].detail) == \
        "ort-int64-reduce-beyond-2-53"
    # issue 40's acceptance campaign: ReduceProd in a Scan body, exact Min and ScatterElements after it
    region_ops = {"scan", "gather_elements", "reduce_prod", "less", "min", "scatter_elements"}
    big = "differ from the reference at output 3: distance 1.22e-16 > 0 (flat index 0: np.int64(8409721940434690048) " \
          "vs np.int64(8409721940434690723))"
    assert known_as("wrong-result", region_ops, {"int64", "bool"}, configs, big) == "ort-int64-reduce-beyond-2-53"
    small = "differ from the reference at output 3: distance 1 > 0 (flat index 0: np.int64(7) vs np.int64(8))"
    assert known_as("wrong-result", region_ops, {"int64", "bool"}, configs, small) is None
    done = reproduce(g, inputs, [np.array(2**53 + 3, np.int64)], "wrong-result", tmp_path)
    assert done.returncode == 1 and "BUG REPRODUCED" in done.stdout, done.stdout + done.stderr


def _known_finding(category: str, ops: set[str], dtypes: set[str], opts: str, reason: str, detail: str) -> str | None:
    """The register entry a finding of ort-disable and ort-all with this key matches (None: a new bug)."""
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    kind = {"wrong-result": "wrong"}.get(category, category)
    key = f"{kind}|onnxruntime|ort-disable,ort-all|{reason}|ops={','.join(sorted(ops))}|opts={opts or 'none'}"
    facts = FindingFacts(id=1, compiler="onnxruntime", category=category, configs=("ort-disable", "ort-all"),
                         opts=opts, ops=frozenset(ops), dtypes=frozenset(dtypes), message="", key=key, reason=reason)
    k = Register(use_env=False).match(facts, detail)
    return k.id if k else None


def _lse_at_opset(x: np.ndarray, opset: int) -> np.ndarray:
    """ReduceLogSumExp over every axis of `x`, a model of onnx and onnxruntime alone."""
    import onnxruntime as ort
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], keepdims=0)
    graph = helper.make_graph([node], "lse", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_reduce_log_sum_exp_at_opset_28_overflows_and_is_known():
    """ORT 1.32 acceptance finding 20: at opset 28 onnxruntime runs ReduceLogSumExp as ONNX's function body
    (log of a sum of exps, in double), which overflows where opset 27's kernel is exact. The register knows an inf
    finding of it in float32 or float64; a finding of another reason, or of float16, is another entry's."""
    for dtype, big in ((np.float32, 1000.0), (np.float64, 1e300)):
        x = np.array([big, big], dtype)
        exact = big + np.log(2.0)
        np.testing.assert_allclose(_lse_at_opset(x, 27), exact, rtol=1e-6)
        assert np.isposinf(_lse_at_opset(x, 28)), dtype

    def known(reason: str, dtypes: set[str]) -> str | None:
        return _known_finding("wrong-result", {"mod", "reduce_log_sum_exp"}, dtypes, "", reason,
                              "ort-disable, ort-all differ from the reference at output 0: Inf at different positions")

    assert known("inf", {"float64", "float32"}) == "ort-reducelogsumexp-opset28-function-overflow"
    assert known("value", {"float64", "float32"}) is None
    assert known("inf", {"float16"}) == "ort-reducelogsumexp-float16-overflow"


def test_double_qdq_pairs_of_different_scales_lose_the_first_rounding_and_are_known():
    """ORT 1.32 acceptance finding 48: DoubleQDQPairsRemover (level 1) turns Q(1/16) -> DQ -> Q(1/128) -> DQ into one
    pair of scale 1/128, so 1.92 is rounded once to 1.921875 instead of to 1.9375 and kept there. onnxruntime alone;
    the register knows the inconsistency under that optimization, not a Q/DQ finding of another one."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    scales = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s1", 0.0625), ("s2", 0.0078125))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z"], ["d1"]),
             helper.make_node("QuantizeLinear", ["d1", "s2", "z"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z"], ["y"])]
    graph = helper.make_graph(nodes, "double_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                              [*scales, numpy_helper.from_array(np.array(0, np.uint8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8

    def run(level: str, disabled: list[str] | None = None) -> np.ndarray:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"],
                                       disabled_optimizers=disabled)
        return session.run(None, {"x": np.array([1.92, 0.5, 1.0], np.float32)})[0]

    np.testing.assert_array_equal(run("ORT_DISABLE_ALL"), [1.9375, 0.5, 1.0])
    np.testing.assert_array_equal(run("ORT_ENABLE_BASIC"), [1.921875, 0.5, 1.0])
    np.testing.assert_array_equal(run("ORT_ENABLE_ALL", ["DoubleQDQPairsRemover"]), [1.9375, 0.5, 1.0])

    ops = {"quantize_linear", "dequantize_linear"}
    detail = "ort-all differs from ort-disable and the reference at output 1: distance 0.0234 > 0.001"
    assert _known_finding("inconsistency", ops, {"float32", "uint8"}, "DoubleQDQPairsRemover", "value", detail) == \
        "ort-double-qdq-pairs-remover-drops-first-rounding"
    assert _known_finding("inconsistency", ops, {"float32", "uint8"}, "QDQFinalCleanupTransformer", "value",
                          detail) is None


def test_attention_fusion_of_float64_fails_the_session_and_is_known():
    """ORT 1.32 acceptance finding 47: a float64 BERT self-attention at opset 12 whose layer norm LayerNormFusionL2 fuses
    (its epsilon a float32 value) makes AttentionFusion fail session creation with a float/double tensor type
    mismatch; float32 and AttentionFusion disabled run. The model is dlcfuzz's library block; the sessions are
    onnxruntime's alone."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    from dlcfuzz.backends.onnxruntime.opsets import at_opset
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.synth.library_ort import bert_attention_block
    from dlcfuzz.zoo.builder import Builder

    def model(dtype: str) -> bytes:
        b = Builder("bert_attention", 0, dtype=dtype)
        g = b.outputs(bert_attention_block(b, b.input("x", (2, 4, 8)), b.input("lengths", (2, 1))))
        m = onnx.load_from_string(at_opset(to_onnx(g).SerializeToString(), 12))
        (eps,) = [i for i in m.graph.initializer if i.name == "eps"]
        eps.CopyFrom(numpy_helper.from_array(np.full_like(numpy_helper.to_array(eps), np.float32(1e-5)), "eps"))
        return m.SerializeToString()

    def session(m: bytes, disabled: list[str] | None = None) -> None:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.log_severity_level = 4
        ort.InferenceSession(m, so, providers=["CPUExecutionProvider"], disabled_optimizers=disabled)

    with pytest.raises(Exception, match="Tensor type mismatch") as raised:
        session(model("float64"))
    session(model("float64"), ["AttentionFusion"])
    session(model("float32"))

    detail = f"ort-all rejects ({raised.value}) while ort-disable compiles"
    ops = {"add", "matmul", "softmax", "reshape", "transpose"}
    assert _known_finding("inconsistent-rejection", ops, {"float64"}, "AttentionFusion,LayerNormFusionL2", "",
                          detail) == "ort-attention-fusion-float64"
    assert _known_finding("inconsistent-rejection", ops, {"float64"}, "MatMulAddFusion", "", detail) is None


def test_the_transformer_optimizer_cancels_a_transpose_pair_that_does_not_cancel_and_is_known(tmp_path):
    """ORT 1.32 acceptance finding 49: FusionConstantFold removes Transpose(perm=[1, 2, 0]) twice (equal perms, but not
    an involution), and the first one even where a Neg still reads it: "Graph is not a DAG"; with no second reader
    the optimized model runs and returns the input's shape. onnx and onnxruntime's transformer optimizer alone."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    def optimized(second_reader: bool) -> bytes:
        nodes = [helper.make_node("Transpose", ["x"], ["t1"], perm=[1, 2, 0], name="t1"),
                 helper.make_node("Transpose", ["t1"], ["t2"], perm=[1, 2, 0], name="t2"),
                 helper.make_node("Relu", ["t2"], ["y"], name="relu")]
        outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2, 3])]
        if second_reader:
            nodes.append(helper.make_node("Neg", ["t1"], ["z"], name="neg"))
            outs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [3, 4, 2]))
        graph = helper.make_graph(nodes, "transposes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                                  outs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        path = tmp_path / f"m{int(second_reader)}.onnx"
        onnx.save(model, str(path))
        return optimize_model(str(path), model_type="gpt2", num_heads=0, hidden_size=0,
                              optimization_options=FusionOptions("gpt2"), opt_level=0,
                              use_gpu=False).model.SerializeToString()

    with pytest.raises(RuntimeError, match="Graph is not a DAG") as raised:
        optimized(second_reader=True)
    so = ort.SessionOptions()
    so.log_severity_level = 4
    session = ort.InferenceSession(optimized(second_reader=False), so, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})
    assert y.shape == (2, 3, 4)  # Transpose twice by [1, 2, 0] is [4, 2, 3]

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    def known(message: str) -> str | None:
        facts = FindingFacts(id=49, compiler="onnxruntime", category="unexpected-error",
                             configs=("ort-transformers-gpt2",), opts="", ops=frozenset({"transpose", "sub", "clip"}),
                             dtypes=frozenset({"float32"}), message="")
        k = Register(use_env=False).match(facts, f"TransformerOptimizerError: optimize_model raised {message}")
        return k.id if k else None

    assert known(f"RuntimeError: {raised.value}") == "ort-transformers-constant-fold-transpose-pair"
    assert known("KeyError: 't2'") == "ort-transformers-constant-fold-keyerror"


def test_float16_softplus_overflows_above_88_and_is_known():
    """ORT 1.32 acceptance finding 36: Softplus of float16 88.8 is inf (float32 gives 88.8), so Div(v, Softplus(v))
    is 0, not 1. onnxruntime alone; the register knows a float16 finding holding Softplus, and leaves float64's
    to its own entry."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    def softplus(x: np.ndarray, elem: int) -> np.ndarray:
        graph = helper.make_graph([helper.make_node("Softplus", ["x"], ["y"])], "softplus",
                                  [helper.make_tensor_value_info("x", elem, [2])],
                                  [helper.make_tensor_value_info("y", elem, [2])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]

    half = softplus(np.array([88.7, 88.8], np.float16), TensorProto.FLOAT16)
    assert half[0] == np.float16(88.7) and np.isposinf(half[1])
    np.testing.assert_allclose(softplus(np.array([88.7, 88.8], np.float32), TensorProto.FLOAT), [88.7, 88.8], rtol=1e-6)

    ops = {"div", "exp", "global_lp_pool", "softplus"}
    detail = "ort-disable, ort-all differ from the reference at output 5: distance 1 > 0.01"
    assert _known_finding("wrong-result", ops, {"float16"}, "", "value", detail) == "ort-softplus-float16-overflow"
    assert _known_finding("wrong-result", {"softplus"}, {"float64"}, "", "inf", detail) == \
        "ort-softplus-float64-overflow"
    assert _known_finding("wrong-result", ops - {"softplus"}, {"float16"}, "", "value", detail) is None


def test_conv_mul_fusion_folds_an_infinite_scale_into_nan_and_is_known():
    """ORT 1.32 acceptance finding 10 (microsoft/onnxruntime#11173): ConvMulFusion folds a -inf scale into the Conv
    weights, so +-inf meet inside the convolution: NaN where Conv then Mul gives +-inf. onnxruntime alone; the
    register knows the non-finite inconsistency under that optimization, not a finite one."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]), helper.make_node("Mul", ["c", "s"], ["y"])]
    graph = helper.make_graph(nodes, "conv_mul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 2])],
                              [numpy_helper.from_array(np.array([[[[1.0]], [[-1.0]]]], np.float32), "w"),
                               numpy_helper.from_array(np.array([[[-np.inf]]], np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    x = np.array([[[[1.0, 3.0]], [[2.0, 1.0]]]], np.float32)  # the convolution gives [-1, 2]

    def run(level: str, disabled: list[str] | None = None) -> np.ndarray:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"],
                                       disabled_optimizers=disabled)
        return session.run(None, {"x": x})[0].ravel()

    np.testing.assert_array_equal(run("ORT_DISABLE_ALL"), [np.inf, -np.inf])
    assert np.isnan(run("ORT_ENABLE_BASIC")).all()
    np.testing.assert_array_equal(run("ORT_ENABLE_ALL", ["ConvMulFusion"]), [np.inf, -np.inf])

    ops = {"conv2d", "mul"}
    nan = "ort-all differs from ort-disable and the reference at output 3: NaN at different positions"
    assert _known_finding("inconsistency", ops, {"float32"}, "ConvMulFusion", "nan", nan) == \
        "ort-conv-mul-fusion-infinite-scale"
    finite = "ort-all differs from ort-disable and the reference at output 3: distance 0.5 > 0.001"
    assert _known_finding("inconsistency", ops, {"float32"}, "ConvMulFusion", "value", finite) is None


def test_lrn_after_a_huge_channel_gives_nan_and_a_region_around_it_is_known():
    """ORT's LRN keeps a running sum of squares across channels: once a channel of 9.007e15 leaves the window of
    size 5, the small squares are lost and the sum goes negative, so the next channels are NaN where ONNX's formula
    gives 0 (and channel 1 is 6.9e-27 for 0.7116). onnxruntime 1.32.0 alone, opset 18. Issue 40's acceptance
    campaign found it carried through a Loop: a region around the LRN is the same registered bug."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    attrs = {"alpha": 0.02304, "beta": 0.8846, "bias": 1.469, "size": 5}
    x = np.array([9.007199e15, 1, 0, 0, 0, 0, 0, 0], np.float32).reshape(1, 8, 1, 1)
    graph = helper.make_graph([helper.make_node("LRN", ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    x64 = x.astype(np.float64).reshape(8)
    window = np.array([np.sum(x64[max(0, c - 2):c + 3] ** 2) for c in range(8)])  # ONNX: floor/ceil of (size-1)/2
    want = x64 / (attrs["bias"] + attrs["alpha"] / attrs["size"] * window) ** attrs["beta"]
    assert np.isfinite(want).all() and np.isnan(got.reshape(8)[3:]).all(), got.reshape(8)
    nan = "ort-disable, ort-all differ from the reference at output 0: NaN at different positions"
    assert _known_finding("wrong-result", {"loop", "lrn"}, {"float32"}, "", "nan", nan) == "ort-lrn-size1-cancellation"
    assert _known_finding("wrong-result", {"loop", "lrn", "relu"}, {"float32"}, "", "nan", nan) is None


def test_weight_bias_quantization_moves_a_result_across_a_rounding_boundary_and_is_known():
    """Issue 40's acceptance campaign (OATest's float-bias QDQ Conv in an If branch), with onnxruntime alone:
    WeightBiasQuantization quantizes a Conv's float bias 0.0634 to 0.0625 (scale 0.0625 * 0.03125), which turns the
    output QuantizeLinear's 4.507 steps into the tie 4.5 (rounded to even): 0.5 where ONNX and ORT_DISABLE_ALL give
    0.625; disabling that one optimizer gives 0.625 back. Asserts the moved result, so it fails once ORT keeps it."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: np.ndarray):
        return numpy_helper.from_array(value, name)

    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd", "b"], ["c"]),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    inits = [const("sx", np.array(0.0625, np.float32)), const("zx", np.array(0, np.int8)),
             const("wq", np.full((1, 1, 1, 1), 16, np.int8)), const("sw", np.array(0.03125, np.float32)),
             const("zw", np.array(0, np.int8)), const("b", np.array([0.0634], np.float32)),
             const("sy", np.array(0.125, np.float32)), const("zy", np.array(0, np.int8))]
    t = [1, 1, 1, 1]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, t)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, t)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9

    def run(level: ort.GraphOptimizationLevel, disabled: list[str]) -> float:
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=disabled)
        return float(sess.run(None, {"x": np.ones(t, np.float32)})[0].item())

    level = ort.GraphOptimizationLevel
    assert run(level.ORT_DISABLE_ALL, []) == 0.625
    assert run(level.ORT_ENABLE_ALL, []) == 0.5
    assert run(level.ORT_ENABLE_ALL, ["WeightBiasQuantization"]) == 0.625
    detail = "ort-all differs from ort-disable and the reference at output 1: distance 0.125 > 0.001"
    ops = {"conv2d", "dequantize_linear", "if", "neg", "pad", "quantize_linear", "reshape"}
    assert _known_finding("inconsistency", ops, {"float32", "int8"}, "WeightBiasQuantization", "value", detail) == \
        "ort-weight-bias-quantization-rounds-float-bias"
    assert _known_finding("inconsistency", ops, {"float32", "int8"}, "QDQSelectorActionTransformer", "value",
                          detail) is None


def dq_transpose_captured_by_a_loop() -> bytes:
    """DequantizeLinear (uint8 [3, 8], scale 1/128) -> Transpose, whose result a Loop body reads from the enclosing
    scope (Reshape to [-1], Pad edge, Reshape to the carried [17, 6, 3]); three trips."""
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: np.ndarray):
        return numpy_helper.from_array(value, name)

    body = helper.make_graph(
        [helper.make_node("Constant", [], ["flat_shape"], value=const("flat_shape", np.array([-1], np.int64))),
         helper.make_node("Reshape", ["t", "flat_shape"], ["flat"]),
         helper.make_node("Constant", [], ["pads"], value=const("pads", np.array([0, 282], np.int64))),
         helper.make_node("Pad", ["flat", "pads"], ["padded"], mode="edge"),
         helper.make_node("Constant", [], ["shape"], value=const("shape", np.array([17, 6, 3], np.int64))),
         helper.make_node("Reshape", ["padded", "shape"], ["v_next"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v", TensorProto.FLOAT, [17, 6, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_next", TensorProto.FLOAT, [17, 6, 3])])
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "scale", "zero_point"], ["dq"]),
         helper.make_node("Transpose", ["dq"], ["t"], perm=[1, 0]),
         helper.make_node("Loop", ["trips", "go", "v0"], ["final"], body=body)], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [3, 8])],
        [helper.make_tensor_value_info("final", TensorProto.FLOAT, [17, 6, 3])],
        [const("scale", np.array(0.0078125, np.float32)), const("zero_point", np.array(0, np.uint8)),
         const("trips", np.array(3, np.int64)), const("go", np.array(True)),
         const("v0", np.zeros((17, 6, 3), np.float32))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model.SerializeToString()


def test_qdq_propagation_into_a_loops_capture_aborts_and_is_known(tmp_path):
    """Issue 40's acceptance campaign (OATest's DQ -> Transpose pattern whose result a Loop body captures), with
    onnxruntime 1.32.0 alone: creating the session at ORT_ENABLE_BASIC or above aborts (SIGABRT, a std::vector index
    assertion on a NodeArg*) unless QDQPropagationTransformer is disabled; the same nodes without the Loop compile.
    Asserts the abort, so it fails once ORT is fixed."""
    path = tmp_path / "model.onnx"
    path.write_bytes(dq_transpose_captured_by_a_loop())
    script = ("import sys, onnxruntime as ort\n"
              "so = ort.SessionOptions()\n"
              "so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC\n"
              "ort.InferenceSession(sys.argv[1], so, providers=['CPUExecutionProvider'],\n"
              "                     disabled_optimizers=sys.argv[2:])\n"
              "print('created')\n")
    aborted = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert aborted.returncode == -6 and "Assertion" in aborted.stderr, (aborted.returncode, aborted.stderr[-500:])
    spared = subprocess.run([sys.executable, "-c", script, str(path), "QDQPropagationTransformer"], capture_output=True,
                            text=True, timeout=120)
    assert spared.returncode == 0 and "created" in spared.stdout, spared.stderr[-500:]
    detail = ("killed by signal 6 (SIGABRT) during compile of ort-all\n... stl_vector.h:1130: ... [with _Tp = "
              "onnxruntime::NodeArg*; ...]: Assertion '__n < this->size()' failed.")
    ops = {"dequantize_linear", "identity", "loop", "pad", "reshape", "transpose"}
    assert known_as("crash", ops, {"uint8", "float32"}, ("ort-all",), detail) == \
        "ort-qdq-propagation-subgraph-capture-abort"
    assert known_as("crash", ops - {"loop"}, {"uint8", "float32"}, ("ort-all",), detail) is None


def test_the_transformer_optimizer_prunes_a_node_only_a_doubly_nested_loop_reads_and_is_known(tmp_path):
    """Issue 40's acceptance campaign, with onnx and onnxruntime's transformer optimizer alone: optimize_model's
    prune_graph looks one subgraph level deep, so a ReduceMin whose result only a Loop inside a Loop reads is removed
    and ORT rejects the optimized model ("input 'm' ... is not output of any previous nodes"); one Loop deep, the
    ReduceMin stays and the model is accepted. Asserts the pruning, so it fails once the optimizer recurses."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    def loop(level: int, body_nodes: list, result: str) -> list:
        body = helper.make_graph(
            [*body_nodes, helper.make_node("Identity", ["cond"], [f"cond_out{level}"]),
             helper.make_node("Identity", [result], [f"next{level}"])],
            f"body{level}", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                             helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                             helper.make_tensor_value_info(f"v{level}", TensorProto.BOOL, [1, 1])],
            [helper.make_tensor_value_info(f"cond_out{level}", TensorProto.BOOL, []),
             helper.make_tensor_value_info(f"next{level}", TensorProto.BOOL, [1, 1])])
        consts = [(f"trips{level}", np.array(1, np.int64)), (f"go{level}", np.array(True)),
                  (f"init{level}", np.array([[False]]))]
        return [*(helper.make_node("Constant", [], [n], value=numpy_helper.from_array(v, n)) for n, v in consts),
                helper.make_node("Loop", [n for n, _ in consts], [f"out{level}"], body=body)]

    def optimized(depth: int) -> onnx.ModelProto:
        nodes, result = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones((1, 1), np.float32), "c")),
                         helper.make_node("GreaterOrEqual", ["m", "c"], ["ge"])], "ge"
        for level in range(depth):
            nodes, result = loop(level, nodes, result), f"out{level}"
        graph = helper.make_graph([helper.make_node("ReduceMin", ["x"], ["m"], keepdims=1), *nodes], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                                  [helper.make_tensor_value_info(result, TensorProto.BOOL, [1, 1])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        path = tmp_path / f"nested{depth}.onnx"
        onnx.save(model, str(path))
        return optimize_model(str(path), model_type="gpt2", num_heads=0, hidden_size=0,
                              optimization_options=FusionOptions("gpt2"), opt_level=0, use_gpu=False).model

    one = optimized(1)
    assert "ReduceMin" in [n.op_type for n in one.graph.node]
    ort.InferenceSession(one.SerializeToString(), providers=["CPUExecutionProvider"])
    two = optimized(2)
    assert "ReduceMin" not in [n.op_type for n in two.graph.node]
    with pytest.raises(Exception, match="is not output of any previous nodes") as raised:
        ort.InferenceSession(two.SerializeToString(), providers=["CPUExecutionProvider"])
    detail = f"TransformerOptimizerError: ORT rejects the transformer optimizer's output model: {raised.value}"
    configs = ("ort-transformers-gpt2",)
    assert known_as("unexpected-error", {"loop", "reduce_min", "greater_equal"}, {"float16"}, configs, detail) == \
        "ort-transformers-prune-graph-nested-subgraph"
    assert known_as("unexpected-error", {"reduce_min", "greater_equal"}, {"float16"}, configs, detail) is None


def test_unique_along_an_axis_of_empty_slices_aborts_and_is_known(tmp_path):
    """Issue 40's acceptance campaign (a data-dependent extent: Unique along axis -3 of a float32 [1, 1, 0]), with
    onnxruntime 1.32.0 alone: Unique along an axis of non-zero extent whose slices are empty ([2, 0] along axis 0)
    aborts the process ("terminate called without an active exception") at any optimization level; along the empty
    axis itself ([2, 0] along axis 1) or flattened it returns an empty result. Asserts the abort."""
    from onnx import TensorProto, helper

    def run(shape: list[int], axis: int) -> subprocess.CompletedProcess:
        graph = helper.make_graph([helper.make_node("Unique", ["x"], ["y", "i", "inv", "c"], sorted=1, axis=axis)], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        path = tmp_path / f"unique_{axis}.onnx"
        path.write_bytes(model.SerializeToString())
        script = ("import sys, numpy as np, onnxruntime as ort\n"
                  "so = ort.SessionOptions()\n"
                  "so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL\n"
                  "s = ort.InferenceSession(sys.argv[1], so, providers=['CPUExecutionProvider'])\n"
                  f"print(s.run(None, {{'x': np.zeros({shape}, np.float32)}})[0].shape)\n")
        return subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)

    aborted = run([2, 0], 0)
    assert aborted.returncode == -6 and "terminate called without an active exception" in aborted.stderr, aborted.stderr
    empty_axis = run([2, 0], 1)
    assert empty_axis.returncode == 0 and "(2, 0)" in empty_axis.stdout, empty_axis.stderr
    detail = "killed by signal 6 (SIGABRT) during run of ort-disable\nterminate called without an active exception"
    assert known_as("crash", {"unique"}, {"float32", "int64"}, ("ort-disable",), detail) == "ort-unique-axis-empty-slices-abort"
    assert known_as("crash", {"non_zero"}, {"float32", "int64"}, ("ort-disable",), detail) is None


def test_issue_40_findings_of_registered_ort_bugs_are_labelled():
    """Issue 40's acceptance campaign met two registered bugs in new forms: an LSTM's Softplus overflow seen through an
    IsInf of its output (the key's reason is a value, not an inf), and the transformer optimizer's removed Reshape to
    [] followed by a Clip (a 1x1 shape for a scalar). Both are labelled; a value finding without a non-finite check is
    not the Softplus entry's."""
    ops = {"isinf", "lstm", "reduce_max"}
    detail = "ort-disable, ort-all differ from the reference at output 3: distance 1 > 0 (flat index 83: np.True_ vs np.False_)"
    assert _known_finding("wrong-result", ops, {"float32", "bool"}, "", "value", detail) == \
        "ort-rnn-softplus-activation-overflow"
    assert _known_finding("wrong-result", {"lstm", "relu"}, {"float32"}, "", "value", "distance 0.5 > 0.001") is None
    shape = "ort-transformers-gpt2 differs from ort-disable and the reference at output 3: shape (1, 1) != ()"
    assert known_as("inconsistency", {"reshape", "clip"}, {"float32"}, ("ort-transformers-gpt2", "ort-disable"), shape) == \
        "ort-transformers-reshape-graph-output-removed"
