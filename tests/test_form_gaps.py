"""Known form gaps: an operator form one compiler lacks (a dtype combination, an attribute form) lives with
that compiler (`known_form_gaps`), not in ops/. Per ONNXRuntime form gap: ops/ samples the form, ORT's
sampling (generation and the capability probe) never makes it while ORT 1.32 still refuses it (or, for
Resize's roi and LpPool's dilated SAME, still computes it differently), and a compiler that has the kernel gets it generated and judged against
the reference."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.backends import get_backend
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.random import avoiding, avoiding_choices, form_gap_of, form_gaps_in, generate
from dlcfuzz.gen.single import single_op_graph
from dlcfuzz.ir import TensorType
from dlcfuzz.ops import get_op
from dlcfuzz.oracle.numeric import compare

pytest.importorskip("onnxruntime")
ORT = get_backend("onnxruntime")

# (operator, index of its form gap in ORT's list, the compiler and configuration that has the kernel,
# input-0 types to sample from)
F32_RESIZE = [TensorType("float32", s) for s in ((5,), (3, 4), (2, 3, 4), (2, 3, 4, 4), (1, 2, 3, 3))]
Q_MATMUL = [TensorType(dt, s) for dt in ("uint8", "int8") for s in ((2, 3), (2, 2, 3))]
Q_CONV = [TensorType(dt, (1, 3, 5, 5)) for dt in ("uint8", "int8")]
F32_SEQ = [TensorType("float32", s) for s in ((3, 2, 4), (2, 3, 3))]
CASES = [
    ("qlinear_matmul", 0, ("openvino", "ov-cpu"), Q_MATMUL),
    ("qlinear_conv", 0, ("tvm", "tvm-unopt"), Q_CONV),  # OpenVINO's importer refuses per-channel w_scale here
    ("conv_integer", 0, ("openvino", "ov-cpu"), Q_CONV),
    ("resize", 0, ("tvm", "tvm-unopt"), F32_RESIZE),  # OpenVINO's importer refuses some of these axes
    ("resize", 1, ("tvm", "tvm-unopt"), F32_RESIZE),
    ("resize", 2, ("tvm", "tvm-unopt"), F32_RESIZE),
    ("one_hot", 0, ("tvm", "tvm-unopt"), [TensorType(dt, (3, 2)) for dt in ("int32", "int64", "float32", "float16")]),
    ("pow", 0, ("tvm", "tvm-unopt"), [TensorType("float32", s) for s in ((3, 4), (2, 3))]),  # TVM: float bases only
    ("rnn", 0, ("tvm", "tvm-unopt"), F32_SEQ),  # OpenVINO's importer refuses layout 1
    ("gru", 0, ("tvm", "tvm-unopt"), F32_SEQ),
    ("lstm", 0, ("tvm", "tvm-unopt"), F32_SEQ),
    ("lrn", 0, ("tvm", "tvm-unopt"), [TensorType("float32", s) for s in ((1, 5, 3), (1, 4, 3, 3), (2, 3, 2, 2), (1, 5, 2, 2, 2))]),
    ("rotary_embedding", 0, ("openvino", "ov-cpu"), [TensorType("float32", s) for s in ((1, 2, 6, 4), (2, 5, 8))]),
    ("lp_pool", 0, ("openvino", "ov-cpu"), [TensorType("float32", s) for s in ((1, 2, 7, 6), (1, 2, 8))]),
    ("max_pool2d", 0, ("openvino", "ov-cpu"), [TensorType("float32", (1, 2, 7, 6))]),
    ("max_pool1d", 0, ("tvm", "tvm-unopt"), [TensorType("float32", (1, 2, 9))]),
]


def in_gap(op: str, k: int, firsts: list[TensorType], count: int, seed: int = 0, **kw):
    """`count` one-operator graphs of `op` sampled from ops/ (the spec's space) that fall in ORT's k-th form
    gap of `op`, with their inputs; and how many samples that took."""
    gap = ORT.known_form_gaps(op)[k]
    rng = np.random.default_rng(seed)
    found, tries = [], 0
    while len(found) < count and tries < 3000:
        tries += 1
        try:
            g = single_op_graph(get_op(op), rng, firsts[tries % len(firsts)])
        except Exception:  # noqa: BLE001 - a first type the operator does not fit
            continue
        n, env = g.nodes[0], g.types()
        if gap.matches([env[i] for i in n.inputs], n.attrs):
            found.append((g, sample_inputs(g, rng)))
    return found


@pytest.mark.parametrize("op,k,compiler,firsts", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_ort_sampling_avoids_its_form_gap(op, k, compiler, firsts):
    """ops/ samples the form; ORT's narrowed spec never does, and ORT 1.32 still refuses (or ignores) it."""
    gap = ORT.known_form_gaps(op)[k]
    assert len(gap.reason) > 40 and "1.32" in gap.reason
    assert in_gap(op, k, firsts, 3), f"ops/ never samples {op}'s form: {gap.reason}"
    narrowed = avoiding(get_op(op), ORT.known_form_gaps)
    rng = np.random.default_rng(1)
    made = 0
    for i in range(300):
        try:
            g = single_op_graph(narrowed, rng, firsts[i % len(firsts)])
        except Exception:  # noqa: BLE001 - a first type the operator does not fit
            continue
        made += 1
        assert not form_gaps_in(g, ORT.known_form_gaps), g.nodes[0].attrs
    assert made > 100
    # ORT 1.32 still lacks the form: its rejection is expected ("unsupported"), or its result differs
    g, x = in_gap(op, k, firsts, 1, seed=3)[0]
    ref = reference.outputs(g, x)
    try:
        got = ORT.compile(g, ORT.default_pair()[0]).run(x)
    except Exception as e:  # noqa: BLE001 - the compiler's rejection
        assert ORT.expected_error(str(e)) == "unsupported", str(e)[-300:]
    else:
        assert "divergence" in gap.reason and compare([np.asarray(y) for y in got], ref), "ORT now runs the form"


@pytest.mark.parametrize("op,k,compiler,firsts", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_another_compiler_gets_the_form_judged_against_the_reference(op, k, compiler, firsts):
    name, config = compiler
    backend = get_backend(name)
    assert not backend.known_form_gaps(op)
    for g, x in in_gap(op, k, firsts, 3, seed=5):
        got = backend.compile(g, backend.configs()[config]).run(x)
        bad = compare([np.asarray(y) for y in got], reference.outputs(g, x))
        assert not bad, (bad, g.nodes[0].attrs)


def test_generated_graphs_avoid_ort_form_gaps_only_for_ort():
    """The generator honours the choices' narrowed specs: ORT's graphs never hold a form gap, while the
    spec's own choices do (what TVM, OpenVINO, Inductor and XLA get)."""
    ops = [(get_op(n), ["uint8", "int8"]) for n in ("qlinear_matmul", "qlinear_conv")]
    rng = np.random.default_rng(0)
    spec_space = [generate(rng, 4, choices=ops) for _ in range(40)]
    assert sum(len(form_gaps_in(g, ORT.known_form_gaps)) for g in spec_space) > 20
    narrowed = avoiding_choices(ops, ORT.known_form_gaps)
    assert not any(form_gaps_in(generate(rng, 4, choices=narrowed), ORT.known_form_gaps) for _ in range(40))
    for s, _ in narrowed:  # everything but sampling is the operator's own
        assert s.name == get_op(s.name).name and type(s) is type(get_op(s.name))
    n = spec_space[0].nodes[0]
    env = spec_space[0].types()
    assert form_gap_of(n.op, [env[i] for i in n.inputs], n.attrs, lambda op: ()) is None


def test_probe_instances_avoid_the_compilers_form_gaps():
    """A probed (operator, dtype) pair is not marked unsupported for a form the compiler lacks: ORT's probe
    instances avoid its form gaps, and its cache key changes with them."""
    from dlcfuzz.strategies.probe import forms_fingerprint, probe_cases

    cases = probe_cases(0, ORT.known_form_gaps)
    assert {op for op, _, _ in cases} >= {"qlinear_matmul", "qlinear_conv", "conv_integer", "resize"}
    assert not [op for op, _, g in cases if form_gaps_in(g, ORT.known_form_gaps)]
    assert forms_fingerprint(ORT) and forms_fingerprint(get_backend("openvino")) == ""
