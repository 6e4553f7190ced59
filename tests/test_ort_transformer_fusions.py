"""The Python transformer optimizer's fusions as ONNXRuntime optimizations (backends/onnxruntime/transformers.py), on
the real onnxruntime package: listed from the installed package, fired by patterns, and told apart from fusions that
did not apply and an optimizer that raised."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.synth.library import library
from tests.test_synth import wrapped

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
pytest.importorskip("sympy", reason="onnxruntime.transformers imports it")


def _backend():
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend()


def test_the_fusions_are_read_from_the_installed_package_per_configuration() -> None:
    from dlcfuzz.backends.onnxruntime.transformers import MODEL_TYPES, transformer_fusions

    fusions = transformer_fusions()
    assert set(fusions) == set(MODEL_TYPES)
    bert, gpt2 = fusions["ort-transformers-bert"], fusions["ort-transformers-gpt2"]
    assert {"transformers.FusionGelu", "transformers.FusionLayerNormalization", "transformers.FusionAttention",
            "transformers.FusionSkipLayerNormalization", "transformers.FusionEmbedLayerNormalization"} <= set(bert)
    assert "transformers.FusionGptAttentionNoPast" in gpt2 and "transformers.FusionGptAttentionNoPast" not in bert
    listed = _backend().transformer_fusions()
    assert len(set(listed)) == len(listed) and set(listed) == set(bert) | set(gpt2)
    assert not set(listed) & set(_backend().optimizations())  # besides the graph transformers, not among them


def test_every_pattern_targeting_a_fusion_fires_it() -> None:
    """Asked about the test's optimized configuration (which runs no transformer optimizer), `fired` runs the
    optimizer of the first transformer configuration that holds the fusion; asked about a transformer
    configuration, that configuration's. oatest's configurations stay the campaign's."""
    backend = _backend()
    fired_fusions = set()
    for p in library():
        tags = p.targets_for("onnxruntime")
        fusions = [t for t in tags if t.startswith("transformers.")]
        if not fusions:
            continue
        configs = backend.oatest_configs(np.random.default_rng(0), tags, list(backend.default_pair()))
        assert [c.name for c in configs] == ["ort-disable", "ort-all"]
        assert backend.fired(wrapped(p), configs[-1], tags) == dict.fromkeys(tags, True), p.name
        for name in ("ort-transformers-bert", "ort-transformers-gpt2"):
            assert backend.fired(wrapped(p), backend.configs()[name], fusions) == dict.fromkeys(fusions, True)
        fired_fusions |= set(fusions)
    assert {"transformers.FusionGelu", "transformers.FusionQuickGelu", "transformers.FusionFastGelu",
            "transformers.FusionLayerNormalization", "transformers.FusionSkipLayerNormalization",
            "transformers.FusionBiasSkipLayerNormalization"} <= fired_fusions


def test_a_fusion_that_did_not_apply_or_an_optimizer_that_raised_fires_nothing() -> None:
    """The GELU does not fire the QuickGelu fusion; the decomposed layer norm with a shape-[1] epsilon makes the
    optimizer raise (the known finding of test_ort_transformers.py), which fires no fusion; a fusion no transformer
    configuration runs (gpt2's attention asked of bert's) does not fire."""
    backend = _backend()
    by = {p.name: p for p in library()}
    config = backend.configs()["ort-transformers-bert"]
    assert backend.fired(wrapped(by["gelu_erf"]), config, ["transformers.FusionQuickGelu", "transformers.FusionGelu"]) \
        == {"transformers.FusionQuickGelu": False, "transformers.FusionGelu": True}
    assert backend.fired(wrapped(by["layer_norm_decomposed"]), config, ["transformers.FusionLayerNormalization"]) \
        == {"transformers.FusionLayerNormalization": False}
    assert backend.fired(wrapped(by["gelu_erf"]), config, ["transformers.FusionGptAttentionNoPast"]) == \
        {"transformers.FusionGptAttentionNoPast": False}


def test_the_recorder_leaves_the_optimizer_as_it_found_it() -> None:
    from dlcfuzz.backends.onnxruntime.transformers import recording_fusions

    with recording_fusions():
        from fusion_base import Fusion  # the optimizer's own import of it (its folder is on sys.path)

        patched = Fusion.apply
    assert Fusion.apply is not patched
