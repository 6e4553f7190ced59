"""How far oatest's ONNXRuntime trigger check reaches (real onnxruntime, no mocks): transformers the session always
runs, seen against the model as given; transformers an earlier one masks, seen with it disabled; those a CPU-only
session cannot fire, left out of the bench's denominator with their reason; the written patterns and the patterns
as given keep their share of the draws; a retyped pattern ORT has no kernel for is a gap, not an internal error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.synth.library import library
from dlcfuzz.synth.pattern import Pattern
from dlcfuzz.synth.synthesize import AS_GIVEN_SHARE, WRITTEN_SHARE, Synthesizer, dtype_variants
from tests.test_synth import wrapped

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

ROOT = Path(__file__).resolve().parents[1]


def _fired(name: str, targets: list[str]) -> dict[str, bool]:
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
    from dlcfuzz.backends.onnxruntime.trigger import ort_fired
    from dlcfuzz.lower.onnx import to_onnx

    by = {p.name: p for p in library()}
    return ort_fired(OnnxRuntimeBackend(), to_onnx(wrapped(by[name])).SerializeToString(), targets)


def test_transformers_the_session_always_runs_are_seen_against_the_model_as_given() -> None:
    """A float16 Erf gets Casts (no float16 kernel), a lossless Cast pair goes, a DequantizeLinear read twice is
    duplicated, whatever disabled_optimizers says; a float32 Erf and a single-consumer QDQ pair change none."""
    assert _fired("float16_erf", ["CastFloat16Transformer", "RemoveDuplicateCastTransformer"]) == \
        {"CastFloat16Transformer": True, "RemoveDuplicateCastTransformer": False}
    assert _fired("cast_roundtrip", ["RemoveDuplicateCastTransformer", "CastFloat16Transformer"]) == \
        {"RemoveDuplicateCastTransformer": True, "CastFloat16Transformer": False}
    assert _fired("dq_two_consumers", ["EnsureUniqueDQForNodeUnit"]) == {"EnsureUniqueDQForNodeUnit": True}
    assert _fired("gelu_erf", ["CastFloat16Transformer"]) == {"CastFloat16Transformer": False}
    assert _fired("relu_quantize", ["EnsureUniqueDQForNodeUnit"]) == {"EnsureUniqueDQForNodeUnit": False}


@pytest.mark.parametrize("name,target", [
    ("cast_before_shape", "PreShapeNodeElimination"),
    ("float16_weight_matmul", "FuseFp16InitializerToFp32NodeTransformer"),
    ("transpose_pair", "TransposeOptimizer_CPUExecutionProvider"),
    ("conv_add_relu", "ConvAddActivationFusion"),
    ("range_gather", "GatherToSliceFusion"),
    ("requantize_same", "QDQFinalCleanupTransformer"),
    ("dq_weight_matmul_bias", "MatMulNBitsFusion"),
])
def test_a_masked_transformer_fires_with_its_masker_disabled_and_only_then(name: str, target: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Disabling the transformer alone leaves the same model (the masker makes its rewrite); with the masker disabled
    in both builds, disabling it changes the model."""
    from dlcfuzz.backends.onnxruntime import trigger

    assert _fired(name, [target]) == {target: True}
    monkeypatch.setattr(trigger, "ORT_MASKED_BY", {})
    assert _fired(name, [target]) == {target: False}


def test_out_of_reach_transformers_are_listed_ones_with_a_reason_and_leave_the_denominator() -> None:
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    listed, out = backend.optimizations(), backend.optimizations_out_of_reach()
    assert {"GroupQueryAttentionFusion", "BiasDropoutFusion", "MatMulActivationFusion", "MemcpyTransformer"} <= set(out)
    assert set(out) <= set(listed) and all(len(why) > 20 for why in out.values())
    spec = importlib.util.spec_from_file_location("optimization_triggers", ROOT / "bench" / "optimization_triggers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rates = {listed[0]: (3, 5), next(iter(out)): (0, 2)}
    lines = bench.table(listed, rates, out)
    assert lines[-1] == f"optimizations fired: 1/{len(listed) - len(out)} ({len(listed)} listed, {len(out)} out of reach)"
    assert any(line.startswith(f"  {next(iter(out))}") and line.endswith(out[next(iter(out))]) for line in lines)
    # one that fires after all counts, in X and in Y
    lines = bench.table(listed, {next(iter(out)): (1, 1)}, out)
    assert lines[-1].startswith(f"optimizations fired: 1/{len(listed) - len(out) + 1} ")


def test_written_patterns_and_patterns_as_given_keep_their_share_of_the_draws() -> None:
    """An optimization's group of one written pattern and three mined ones draws the written one about WRITTEN_SHARE
    of the time, and a pattern with variants is drawn as given about AS_GIVEN_SHARE of the time."""
    by = {p.name: p for p in library()}
    written = by["matmul_add"]
    mined = [Pattern(f"mined{i}", written.graph, written.targets, written.granularity, f"onnx:M/m{i}.onnx")
             for i in range(3)]
    syn = Synthesizer([written, *mined], "onnxruntime")
    (group,) = syn.by_optimization
    rng = np.random.default_rng(0)
    draws = [syn.instance(group, rng) for _ in range(400)]
    from_written = [d for d in draws if d.name.startswith("matmul_add")]
    assert abs(len(from_written) / len(draws) - WRITTEN_SHARE) < 0.08
    assert len(syn.instances(written)) > 5  # dtype, attribute and neighbour variants
    assert abs(sum(d.name == "matmul_add" for d in from_written) / len(from_written) - AS_GIVEN_SHARE) < 0.1
    assert len({d.name for d in from_written}) > 3  # the variants are drawn too


def test_a_retyped_pattern_without_a_kernel_is_a_gap_of_the_test_not_an_internal_error() -> None:
    """Conv + Relu in float64: ORT's CPU provider has no float64 Conv. Through the oatest worker, both builds end
    in a documented rejection and the trigger check records the error instead of raising."""
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.ir.blob import unpack
    from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes
    from dlcfuzz.strategies.oatest import make_handler

    by = {p.name: p for p in library()}
    (variant,) = [v for v in dtype_variants(by["conv_relu"]) if v.name == "conv_relu@float64"]
    g = wrapped(variant)
    backend = OnnxRuntimeBackend()
    tc = TestCase(g, sample_inputs(g, np.random.default_rng(0)), list(backend.default_pair()), seed=0,
                  compiler="onnxruntime", strategy="oatest",
                  meta={"oatest": {"pattern": variant.name, "targets": ["ConvActivationFusion"]}})
    reply = make_handler({"compiler": "onnxruntime"})(tc.to_bytes())
    obs, _, _, _ = reply_from_bytes(reply)
    assert obs and all(o.status != "ok" for o in obs)
    assert all(backend.expected_error(o.error or "") for o in obs), [o.error for o in obs]
    oatest = unpack(reply)[0]["oatest"]
    assert oatest["fired"] is None and "Conv" in oatest["error"]


def test_a_range_of_attributes_alone_is_a_fixed_index_inside_or_outside_its_domain() -> None:
    """Gather indices from a Range (no inputs: its value is fixed) are as valid as a constant inside the data's
    axis, and refused like one outside it."""
    from dlcfuzz.synth.synthesize import usable_pattern

    by = {p.name: p for p in library()}
    assert usable_pattern(by["range_gather"])[0] is not None
    g = by["range_gather"].graph.copy()
    (rng_node,) = [n for n in g.nodes if n.op == "range"]
    rng_node.attrs = {**rng_node.attrs, "start": 5, "limit": 11}  # 5, 7, 9 on an axis of 8
    broken = Pattern("range_past_the_axis", g, {}, "subgraph")
    assert usable_pattern(broken) == (None, "domain: idx: constant outside [-8, 7]")


def _decomposed_layer_norm(opset: int) -> bytes:
    import onnx.helper as h
    from onnx import TensorProto, numpy_helper

    nodes = [h.make_node("ReduceMean", ["x"], ["m"], axes=[-1]), h.make_node("Sub", ["x", "m"], ["d"]),
             h.make_node("Pow", ["d", "two"], ["p"]), h.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
             h.make_node("Add", ["v", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["s"]),
             h.make_node("Div", ["d", "s"], ["n"]), h.make_node("Mul", ["n", "g"], ["ng"]),
             h.make_node("Add", ["ng", "b"], ["y"])]
    consts = {"two": np.float32(2), "eps": np.float32(1e-5), "g": np.ones(8, np.float32), "b": np.zeros(8, np.float32)}
    graph = h.make_graph(nodes, "ln", [h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                         [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]).SerializeToString()


def test_the_opset_gated_transformers_fire_below_the_opset_dlcfuzz_writes_and_not_at_it() -> None:
    """LayerNormFusionL2, below the opset dlcfuzz writes (counted; a test targeting it is written at 16,
    tests/test_ort_opsets.py): it fuses a decomposed layer norm at opset 16 and leaves it to the level-1 instance at
    17 and at what dlcfuzz writes."""
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
    from dlcfuzz.backends.onnxruntime.opsets import ORT_OPSET_GATED
    from dlcfuzz.backends.onnxruntime.trigger import ort_fired
    from dlcfuzz.lower.onnx import OPSET, to_onnx

    backend = OnnxRuntimeBackend()
    assert ORT_OPSET_GATED["LayerNormFusionL2"] == 16 and OPSET >= 17
    assert "LayerNormFusionL2" not in backend.optimizations_out_of_reach()  # counted
    assert ort_fired(backend, _decomposed_layer_norm(16), ["LayerNormFusionL2"]) == {"LayerNormFusionL2": True}
    assert ort_fired(backend, _decomposed_layer_norm(17), ["LayerNormFusionL2"]) == {"LayerNormFusionL2": False}
    by = {p.name: p for p in library()}
    lowered = to_onnx(wrapped(by["layer_norm_decomposed"])).SerializeToString()
    assert ort_fired(backend, lowered, ["LayerNormFusionL2", "LayerNormFusionL1"]) == \
        {"LayerNormFusionL2": False, "LayerNormFusionL1": True}


def test_the_level1_gelu_fusion_fires_where_the_model_is_opset_20() -> None:
    """The erf GELU fires GeluFusionL2 alone at the opset it is lowered in (18), GeluFusionL1 alone beside an operator
    form of opset 20."""
    from dlcfuzz.lower.onnx import to_onnx

    by = {p.name: p for p in library()}
    assert max(o.version for o in to_onnx(wrapped(by["gelu_erf_opset20"])).opset_import if o.domain == "") == 20
    targets = ["GeluFusionL1", "GeluFusionL2"]
    assert _fired("gelu_erf_opset20", targets) == {"GeluFusionL1": True, "GeluFusionL2": False}
    assert _fired("gelu_erf", targets) == {"GeluFusionL1": False, "GeluFusionL2": True}


def test_edge_value_attributes_never_move_a_spliced_range_out_of_its_gather(tmp_path: Path) -> None:
    """An oatest campaign of range_gather alone with edge values (which redraw a Range's bounds): every test is made,
    valid and runs in the reference (an edge-drawn start of 128 on an axis of 8 used to raise in the generation)."""
    import sys

    from dlcfuzz import reference
    from dlcfuzz.oracle.policy import test_seed
    from dlcfuzz.synth.pattern import save_patterns
    from dlcfuzz.synth.synthesize import validity_fault

    sys.path.insert(0, str(ROOT / "bench"))
    from value_space import strategy_of

    by = {p.name: p for p in library()}
    path = save_patterns([by["range_gather"]], tmp_path / "range.json.gz")
    s = strategy_of("oatest", "onnxruntime", patterns=str(path))
    for seq in range(40):
        tc = s.make_test(seq, test_seed(0, seq)).payload
        assert validity_fault(tc.graph) is None, seq
        reference.run(tc.graph, tc.inputs)


def test_group_testing_finds_exactly_the_targets_that_fire_alone_and_builds_once_where_none_does() -> None:
    """`fired_alone` over a model of the builds: B and E change the model when disabled, C and D only together (each
    does the other's rewrite when it is disabled alone: neither fired alone, though the group's build changes). A
    group where none fires costs one build."""
    from dlcfuzz.backends.onnxruntime.trigger import fired_alone

    built: list[frozenset[str]] = []

    def changes(names: list[str]) -> bool:
        built.append(frozenset(names))
        return bool({"B", "E"} & set(names)) or {"C", "D"} <= set(names)

    assert fired_alone(["A", "B", "C", "D", "E"], changes) == ["B", "E"]
    assert {frozenset("B"), frozenset("E"), frozenset("C"), frozenset("D")} <= set(built)  # singles decide
    built.clear()
    assert fired_alone(["A", "C", "F"], changes) == [] and len(built) == 1
    assert fired_alone([], changes) == [] and len(built) == 1


def _two_branches(order: list[int], neg_first: bool = True) -> bytes:
    """x -> Neg -> Abs -> y0 and x -> Sigmoid -> y1, nodes written in `order`; with neg_first False the first branch
    is Abs -> Neg (the same nodes, wired the other way)."""
    import onnx.helper as h
    from onnx import TensorProto

    first, second = ("Neg", "Abs") if neg_first else ("Abs", "Neg")
    nodes = [h.make_node(first, ["x"], ["t"]), h.make_node(second, ["t"], ["y0"]),
             h.make_node("Sigmoid", ["x"], ["y1"])]
    io = [h.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("x", "y0", "y1")]
    graph = h.make_graph([nodes[k] for k in order], "g", io[:1], io[1:])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


def test_a_models_signature_is_its_graph_whatever_order_its_nodes_are_written_in() -> None:
    """ORT writes one optimized model's nodes in different topological orders from build to build; the signature
    the trigger check compares is the same for each order, and differs where the same nodes are wired otherwise."""
    from dlcfuzz.backends.onnxruntime.trigger import ort_signature

    written = {ort_signature(_two_branches(order)) for order in ([0, 1, 2], [2, 0, 1], [0, 2, 1], [1, 0, 2])}
    assert len(written) == 1
    assert ort_signature(_two_branches([0, 1, 2], neg_first=False)) not in written
