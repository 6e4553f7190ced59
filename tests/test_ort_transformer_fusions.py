"""The Python transformer optimizer's fusions as ONNXRuntime optimizations (backends/onnxruntime/transformers.py), on
the real onnxruntime package: listed from the installed package, fired by patterns through the configuration that
runs them, and told apart from fusions that did not apply, configurations without the optimizer, and an optimizer
that raised."""

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


def test_every_pattern_targeting_a_fusion_fires_it_in_the_configuration_that_runs_it() -> None:
    """oatest_configs adds the transformer configuration last; `fired` asked about it tells each fusion; the same
    fusion in the optimized configuration without the optimizer never fires."""
    backend = _backend()
    fired_fusions = set()
    for p in library():
        tags = p.targets_for("onnxruntime")
        fusions = [t for t in tags if t.startswith("transformers.")]
        if not fusions:
            continue
        configs = backend.oatest_configs(np.random.default_rng(0), tags, list(backend.default_pair()))
        assert configs[-1].name == "ort-transformers-bert", (p.name, configs)
        assert backend.fired(wrapped(p), configs[-1], tags) == dict.fromkeys(tags, True), p.name
        assert backend.fired(wrapped(p), backend.default_pair()[1], fusions) == dict.fromkeys(fusions, False)
        fired_fusions |= set(fusions)
    assert {"transformers.FusionGelu", "transformers.FusionQuickGelu", "transformers.FusionFastGelu",
            "transformers.FusionLayerNormalization", "transformers.FusionSkipLayerNormalization",
            "transformers.FusionBiasSkipLayerNormalization"} <= fired_fusions


def test_a_fusion_that_did_not_apply_or_an_optimizer_that_raised_fires_nothing() -> None:
    """The GELU does not fire the QuickGelu fusion; the decomposed layer norm with a shape-[1] epsilon makes the
    optimizer raise (the known finding of test_ort_transformers.py), which fires no fusion."""
    backend = _backend()
    by = {p.name: p for p in library()}
    config = backend.configs()["ort-transformers-bert"]
    assert backend.fired(wrapped(by["gelu_erf"]), config, ["transformers.FusionQuickGelu", "transformers.FusionGelu"]) \
        == {"transformers.FusionQuickGelu": False, "transformers.FusionGelu": True}
    assert backend.fired(wrapped(by["layer_norm_decomposed"]), config, ["transformers.FusionLayerNormalization"]) \
        == {"transformers.FusionLayerNormalization": False}


def test_the_recorder_leaves_the_optimizer_as_it_found_it() -> None:
    from dlcfuzz.backends.onnxruntime.transformers import recording_fusions

    with recording_fusions():
        from fusion_base import Fusion  # the optimizer's own import of it (its folder is on sys.path)

        patched = Fusion.apply
    assert Fusion.apply is not patched
