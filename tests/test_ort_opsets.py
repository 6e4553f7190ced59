"""ONNXRuntime transformers that fire only below the opset dlcfuzz's lowering writes (backends/onnxruntime/opsets.py),
on the real onnxruntime: a test targeting one is written at its opset, where it fires; the model written there
computes what the model as lowered computes; a model an operator of which changes meaning there stays as lowered."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from dlcfuzz.ir.graph import Graph
from dlcfuzz.synth.library import library
from dlcfuzz.synth.library_ort import bert_attention_block
from dlcfuzz.synth.pattern import Pattern
from dlcfuzz.synth.synthesize import Synthesizer, usable_pattern
from dlcfuzz.zoo.builder import Builder
from tests.test_synth import wrapped

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")

def bert_embedding(seed: int) -> Graph:
    """BERT's embeddings into the attention of bert_attention (embed_layer_norm_fusion.cc, FuseSubGraph: word Gather
    + position embedding, + segment Gather, into the LayerNormalization an Attention reads; with static shapes the
    position embedding is a constant [B, S, W], the same for every batch, as ConstantFolding leaves it). Token and
    segment ids are int64 computed in range from the `tokens` input (|t| mod the vocabulary, mod 2). EmbedLayerNormFusion
    makes one com.microsoft EmbedLayerNormalization; it needs the Attention AttentionFusion makes, so opset 12 and
    MatMulAddFusion disabled, as bert_attention."""
    batch, seq, hidden, vocab = 2, 4, 8, 16
    b = Builder("bert_embedding", seed)
    tokens = b.input("tokens", (batch, seq))
    magnitude = b.op("floor", [b.op("abs", [tokens], "tokens_abs")], "tokens_floor")
    ids = b.op("cast", [b.op("mod", [magnitude, b.scalar("vocab", float(vocab))], "ids_f", fmod=1)], "ids",
               to="int64")
    segments = b.op("cast", [b.op("mod", [magnitude, b.scalar("two_segments", 2.0)], "segments_f", fmod=1)],
                    "segments", to="int64")
    words = b.op("gather", [b.param("word_embedding", b.rng.normal(0, 0.5, (vocab, hidden))), ids], "words", axis=0)
    positions = np.broadcast_to(b.rng.normal(0, 0.5, (1, seq, hidden)), (batch, seq, hidden))
    embedded = b.op("add", [words, b.param("position_embedding", positions)], "word_position")
    segment = b.op("gather", [b.param("segment_embedding", b.rng.normal(0, 0.5, (2, hidden))), segments], "segment",
                   axis=0)
    x = b.op("add", [embedded, segment], "embedded")
    return b.outputs(bert_attention_block(b, x, b.input("lengths", (batch, 1))))


def _patterns() -> dict[str, Pattern]:
    """The library's, and bert_embedding, which synthesis refuses (library_ort.py says why)."""
    out = {p.name: p for p in library()}
    out["bert_embedding"] = Pattern("bert_embedding", bert_embedding(0), {"onnxruntime": ["EmbedLayerNormFusion",
                                                                                         "AttentionFusion"]})
    return out


GATED_PATTERNS = [("unsqueezed_constant", ["UnsqueezeElimination"], 12),
                  ("layer_norm_decomposed_opset16", ["LayerNormFusionL2"], 16),
                  ("bert_attention", ["AttentionFusion"], 12),
                  ("bert_embedding", ["EmbedLayerNormFusion", "AttentionFusion"], 12)]


def _backend():
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend()


def _opset(model_bytes: bytes) -> int:
    return next(o.version for o in onnx.load_from_string(model_bytes).opset_import if o.domain in ("", "ai.onnx"))


@pytest.mark.parametrize("name,targets,opset", GATED_PATTERNS)
def test_a_test_targeting_an_opset_gated_transformer_is_written_at_its_opset_and_fires_it(name: str,
                                                                                         targets: list[str],
                                                                                         opset: int) -> None:
    """oatest_configs asks the transformers' opset; the model is written there; they fire there and not in the same
    graph at the opset the lowering writes."""
    from dlcfuzz.backends.onnxruntime.trigger import ort_fired
    from dlcfuzz.lower.onnx import OPSET

    backend = _backend()
    by = _patterns()
    assert by[name].targets_for("onnxruntime") == targets
    configs = backend.oatest_configs(np.random.default_rng(0), targets, list(backend.default_pair()))
    assert [c.options.get("opset") for c in configs] == [opset, opset]
    g = wrapped(by[name])
    lowered = backend.lower(g, configs[1])
    assert _opset(lowered) == opset and backend.lower_key(configs[1]) == f"onnx@{opset}"
    assert backend.fired(g, configs[1], targets) == dict.fromkeys(targets, True)
    assert _opset(backend.lower(g, backend.default_pair()[1])) >= OPSET
    assert ort_fired(backend, backend.lower(g, backend.default_pair()[1]), targets) == dict.fromkeys(targets, False)


@pytest.mark.parametrize("name", [name for name, _, _ in GATED_PATTERNS])
def test_the_model_written_at_a_lower_opset_computes_what_the_lowered_one_does(name: str) -> None:
    """Both configurations at the lower opset agree with the reference, and so does one with the target's masker off
    (AttentionFusion's and EmbedLayerNormFusion's rewrites included: the pattern's mask is a right-padded 0/1 mask, the
    form the fused Attention's mask index stands for, and its ids are in range)."""
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import Config, TestCase
    from dlcfuzz.oracle.verdict import judge

    backend = _backend()
    p = _patterns()[name]
    from dlcfuzz.backends.onnxruntime.trigger import ORT_MASKED_BY

    low, high = backend.oatest_configs(np.random.default_rng(0), p.targets_for("onnxruntime"),
                                       list(backend.default_pair()))
    # and the target's maskers off, so that its rewrite is in a compared build
    maskers = sorted({m for t in p.targets_for("onnxruntime") for m in ORT_MASKED_BY.get(t, ())})
    rewriting = Config("ort-all-unmasked", {**high.options, "disabled_optimizers": maskers})
    configs = [low, high, rewriting]
    optimized = backend.compile(wrapped(p), Config("dump", {**rewriting.options, "dump": True})).optimized_model
    fused = {n.op_type for n in onnx.load_from_string(optimized).graph.node}
    expected = {"bert_attention": "Attention", "bert_embedding": "EmbedLayerNormalization",
                "layer_norm_decomposed_opset16": "LayerNormalization"}
    assert expected.get(name, "Sigmoid") in fused and "Unsqueeze" not in fused, fused
    g = wrapped(p)
    for seed in range(3):
        tc = TestCase(g, sample_inputs(g, np.random.default_rng(seed)), configs, seed=seed, compiler="onnxruntime")
        ref = reference_of(tc)
        verdicts = judge("onnxruntime", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)
        assert [v.kind for v in verdicts] == ["pass"], (seed, verdicts)


def test_a_model_an_operator_of_which_changes_meaning_below_stays_at_its_opset() -> None:
    """Softmax before opset 13 flattens from its axis: over the last axis it means the same (written at 12), over
    another it does not (left as lowered); an operator the table does not hold, or a subgraph, leaves it too."""
    from dlcfuzz.backends.onnxruntime.opsets import at_opset
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.types import TensorType
    from dlcfuzz.lower.onnx import to_onnx

    def softmax(axis: int) -> bytes:
        t = TensorType("float32", (2, 3, 4))
        g = Graph([Value("x", t)], {}, [Node("softmax", ["x"], [Value("y", t)], {"axis": axis}, name="sm")], ["y"])
        return to_onnx(g).SerializeToString()

    assert _opset(at_opset(softmax(-1), 12)) == 12
    assert _opset(at_opset(softmax(2), 12)) == 12
    assert at_opset(softmax(1), 12) is None
    by = {p.name: p for p in library()}
    assert at_opset(to_onnx(by["gelu_erf_opset20"].graph).SerializeToString(), 12) is None  # IsInf of float16
    assert at_opset(to_onnx(by["add_layer_norm"].graph).SerializeToString(), 16) is None  # LayerNormalization-17


def test_synthesized_tests_of_a_gated_pattern_are_written_at_its_opset_where_their_operators_allow() -> None:
    """Spliced into seed graphs of operators every ORT build has, the attention pattern's tests are written at 12 and
    fire AttentionFusion there (a seed operator the lower opset lacks leaves a test at its own opset)."""
    backend = _backend()
    by = {p.name: p for p in library()}
    syn = Synthesizer([by["bert_attention"]], "onnxruntime", retyped=False,
                      only_ops=["relu", "add", "mul", "sigmoid", "tanh"])
    config = backend.oatest_configs(np.random.default_rng(0), ["AttentionFusion"], [backend.default_pair()[1]])[-1]
    rng = np.random.default_rng(1)
    fired = 0
    for _ in range(4):
        s = syn.next(rng)
        assert _opset(backend.lower(s.graph, config)) == 12
        fired += backend.fired(s.graph, config, ["AttentionFusion"])["AttentionFusion"]
    assert fired >= 1


def test_the_reproducer_of_a_test_written_at_a_lower_opset_runs_that_model(tmp_path) -> None:
    """The reproducer embeds the model as the configurations compiled it (at opset 12) and runs it standalone."""
    import subprocess
    import sys

    from dlcfuzz import reference
    from dlcfuzz.gen.inputs import sample_inputs

    backend = _backend()
    g = wrapped({p.name: p for p in library()}["bert_attention"])
    configs = backend.oatest_configs(np.random.default_rng(0), ["AttentionFusion"], list(backend.default_pair()))
    inputs = sample_inputs(g, np.random.default_rng(0))
    script = tmp_path / "repro.py"
    script.write_text(backend.reproducer(g, inputs, reference.outputs(g, inputs), configs, "wrong-result", "t", "d"))
    assert 'make_opsetid("", 12)' in script.read_text() or "make_opsetid('', 12)" in script.read_text()
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "not reproduced" in r.stdout, r.stdout + r.stderr[-2000:]


def test_synthesis_refuses_the_embedding_pattern_for_its_computed_ids() -> None:
    """Why no library pattern targets EmbedLayerNormFusion: its ids are computed values feeding Gather."""
    assert usable_pattern(_patterns()["bert_embedding"])[0] is None


def test_a_floor_mod_of_floats_stays_at_opset_28() -> None:
    """ORT 1.32 acceptance campaign, finding 1: Mod with fmod=0 on float32 (floor modulo, opset 28) was relabelled
    opset 12, which ONNX's check admits and onnxruntime refuses to run ("fmod attribute must be true for floating
    point types before opset 28"). It stays as lowered; C fmod of floats and floor modulo of integers still move."""
    import onnxruntime as ort

    from dlcfuzz.backends.onnxruntime.opsets import at_opset
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.types import TensorType
    from dlcfuzz.lower.onnx import to_onnx

    def mod(dtype: str, fmod: int) -> bytes:
        t = TensorType(dtype, (2, 3))
        g = Graph([Value("a", t), Value("b", t)], {}, [Node("mod", ["a", "b"], [Value("y", t)], {"fmod": fmod},
                                                         name="m")], ["y"])
        return to_onnx(g).SerializeToString()

    floor_of_floats = mod("float32", 0)
    assert _opset(floor_of_floats) == 28
    assert at_opset(floor_of_floats, 12) is None
    assert _opset(at_opset(mod("float32", 1), 12)) == 12
    int_model = at_opset(mod("int32", 0), 12)
    assert _opset(int_model) == 12
    # what the refused model would have met: onnxruntime rejects floor modulo of floats below 28
    relabelled = onnx.load_from_string(floor_of_floats)
    relabelled.opset_import[0].version = 12
    session = ort.InferenceSession(relabelled.SerializeToString(), providers=["CPUExecutionProvider"])
    ones = np.ones((2, 3), np.float32)
    with pytest.raises(Exception, match="fmod attribute must be true"):
        session.run(None, {"a": ones, "b": ones})
