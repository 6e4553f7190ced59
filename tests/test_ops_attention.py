"""Attention-family operators (Attention, RotaryEmbedding, LinearAttention, CausalConvWithState): every spec against ONNX, ONNXRuntime, TVM
Relax and the importer, the reference against onnx.reference, and ONNX's own conformance cases."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.ops import check_graph, get_op, registry
from dlcfuzz.oracle.numeric import compare
from op_harness import check_instance, instances

ATTENTION_OPS = sorted(name for name, spec in registry().items() if spec.family == "attention")
DEFAULTS = {"has_mask": 0, "has_past": 0, "has_nonpad": 0, "present": 0, "qk_output": 0, "q_num_heads": 0,
            "kv_num_heads": 0, "scale": None, "is_causal": 0, "softcap": 0.0, "softmax_precision": 0,
            "qk_matmul_output_mode": 0, "left_window_size": -1, "right_window_size": -1}


def one_node(op: str, in_types: list[TensorType], attrs: dict, constants: dict | None = None) -> Graph:
    spec = get_op(op)
    outs = spec.infer(in_types, attrs)
    constants = constants or {}
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(in_types) if f"x{i}" not in constants],
              constants=constants,
              nodes=[Node(op, [f"x{i}" for i in range(len(in_types))],
                          [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def test_family_is_registered():
    assert {"attention", "rotary_embedding", "linear_attention", "causal_conv_with_state"} <= set(ATTENTION_OPS)


@pytest.mark.parametrize("op", ATTENTION_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=3, count=4)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


def test_attention_with_qk_output_only_round_trips_through_onnx():
    q = TensorType("float32", (1, 2, 3, 4))
    attrs = {**DEFAULTS, "qk_output": 1, "qk_matmul_output_mode": 3}
    g = one_node("attention", [q, q, q], attrs)
    res = import_model(to_onnx(g))
    assert res.complete, res.skipped
    assert res.graph.nodes[0].attrs["qk_output"] == 1 and len(res.graph.outputs) == 2


def _onnx_reference(g: Graph, inputs: dict) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    model = to_onnx(g)
    feed = {**inputs, **{k: v for k, v in g.constants.items()}}
    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, {n: feed[n] for n in names})


@pytest.mark.parametrize("op", ATTENTION_OPS)
def test_reference_matches_onnx_reference(op):
    """Our NumPy reference against onnx.reference on sampled instances of every attribute mix (float64
    so that only the semantics, not the rounding, can differ: 1e-10, since an explicit `scale`'s root is
    taken in float32 by ONNX, 2e-7 off the exact one, which a 30-minute campaign reported as ORT's error)."""
    spec = get_op(op)
    seen = 0
    for g, inputs in instances(spec, seed=5, count=40):
        if g.inputs[0].type.dtype != ("float64" if "float64" in spec.dtypes else "float32"):
            continue
        a = g.nodes[0].attrs
        if a.get("qk_output") and a.get("qk_matmul_output_mode") == 0 and a.get("softcap"):
            continue  # onnx.reference softcaps mode 0's raw QK product, against its spec (ORT does not)
        ours = reference.outputs(g, inputs)
        theirs = _onnx_reference(g, inputs)
        tight = g.inputs[0].type.dtype == "float64"
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-10 if tight else 1e-5, atol=1e-12 if tight else 1e-6,
                                       err_msg=str(g.nodes[0].attrs))
        seen += 1
    assert seen >= 8, seen


def test_causal_mask_is_offset_by_the_past_length():
    """Query i attends key j iff j <= i + past_length (bottom-right alignment): with one query and two
    new keys after two cached ones, the last key is masked."""
    spec = get_op("attention")
    t = TensorType("float64", (1, 1, 1, 2))
    kv = TensorType("float64", (1, 1, 2, 2))
    attrs = {**DEFAULTS, "has_past": 1, "present": 1, "is_causal": 1}
    q = np.zeros((1, 1, 1, 2))
    k = np.zeros((1, 1, 2, 2))
    v = np.array([[[[1.0, 1.0], [100.0, 100.0]]]])
    past = np.zeros((1, 1, 2, 2))
    y, present_k, present_v = spec.reference([q, k, v, past, past], attrs)
    assert spec.infer([t, kv, kv, kv, kv], attrs)[0].shape == (1, 1, 1, 2)
    np.testing.assert_allclose(y, [[[[1 / 3, 1 / 3]]]])  # keys 0..2 equally weighted, key 3 masked
    assert present_k.shape == (1, 1, 4, 2) and np.array_equal(present_v[:, :, 2:], v)


def test_fully_masked_rows_are_zero_and_not_judged():
    spec = get_op("attention")
    attrs = {**DEFAULTS, "has_mask": 1, "qk_output": 1, "qk_matmul_output_mode": 3}
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, 2, 3)) for _ in range(3))
    mask = np.array([[True, False], [False, False]])
    y, probs = spec.reference([q, k, v, mask], attrs)
    assert np.all(y[0, 0, 1] == 0) and np.all(probs[0, 0, 1] == 0) and np.isfinite(y).all()
    assert spec.near_tie([q, k, v, mask], attrs, 1e-3)
    assert not spec.near_tie([q, k, v, np.ones((2, 2), bool)], attrs, 1e-3)


def test_grouped_query_heads_share_kv_heads_in_blocks():
    """q heads 0,1 read kv head 0 and q heads 2,3 read kv head 1 (np.repeat, not tile)."""
    spec = get_op("attention")
    q = np.zeros((1, 4, 1, 2))
    k = np.zeros((1, 2, 1, 2))
    v = np.array([1.0, 2.0]).reshape(1, 2, 1, 1) * np.ones((1, 2, 1, 2))
    (y,) = spec.reference([q, k, v], dict(DEFAULTS))
    assert y[0, :, 0, 0].tolist() == [1.0, 1.0, 2.0, 2.0]


@pytest.mark.parametrize("in_types, attrs, error", [
    # 3-D inputs need the head counts
    ([TensorType("float32", (1, 2, 8))] * 3, {}, ShapeError),
    # q heads must be a multiple of kv heads
    ([TensorType("float32", (1, 3, 2, 4)), TensorType("float32", (1, 2, 2, 4)),
      TensorType("float32", (1, 2, 2, 4))], {}, ShapeError),
    # masks are bool or the inputs' type
    ([TensorType("float32", (1, 1, 2, 4))] * 3 + [TensorType("int32", (2, 2))], {"has_mask": 1}, DTypeError),
    # nonpad_kv_seqlen and past_key do not mix
    ([TensorType("float32", (1, 1, 2, 4))] * 5 + [TensorType("int64", (1,))],
     {"has_past": 1, "has_nonpad": 1}, ShapeError),
])
def test_attention_rejects_invalid_operands(in_types, attrs, error):
    with pytest.raises(error):
        get_op("attention").infer(in_types, {**DEFAULTS, **attrs})


def test_rotary_embedding_rejects_odd_rotary_dim():
    x = TensorType("float32", (1, 1, 2, 4))
    with pytest.raises(ShapeError):
        cache = TensorType("float32", (1, 2, 1))
        get_op("rotary_embedding").infer([x, cache, cache], {"interleaved": 0, "rotary_embedding_dim": 3, "num_heads": 0})


def test_onnx_conformance_cases_pass():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from onnx_conformance import run

    passed, supported, total, _, failures = run({"attention", "rotaryembedding", "linearattention",
                                                 "causalconvwithstate"})
    assert not failures, failures
    assert supported >= 115 and passed == supported  # 8 more once absent optional outputs import


def test_qk_output_mode_0_is_the_raw_product_even_with_softcap():
    spec = get_op("attention")
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 1, 2, 4)) for _ in range(3))
    attrs = {**DEFAULTS, "qk_output": 1, "softcap": 1.0, "scale": 0.25}
    _, raw = spec.reference([q, k, v], attrs)
    _, capped = spec.reference([q, k, v], {**attrs, "qk_matmul_output_mode": 1})
    np.testing.assert_allclose(raw, 0.25 * q @ np.swapaxes(k, -1, -2))
    np.testing.assert_allclose(capped, np.tanh(raw))


def test_rotary_embedding_of_an_empty_batch_lowers_to_relax_without_an_inferred_dim():
    """With an empty batch a reshape to (..., -1) cannot infer the -1 (TVM made (0, 3, 0, 4) of what
    should be (0, 3, 1, 4)): the lowerings spell every dim out."""
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.gen.single import single_op_graph

    op = "rotary_embedding"
    judged = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        try:
            g = single_op_graph(get_op(op), rng, TensorType("float32", (0, 3, 4)))
        except Exception:  # noqa: BLE001 - a sample that does not fit this shape
            continue
        check_instance(g, sample_inputs(g, rng), ort=False)
        judged += 1
    assert judged >= 3


def long_linear_attention(rule: str) -> tuple[Graph, dict[str, np.ndarray]]:
    """A LinearAttention over SCAN_FROM + 19 steps with a past state and grouped query heads, and its inputs."""
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.lower.pysource.rules_recurrent import SCAN_FROM

    rng = np.random.default_rng(7)
    b, t, hq, hkv, dk, dv = 2, SCAN_FROM + 19, 4, 2, 3, 2
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule, "scale": 0.0, "has_past": 1,
             "chunk_size": 0}
    f32 = "float32"
    ins = [TensorType(f32, (b, t, hq * dk)), TensorType(f32, (b, t, hkv * dk)), TensorType(f32, (b, t, hkv * dv)),
           TensorType(f32, (b, hkv, dk, dv))]
    if rule in ("gated", "gated_delta"):
        ins.append(TensorType(f32, (b, t, hkv * dk)))
    if rule in ("delta", "gated_delta"):
        ins.append(TensorType(f32, (b, t, 1)))
    g = one_node("linear_attention", ins, attrs)
    return g, sample_inputs(g, rng)


@pytest.mark.parametrize("rule", ["linear", "gated_delta"])  # neither, and both, of the decay and beta inputs
def test_jax_runs_a_long_linear_attention_under_scan_and_agrees_with_the_reference(rule):
    """A sequence longer than SCAN_FROM steps lowers to JAX as lax.scan, as the recurrent operators do (issue 40's
    XLA false-positive run: a 255-step recurrence unrolled to ~2,000 operations, which XLA:CPU compiled past the 120 s
    deadline, a "hang"), with a past state and grouped heads; the compiled program agrees with the reference,
    and the module holds the step once."""
    jax = pytest.importorskip("jax", reason="the jax target needs jax (pip install 'dlcfuzz[xla]')")
    from dlcfuzz.lower.jax import to_jax_program

    g, inputs = long_linear_attention(rule)
    ref = reference.outputs(g, inputs)
    program = to_jax_program(g)
    assert "lax.scan(" in program.source
    args = [inputs[v.name] for v in g.inputs]
    lowered = jax.jit(program.function()).lower(*args)
    assert len(lowered.as_text().splitlines()) < 400
    assert not compare([np.asarray(o) for o in lowered.compile()(*args)], ref)


@pytest.mark.parametrize("rule", ["linear", "gated_delta"])
def test_torch_runs_a_long_linear_attention_under_scan_and_agrees_with_the_reference(rule):
    """In torch too the long recurrence runs under the scan operator (unrolled, 128 steps cost Inductor 73 CPU s of
    compile); eagerly it agrees with the reference, and Inductor compiles the gated delta rule (fullgraph, as the
    backend does) to the same outputs."""
    pytest.importorskip("torch", reason="the torch target needs torch (pip install 'dlcfuzz[inductor]')")
    from dlcfuzz.lower.torch import to_numpy, to_torch_program

    g, inputs = long_linear_attention(rule)
    ref = reference.outputs(g, inputs)
    program = to_torch_program(g)
    assert program.source.count("torch._higher_order_ops.scan(") == 1
    assert not compare(program.run_eager(inputs), ref)
    if rule == "gated_delta":
        from dlcfuzz.backends.inductor.compiling import compile_callable, worker_setup

        worker_setup()
        args = [program.argument(inputs[v.name]) for v in g.inputs]
        compiled = compile_callable(program.function(), lambda: args, "inductor", {}, None)
        assert not compare([to_numpy(o) for o in compiled(*args)], ref)


@pytest.mark.parametrize("target", ["torch", "jax"])
def test_python_lowerings_scale_float64_attention_by_the_references_float32_root(target):
    """ONNX's Attention scales q and k each by sqrt(scale), the attribute a float32 and its root taken in float32
    (the reference, onnxruntime and onnx.reference agree); the Python lowerings took it in float64 for float64
    inputs, 2e-7 off, which values near 1e153 showed beyond float64's tolerance (issue 37's XLA run, finding 2)."""
    pytest.importorskip(target)
    from dlcfuzz.lower.jax import to_jax_program
    from dlcfuzz.lower.torch import to_torch_program

    attrs = {"has_mask": 0, "has_nonpad": 0, "has_past": 0, "is_causal": 1, "kv_num_heads": 1, "left_window_size": -1,
             "present": 0, "q_num_heads": 17, "qk_matmul_output_mode": 1, "qk_output": 1, "right_window_size": -1,
             "scale": 0.8378999829292297, "softcap": 0.0, "softmax_precision": 11}
    types = [TensorType("float64", s) for s in ((2, 6, 17), (2, 6, 1), (2, 6, 3))]
    outs = [Value(n, t) for n, t in zip(("y", "qk"), get_op("attention").infer(types, attrs))]
    g = Graph(inputs=[Value(n, t) for n, t in zip(("q", "k", "v"), types)],
              nodes=[Node("attention", ["q", "k", "v"], outs, attrs, name="n0")], outputs=["y"])
    check_graph(g)
    rng = np.random.default_rng(4)
    feeds = {"q": rng.uniform(-2, 2, (2, 6, 17)), "k": rng.uniform(-2, 2, (2, 6, 1)),
             "v": rng.uniform(-2e153, 2e153, (2, 6, 3))}
    ref = reference.outputs(g, feeds)
    lower = to_torch_program if target == "torch" else to_jax_program
    assert not compare(lower(g).run_eager(feeds), ref)
