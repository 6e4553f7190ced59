"""Corners the generator once left out on purpose and now makes (README, "What the generator leaves out, and
why"): at a fixed seed the sampler draws the corner, and on it our reference agrees with onnx.reference and
ONNXRuntime (the reference's NaN, where the spec's formula is 0/0, with onnx.reference's NaN)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx.reference
import pytest

from dlcfuzz import reference
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.single import single_op_graph
from dlcfuzz.ir import Graph, TensorType
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.ops import get_op
from dlcfuzz.oracle.numeric import compare
from op_harness import run_ort

SEED = 3
DRAWS = 400


def drawn(op: str, first: TensorType, corner: Callable[[Graph, dict[str, np.ndarray]], bool], count: int = 3
          ) -> list[tuple[Graph, dict[str, np.ndarray]]]:
    """Up to `count` one-operator graphs of `op` (input 0 of type `first`) with their sampled inputs, in which the
    sampler drew `corner`, from DRAWS draws at SEED."""
    spec, rng = get_op(op), np.random.default_rng(SEED)
    found = []
    for _ in range(DRAWS):
        g = single_op_graph(spec, rng, first)
        inputs = sample_inputs(g, rng)
        if corner(g, inputs):
            found.append((g, inputs))
            if len(found) == count:
                break
    return found


def onnx_reference_outputs(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    model = to_onnx(g)
    names = [i.name for i in model.graph.input]
    return [np.asarray(y) for y in onnx.reference.ReferenceEvaluator(model).run(None, {n: inputs[n] for n in names})]


def assert_agrees(g: Graph, inputs: dict[str, np.ndarray]) -> None:
    """Our reference equals onnx.reference's and ORT's results (NaN where they have NaN, and only there)."""
    ours = reference.outputs(g, inputs)
    for who, got in (("onnx.reference", onnx_reference_outputs(g, inputs)), ("onnxruntime", run_ort(to_onnx(g), inputs))):
        for y, x in zip(ours, got, strict=True):
            np.testing.assert_array_equal(np.isnan(y), np.isnan(np.asarray(x)), err_msg=f"{who}: NaN positions")
        finite = [np.where(np.isnan(y), 0, y) for y in ours]
        assert not compare([np.where(np.isnan(x), 0, x) for x in got], finite), f"{who} differs: {got} vs {ours}"


# ---- loss: "mean" with ignored targets --------------------------------------------------------------------------


def _ignored_under_mean(everything: bool) -> Callable[[Graph, dict[str, np.ndarray]], bool]:
    def corner(g: Graph, inputs: dict[str, np.ndarray]) -> bool:
        attrs = g.nodes[0].attrs
        if attrs["reduction"] != "mean" or attrs["ignore_index"] is None:
            return False
        ignored = np.asarray(g.constants["x1"]) == attrs["ignore_index"]
        return bool(ignored.all()) if everything else bool(ignored.any() and not ignored.all())
    return corner


def test_mean_loss_with_some_targets_ignored_is_generated_and_agrees():
    for op in ("negative_log_likelihood_loss", "softmax_cross_entropy_loss"):
        got = drawn(op, TensorType("float32", (4, 3, 2)), _ignored_under_mean(everything=False))
        assert len(got) == 3, f"{op}: the sampler drew no mean loss with some targets ignored"
        for g, inputs in got:
            assert_agrees(g, inputs)
            assert np.isfinite(reference.outputs(g, inputs)[0]).all()


def test_mean_loss_with_every_target_ignored_is_nan_as_the_spec_divides_0_by_0():
    # one target and two classes: the draw ignores it in some instances; the function body's ReduceSum(loss) /
    # ReduceSum(weights) is 0/0 there, NaN in onnx.reference, ORT and ours (the test is not judged: an unknown)
    got = drawn("negative_log_likelihood_loss", TensorType("float32", (1, 2)), _ignored_under_mean(everything=True),
                count=2)
    assert got, "the sampler drew no mean loss with every target ignored"
    for g, inputs in got:
        assert np.isnan(reference.outputs(g, inputs)[0]).all()
        assert_agrees(g, inputs)


# ---- recurrent: a sequence of length 0 --------------------------------------------------------------------------


def _empty_sequence_with_initial_state(g: Graph, inputs: dict[str, np.ndarray]) -> bool:
    attrs = g.nodes[0].attrs  # layout 0: onnxruntime runs no batch-first recurrence
    return attrs["layout"] == 0 and attrs["has_initial_h"] and 0 in (attrs["sequence_lens"] or ())


def test_zero_sequence_length_is_generated_and_onnxruntime_follows_the_other_reading():
    for op in ("rnn", "gru", "lstm"):
        got = drawn(op, TensorType("float32", (3, 2, 2)), _empty_sequence_with_initial_state, count=2)
        assert got, f"{op}: the sampler drew no zero sequence length with an initial state"
        for g, inputs in got:
            attrs = g.nodes[0].attrs
            empty = np.asarray(attrs["sequence_lens"]) == 0
            ours = reference.outputs(g, inputs)
            other = [reference.run(g, inputs, other_readings=True)[o] for o in g.outputs]
            h0 = inputs[g.nodes[0].inputs[3 + attrs["has_bias"]]]
            # no step ran: Y is zero, Y_h the initial state (ours) or zero (the other reading)
            assert not ours[0][:, :, empty].any() and not other[0][:, :, empty].any()
            np.testing.assert_allclose(ours[1][:, empty], h0[:, empty], rtol=1e-6)
            assert not other[1][:, empty].any() and not other[-1][:, empty].any()
            np.testing.assert_array_equal(ours[1][:, ~empty], other[1][:, ~empty])
            ort = run_ort(to_onnx(g), inputs)
            assert not compare([np.asarray(y) for y in ort], other), f"{op}: onnxruntime follows neither reading"


# ---- pooling: auto_pad VALID with dilations ---------------------------------------------------------------------


def _valid_and_dilated(g: Graph, inputs: dict[str, np.ndarray]) -> bool:
    attrs = g.nodes[0].attrs
    return attrs.get("auto_pad") == "VALID" and any(d != 1 for d in attrs["dilations"])


def test_valid_pooling_with_dilations_is_generated_and_agrees():
    for op in ("max_pool2d", "avg_pool2d"):
        got = drawn(op, TensorType("float32", (2, 2, 6, 5)), _valid_and_dilated, count=2)
        assert got, f"{op}: the sampler drew no VALID pooling with dilations"
        for g, inputs in got:
            ours = reference.outputs(g, inputs)
            assert not compare([np.asarray(y) for y in run_ort(to_onnx(g), inputs)], ours), f"{op}: onnxruntime differs"
            if op == "max_pool2d":  # onnx.reference 1.23.2's dilated AveragePool adds a window past VALID's last
                assert not compare(onnx_reference_outputs(g, inputs), ours), f"{op}: onnx.reference differs"


# ---- disruptive mode: an attribute value the spec forbids -------------------------------------------------------


def test_a_window_of_size_0_is_generated_in_disruptive_mode_and_its_twin_is_the_sampled_window():
    from dlcfuzz.gen.coverage import Coverage
    from dlcfuzz.gen.disruptive import generate_disruptive, legal_twin, onnx_rejects

    choices = [(get_op(op), ["float32"]) for op in ("hann_window", "relu")]
    g, inputs, broken = generate_disruptive(np.random.default_rng(SEED), Coverage(), choices, rules=("attribute",))
    node = next(n for n in g.nodes if n.name == broken.node)
    assert (broken.op, broken.rule, node.attrs["size"]) == ("hann_window", "attribute", 0)
    assert broken.legal_attrs is not None and broken.legal_attrs["size"] >= 1
    assert onnx_rejects(g, [v.name for v in node.outputs], broken.rule)  # ONNX's inference refuses size 0
    # onnxruntime refuses it too (a compiler that ran it would be a finding)
    with pytest.raises(Exception, match="size input must be greater than 0"):
        run_ort(to_onnx(g, untyped_outputs=[broken.output]), inputs)
    twin, twin_inputs = legal_twin(g, inputs, broken.to_json(), SEED)
    assert next(n for n in twin.nodes if n.name == broken.node).attrs == broken.legal_attrs
    assert not compare([np.asarray(y) for y in run_ort(to_onnx(twin), twin_inputs)], reference.outputs(twin, twin_inputs))
