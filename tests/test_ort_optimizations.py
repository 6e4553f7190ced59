"""ONNXRuntime's optimizations as the installed release lists them, and the patterns that fire them (real
onnxruntime, no mocks): the list read from ORT, each rule name real, dtype variants of a pattern firing its
transformer outside float32, and transformers that no pattern fired before firing from theirs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from dlcfuzz.synth.library import library
from dlcfuzz.synth.synthesize import Synthesizer, dtype_variants, neighbour_variants
from tests.test_synth import wrapped

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

# rules of ORT_RULES no pattern can fire (library_ort.py says why)
OUT_OF_REACH = {"PreShapeNodeElimination", "LabelEncoderFusion"}


def _fired(pattern, tags: list[str]) -> dict[str, bool]:
    """As the oatest worker asks it: in its configuration (at the opset an opset-gated target needs, opsets.py)."""
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    config = backend.oatest_configs(np.random.default_rng(0), tags, [backend.default_pair()[1]])[-1]
    return backend.fired(wrapped(pattern), config, tags)


def test_optimizations_are_read_from_the_installed_release() -> None:
    """The backend's optimizations are ORT's own: the transformers its log names at every level, the
    rule-based containers opened into their rules, nothing twice."""
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
    from dlcfuzz.backends.onnxruntime.optimizers import ORT_CONTAINERS

    opts = OnnxRuntimeBackend().optimizations()
    assert len(opts) >= 40 and len(set(opts)) == len(opts)
    # level 1, level 2 and level 3 transformers, and rules of both containers
    assert {"ConstantFolding", "MatMulAddFusion", "GeluFusionL2", "SkipLayerNormFusion", "NchwcTransformer",
            "EliminateIdentity", "ConvBNFusion", "ReluQuantRewrite"} <= set(opts)
    assert not set(ORT_CONTAINERS) & set(opts)
    assert "NoSuchOptimizer" not in opts


def test_every_listed_rule_fires_on_its_pattern() -> None:
    """A rule name ORT does not know is silently ignored by disabled_optimizers (it would read as never
    firing): every listed rule in reach has a library pattern that fires it under that name."""
    from dlcfuzz.backends.onnxruntime.optimizers import ORT_RULES, ort_optimizers

    rules = {r for rs in ORT_RULES.values() for r in rs} & set(ort_optimizers())
    assert len(rules) >= 15
    by_target: dict[str, list] = {}
    for p in library():
        for t in p.targets_for("onnxruntime"):
            by_target.setdefault(t, []).append(p)
    for rule in sorted(rules - OUT_OF_REACH):
        assert rule in by_target, f"no pattern targets {rule}"
        assert _fired(by_target[rule][0], [rule]) == {rule: True}, rule


def test_a_retyped_pattern_fires_its_transformer_outside_float32() -> None:
    """The decomposed LayerNorm and MatMul+Add, mined/written in float32, fire LayerNormFusionL1 in float64 and
    MatMulAddFusion in float16; integer variants exist where every operator takes the dtype."""
    by = {p.name: p for p in library()}
    ln = {v.name: v for v in dtype_variants(by["layer_norm_decomposed"])}
    assert set(ln) == {"layer_norm_decomposed@float16", "layer_norm_decomposed@float64"}
    assert ln["layer_norm_decomposed@float64"].graph.inputs[0].type.dtype == "float64"
    assert _fired(ln["layer_norm_decomposed@float64"], ["LayerNormFusionL1"]) == {"LayerNormFusionL1": True}
    mm = {v.name: v for v in dtype_variants(by["matmul_add"])}
    assert {"matmul_add@float16", "matmul_add@int32", "matmul_add@int64"} <= set(mm)
    assert _fired(mm["matmul_add@float16"], ["MatMulAddFusion"]) == {"MatMulAddFusion": True}
    assert not dtype_variants(by["qdq_conv_float_bias"])  # QuantizeLinear takes float32 alone


def test_a_spliced_variant_keeps_its_dtype() -> None:
    """Spliced into float32 seed graphs, a float64 variant is not re-concretized back to float32: the context
    is cast to it."""
    by = {p.name: p for p in library()}
    (variant,) = [v for v in dtype_variants(by["add_layer_norm"]) if v.name.endswith("@float64")]
    syn = Synthesizer([variant], "onnxruntime", retyped=False, only_ops=["relu", "add", "mul", "sigmoid", "tanh"])
    rng = np.random.default_rng(0)
    for _ in range(5):
        s = syn.next(rng)
        assert s.pattern == variant.name
        types = s.graph.types()
        spliced = [n for n in s.graph.nodes if n.op == "layer_norm" and n.name.endswith("_ln")]
        assert spliced and all(types[n.inputs[0]].dtype == "float64" for n in spliced)


def test_newly_covered_transformers_fire_in_a_synthesized_graph() -> None:
    """Transformers no pattern fired before (SkipLayerNormFusion, Pad_Fusion, SimplifiedLayerNormFusion) fire
    when their pattern is spliced into a seed graph, as the oatest worker asks the backend (seed graphs of
    operators every ORT build has kernels for: a campaign's come from its capability probe)."""
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    by = {p.name: p for p in library()}
    for name, target in [("add_layer_norm", "SkipLayerNormFusion"), ("pad_conv", "Pad_Fusion"),
                         ("rms_norm_decomposed", "SimplifiedLayerNormFusion")]:
        syn = Synthesizer([by[name]], "onnxruntime", retyped=False, only_ops=["relu", "add", "mul", "sigmoid", "tanh"])
        s = syn.next(np.random.default_rng(1))
        assert s.pattern == name
        assert backend.fired(s.graph, backend.default_pair()[1], [target]) == {target: True}, name


def test_patterns_for_transformers_that_never_fired_fire_them() -> None:
    """Written from ORT's sources for transformers no pattern fired: each fires its own."""
    by = {p.name: p for p in library()}
    for name, target in [("reshape_gathers_slice", "GatherSliceToSplitFusion"),
                         ("matmul_integer_scaled", "MatMulIntegerToFloatFusion"),
                         ("where_dq_scalar", "WhereDummyDq"),
                         ("dq_weight_matmul_bias", "MatMulNBitsFusion"),
                         ("bert_attention", "AttentionFusion"),
                         ("unsqueezed_constant", "UnsqueezeElimination"),
                         ("layer_norm_decomposed_opset16", "LayerNormFusionL2")]:
        assert by[name].targets_for("onnxruntime") == [target]
        assert _fired(by[name], [target]) == {target: True}, name


def test_a_neighbour_decides_whether_a_fusion_fires() -> None:
    """Spliced into a seed graph, MatMul+Add fires MatMulAddFusion and Conv+BatchNormalization ConvBNFusion; the
    same pattern with its inner value also a graph output, read by a second consumer, or passed through a
    lossless Cast pair does not fire them (ORT checks the edge count, graph outputs, the parent's op type);
    with its constants shared by a second copy it still does."""
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    by = {p.name: p for p in library()}
    for name, inner, target in [("matmul_add", "mm", "MatMulAddFusion"), ("conv_bn", "conv", "ConvBNFusion")]:
        variants = {v.meta["neighbour"]: v for v in neighbour_variants(by[name])}
        assert variants["output"].name == f"{name}^output:{inner}"
        expected = {"": True, "output": False, "consumer": False, "cast": False, "shared": True}
        for kind, fires in expected.items():
            p = variants[kind] if kind else by[name]
            syn = Synthesizer([p], "onnxruntime", retyped=False, only_ops=["relu", "add", "mul", "sigmoid", "tanh"])
            s = syn.next(np.random.default_rng(1))
            assert s.pattern == p.name
            if kind == "output":
                assert any(o.endswith(f"_{inner}") for o in s.graph.outputs), s.graph.outputs
            assert backend.fired(s.graph, backend.default_pair()[1], [target]) == {target: fires}, (name, kind)
    syn = Synthesizer([by["matmul_add"]], "onnxruntime")
    assert {"matmul_add^output:mm", "matmul_add^shared"} <= {v.name for v in syn.instances(by["matmul_add"])}


def test_a_dequantized_weight_matmul_computes_in_float32_as_every_configuration_runs_it() -> None:
    """DequantizeLinear'd int8 weight -> MatMul -> bias becomes a MatMulNBits at ORT_ENABLE_ALL; at ORT's default
    accuracy level (4) it quantizes the activations to int8 and differs from the reference by design. The
    configurations set level 1 (optimizers.ORT_SESSION_CONFIG), so the fused model is judged like any other: it passes."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import Config, TestCase
    from dlcfuzz.oracle.verdict import judge

    backend = get_backend("onnxruntime")
    configs = backend.configs()
    by = {p.name: p for p in library()}
    g = wrapped(by["dq_weight_matmul_bias"])
    optimized = backend.compile(g, Config("dump", {**configs["ort-all"].options, "dump": True})).optimized_model
    fused = [n for n in onnx.load_from_string(optimized).graph.node if n.op_type == "MatMulNBits"]
    assert [a.i for n in fused for a in n.attribute if a.name == "accuracy_level"] == [1]
    tc = TestCase(g, sample_inputs(g, np.random.default_rng(0)), [configs["ort-disable"], configs["ort-all"]], seed=0,
                  compiler="onnxruntime")
    ref = reference_of(tc)
    verdicts = judge("onnxruntime", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)
    assert [v.kind for v in verdicts] == ["pass"], verdicts


def test_the_transformer_list_is_read_from_a_model_older_releases_load() -> None:
    """The model ORT's optimizer log is read from has the IR version of its opset (8), not onnx's newest: an
    older onnxruntime (1.20.1 allows IR 10) refused it, and the first minimization of an `auto` campaign
    against that release died with CalledProcessError. The list is read from it on the installed release."""
    import onnx

    from dlcfuzz.backends.onnxruntime.optimizers import PROBE_MODEL_SOURCE, ort_optimizers
    from dlcfuzz.lower.onnx import IR_VERSION

    namespace: dict = {}
    exec(PROBE_MODEL_SOURCE, namespace)  # noqa: S102 - the module's own model source, run as its subprocess runs it
    model = namespace["model"]
    onnx.checker.check_model(model)
    assert model.ir_version == IR_VERSION == onnx.helper.find_min_ir_version_for(list(model.opset_import))
    assert "ConstantFolding" in ort_optimizers()
