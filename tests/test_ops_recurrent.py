"""Recurrent operators (RNN, GRU, LSTM): every spec against ONNX, ONNXRuntime, TVM Relax and the importer,
the reference against torch.nn's own GRU/LSTM where their equations coincide, and the attribute rules."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.ops import check_graph, get_op, registry
from dlcfuzz.ops.recurrent import onnx_activation_lists, recurrence, resolve_activation_params
from dlcfuzz.oracle.numeric import compare
from op_harness import check_instance, instances, run_relax

RECURRENT_OPS = sorted(name for name, spec in registry().items() if spec.family == "recurrent")


def one_node(op: str, in_types: list[TensorType], attrs: dict) -> Graph:
    outs = get_op(op).infer(in_types, attrs)
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(in_types)],
              nodes=[Node(op, [f"x{i}" for i in range(len(in_types))],
                          [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def base_attrs(kind: str, hidden: int, **kw) -> dict:
    acts = {"rnn": ["Tanh"], "gru": ["Sigmoid", "Tanh"], "lstm": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    nd = 2 if kw.get("direction") == "bidirectional" else 1
    attrs = {"hidden_size": hidden, "direction": "forward", "layout": 0, "activations": acts * nd,
             "activation_params": resolve_activation_params(acts * nd, None, None), "clip": None,
             "sequence_lens": None, "has_bias": False, "has_initial_h": False}
    if kind == "gru":
        attrs["linear_before_reset"] = 0
    if kind == "lstm":
        attrs.update({"has_initial_c": False, "has_peepholes": False, "input_forget": 0})
    attrs.update(kw)
    return attrs


def test_family_is_registered():
    assert set(RECURRENT_OPS) == {"rnn", "gru", "lstm"}


@pytest.mark.parametrize("op", RECURRENT_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=3, count=3)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


@pytest.mark.parametrize("op", RECURRENT_OPS)
def test_batch_first_layout_on_relax_and_the_importer(op):
    """layout 1 is never generated (onnxruntime refuses it) but imported: Relax and the importer run it."""
    rng = np.random.default_rng(5)
    kind = op
    g_per = {"rnn": 1, "gru": 3, "lstm": 4}[kind]
    attrs = base_attrs(kind, 2, layout=1, direction="bidirectional", has_bias=True, has_initial_h=True,
                       sequence_lens=[3, 1])
    x = TensorType("float32", (2, 3, 2))  # [batch, seq, input]
    ins = [x, TensorType("float32", (2, g_per * 2, 2)), TensorType("float32", (2, g_per * 2, 2)),
           TensorType("float32", (2, 2 * g_per * 2)), TensorType("float32", (2, 2, 2))]
    if kind == "lstm":
        attrs["has_initial_c"] = True
        ins.append(TensorType("float32", (2, 2, 2)))
    g = one_node(op, ins, attrs)
    inputs = {v.name: rng.uniform(-1, 1, v.type.shape).astype("float32") for v in g.inputs}
    ref = reference.outputs(g, inputs)
    assert ref[0].shape == (2, 3, 2, 2) and ref[1].shape == (2, 2, 2)
    assert not np.any(ref[0][1, 1:]), "steps past sequence_lens are zero"
    assert not compare(run_relax(g, inputs), ref)
    res = import_model(to_onnx(g))
    assert res.complete, res.skipped
    assert not compare(reference.outputs(res.graph, {res.graph.inputs[i].name: inputs[v.name]
                                                     for i, v in enumerate(g.inputs)}), ref, scale=0.0)


def test_sequence_lens_freeze_the_state_and_zero_the_output():
    rng = np.random.default_rng(0)
    x, w, r = (rng.uniform(-1, 1, s) for s in [(4, 3, 2), (1, 3, 2), (1, 3, 3)])
    for direction in ("forward", "reverse"):
        attrs = base_attrs("rnn", 3, direction=direction, sequence_lens=[4, 2, 1])
        y, y_h = recurrence("rnn", [x, w, r], attrs)
        full = [recurrence("rnn", [x[:n, b:b + 1], w, r], base_attrs("rnn", 3, direction=direction))
                for b, n in enumerate([4, 2, 1])]
        for b, n in enumerate([4, 2, 1]):
            np.testing.assert_allclose(y[:n, 0, b], full[b][0][:, 0, 0])
            assert not np.any(y[n:, 0, b])
            np.testing.assert_allclose(y_h[0, b], full[b][1][0, 0])


def _torch_weights(w: np.ndarray, order: list[int], hidden: int) -> np.ndarray:
    """ONNX's gate blocks reordered to torch's."""
    return np.concatenate([w[k * hidden:(k + 1) * hidden] for k in order])


def test_gru_linear_before_reset_is_torch_gru():
    """torch.nn.GRU computes r * (W_hn h + b_hn): ONNX's linear_before_reset=1 (gates r, z, n vs z, r, h)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    hidden, inp = 3, 2
    x = rng.uniform(-1, 1, (4, 2, inp))
    w, r, bias = rng.uniform(-1, 1, (1, 3 * hidden, inp)), rng.uniform(-1, 1, (1, 3 * hidden, hidden)), rng.uniform(-1, 1, (1, 6 * hidden))
    gru = torch.nn.GRU(inp, hidden).double()
    with torch.no_grad():
        gru.weight_ih_l0.copy_(torch.from_numpy(_torch_weights(w[0], [1, 0, 2], hidden)))
        gru.weight_hh_l0.copy_(torch.from_numpy(_torch_weights(r[0], [1, 0, 2], hidden)))
        gru.bias_ih_l0.copy_(torch.from_numpy(_torch_weights(bias[0, :3 * hidden], [1, 0, 2], hidden)))
        gru.bias_hh_l0.copy_(torch.from_numpy(_torch_weights(bias[0, 3 * hidden:], [1, 0, 2], hidden)))
        want, _ = gru(torch.from_numpy(x))
    y, _ = recurrence("gru", [x, w, r, bias], base_attrs("gru", hidden, has_bias=True, linear_before_reset=1))
    np.testing.assert_allclose(y[:, 0], want.numpy(), rtol=1e-12, atol=1e-12)
    y0, _ = recurrence("gru", [x, w, r, bias], base_attrs("gru", hidden, has_bias=True, linear_before_reset=0))
    assert np.abs(y0 - y).max() > 1e-3, "the two GRU formulas differ"


def test_lstm_is_torch_lstm():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    hidden, inp = 2, 3
    x = rng.uniform(-1, 1, (3, 2, inp))
    w, r, bias = rng.uniform(-1, 1, (1, 4 * hidden, inp)), rng.uniform(-1, 1, (1, 4 * hidden, hidden)), rng.uniform(-1, 1, (1, 8 * hidden))
    lstm = torch.nn.LSTM(inp, hidden).double()
    order = [0, 2, 3, 1]  # torch i, f, g, o from ONNX i, o, f, c
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(_torch_weights(w[0], order, hidden)))
        lstm.weight_hh_l0.copy_(torch.from_numpy(_torch_weights(r[0], order, hidden)))
        lstm.bias_ih_l0.copy_(torch.from_numpy(_torch_weights(bias[0, :4 * hidden], order, hidden)))
        lstm.bias_hh_l0.copy_(torch.from_numpy(_torch_weights(bias[0, 4 * hidden:], order, hidden)))
        want, (h, c) = lstm(torch.from_numpy(x))
    y, y_h, y_c = recurrence("lstm", [x, w, r, bias], base_attrs("lstm", hidden, has_bias=True))
    np.testing.assert_allclose(y[:, 0], want.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y_c, c.numpy(), rtol=1e-12, atol=1e-12)


def test_activation_alpha_beta_are_consumed_in_order():
    acts = ["Tanh", "LeakyRelu", "HardSigmoid", "Affine"]
    params = resolve_activation_params(acts, [0.5, 0.25], [0.125])
    assert params == [[0.0, 0.0], [0.5, 0.0], [0.25, 0.125], [1.0, 0.0]]  # Affine past the lists: defaults
    assert onnx_activation_lists(acts, params) == ([0.5, 0.25, 1.0], [0.125, 0.0])
    assert resolve_activation_params(acts, *onnx_activation_lists(acts, params)) == params
    with pytest.raises(ShapeError):
        resolve_activation_params(["Gelu"], None, None)


def test_lstm_clip_reaching_the_cell_is_a_near_tie():
    rng = np.random.default_rng(4)
    x, w, r = rng.uniform(-1, 1, (3, 1, 2)), rng.uniform(-1, 1, (1, 8, 2)), rng.uniform(-1, 1, (1, 8, 2))
    spec = get_op("lstm")
    assert not spec.near_tie([x, w, r], base_attrs("lstm", 2, clip=100.0), 1e-3)
    # C_1 = f * C_0 + i * c with f >= sigmoid(-0.5) and |c| <= tanh(0.5): |C_1| > 0.5 from C_0 = 2
    big_c = [x, w, r, np.full((1, 1, 2), 2.0)]
    assert spec.near_tie(big_c, base_attrs("lstm", 2, clip=0.5, has_initial_c=True), 1e-3)
    assert not spec.near_tie(big_c, base_attrs("lstm", 2, clip=5.0, has_initial_c=True), 1e-3)
    assert not spec.near_tie([x, w, r], base_attrs("lstm", 2), 1e-3)


@pytest.mark.parametrize("bad", [{"hidden_size": 0}, {"direction": "sideways"}, {"layout": 2},
                                 {"activations": ["Tanh", "Tanh"]}, {"sequence_lens": [-1]}, {"sequence_lens": [5]},
                                 {"clip": -1.0}])
def test_rnn_rejects_bad_attrs(bad):
    ins = [TensorType("float32", (4, 1, 2)), TensorType("float32", (1, 3, 2)), TensorType("float32", (1, 3, 3))]
    with pytest.raises(ShapeError):
        get_op("rnn").infer(ins, {**base_attrs("rnn", 3), **bad})
    with pytest.raises(ShapeError):
        get_op("rnn").infer(ins[:2] + [TensorType("float32", (1, 3, 2))], base_attrs("rnn", 3))


@pytest.mark.parametrize("layout", [0, 1])
def test_work_counts_each_time_step_of_each_direction_so_long_axis_tests_bound_the_sequence(layout):
    from dlcfuzz.gen.sizes import MAX_WORK
    from dlcfuzz.ops.recurrent import STEP_WORK

    def work(seq: int, direction: str) -> int:
        attrs = base_attrs("gru", 4, direction=direction)
        attrs["direction"], attrs["layout"] = direction, layout
        nd = 2 if direction == "bidirectional" else 1
        x = TensorType("float32", (seq, 2, 3) if layout == 0 else (2, seq, 3))
        ins = [x, TensorType("float32", (nd, 12, 3)), TensorType("float32", (nd, 12, 4))]
        spec = get_op("gru")
        return spec.work(ins, spec.infer(ins, attrs))

    assert work(200, "bidirectional") - work(200, "forward") >= 200 * STEP_WORK
    assert work(250, "forward") <= MAX_WORK < work(250, "bidirectional")  # both directions' steps count
    assert work(400, "forward") > MAX_WORK  # the reference's Python loop bounds a long test's sequence


def long_sequence_graph(op: str, layout: int) -> tuple[Graph, dict[str, np.ndarray]]:
    """`op` over SCAN_FROM + 23 steps with every optional input, both directions and sequence_lens masks, and inputs."""
    from dlcfuzz.lower.pysource.rules_recurrent import SCAN_FROM

    rng = np.random.default_rng(11)
    seq, batch, hidden, nd = SCAN_FROM + 23, 3, 2, 2
    g_per = {"rnn": 1, "gru": 3, "lstm": 4}[op]
    attrs = base_attrs(op, hidden, layout=layout, direction="bidirectional", has_bias=True, has_initial_h=True,
                       sequence_lens=[seq, 5, 0], clip=2.5)
    x = TensorType("float32", (seq, batch, 2) if layout == 0 else (batch, seq, 2))
    state = TensorType("float32", (nd, batch, hidden) if layout == 0 else (batch, nd, hidden))
    ins = [x, TensorType("float32", (nd, g_per * hidden, 2)), TensorType("float32", (nd, g_per * hidden, hidden)),
           TensorType("float32", (nd, 2 * g_per * hidden)), state]
    if op == "lstm":
        attrs.update(has_initial_c=True, has_peepholes=True)
        ins += [state, TensorType("float32", (nd, 3 * hidden))]
    g = one_node(op, ins, attrs)
    return g, {v.name: rng.uniform(-1, 1, v.type.shape).astype("float32") for v in g.inputs}


@pytest.mark.parametrize("op", RECURRENT_OPS)
@pytest.mark.parametrize("layout", [0, 1])
def test_jax_runs_a_long_sequence_under_scan_and_agrees_with_the_reference(op, layout):
    """A sequence longer than SCAN_FROM steps lowers to JAX as lax.scan (issue 37's XLA acceptance campaign: a 239-step
    LSTM unrolled to ~17,000 HLO lines, which XLA:CPU compiled for over 120 s, a "hang"), with every optional input,
    both directions and sequence_lens masks; jit and eager agree with the reference, and the program stays small."""
    import jax

    from dlcfuzz.lower.jax import to_jax_program

    g, inputs = long_sequence_graph(op, layout)
    ref = reference.outputs(g, inputs)
    program = to_jax_program(g)
    assert "lax.scan(" in program.source
    args = [inputs[v.name] for v in g.inputs]
    assert not compare([np.asarray(o) for o in jax.jit(program.function())(*args)], ref)
    assert not compare(program.run_eager(inputs), ref)
    # unrolled, each step was its own ~70 instructions: the module now holds the step once per direction
    assert len(jax.jit(program.function()).lower(*args).as_text().splitlines()) < 1500


@pytest.mark.parametrize("op", RECURRENT_OPS)
@pytest.mark.parametrize("layout", [0, 1])
def test_torch_runs_a_long_sequence_under_scan_and_agrees_with_the_reference(op, layout):
    """In torch too a sequence longer than SCAN_FROM steps runs under the scan operator (Dynamo unrolls a loop, and
    Inductor's compile grows with it: the size profiles draw recurrences of thousands of steps); eagerly (the scan
    traced by Dynamo) the program agrees with the reference, and Inductor compiles it (fullgraph, as the backend
    does) to the same outputs: one compile, the batch-first LSTM with every optional input."""
    pytest.importorskip("torch", reason="the torch target needs torch (pip install 'dlcfuzz[inductor]')")
    from dlcfuzz.lower.torch import to_torch_program

    g, inputs = long_sequence_graph(op, layout)
    ref = reference.outputs(g, inputs)
    program = to_torch_program(g)
    assert program.source.count("torch._higher_order_ops.scan(") == 2  # a scan per direction, the step written once
    assert not compare(program.run_eager(inputs), ref)
    if (op, layout) == ("lstm", 1):
        from dlcfuzz.backends.inductor.compiling import compile_callable, worker_setup
        from dlcfuzz.lower.torch import to_numpy

        worker_setup()
        args = [program.argument(inputs[v.name]) for v in g.inputs]
        compiled = compile_callable(program.function(), lambda: args, "inductor", {}, None)
        assert not compare([to_numpy(o) for o in compiled(*args)], ref)
