"""ONNXRuntime's Python transformer optimizer (`onnxruntime.transformers.optimizer.optimize_model`,
shipped in the onnxruntime wheel and run on most BERT/GPT deployments) as a configuration of the
ORT backend: the lowered model goes through optimize_model's Python fusions (Gelu, QuickGelu,
LayerNorm, SkipLayerNorm, Attention parts, ...), then the optimized model runs on ORT.

An exception inside the optimizer, or an optimized model ORT rejects while it accepts the model as
given, is a `TransformerOptimizerError` (never an expected rejection); a changed result is judged
by the usual oracle against the reference. The optimizer's own ORT pass (opt_level) is off, so that
what this configuration adds over `ort-all` is the Python fusions alone. Gelu approximation (a
documented inexact rewrite, tanh for erf) stays off: it would change results by design.
Needs sympy (symbolic_shape_infer imports it), which the onnxruntime wheel does not require.

Its fusions are optimizations of their own (`transformer_fusions`: the `Fusion` classes optimize_model applies for
the configured model types, read from the installed package by running it, named "transformers.<class>", e.g.
"transformers.FusionGelu"); patterns target them by that name, and `transformer_fired` tells which fused when the
optimizer ran on a test (`recording_fusions`: a fusion fired when one of its `apply` runs added or removed nodes).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from dlcfuzz.oracle.testcase import Config

FUSION_PREFIX = "transformers."  # the optimizer's fusions among ONNXRuntime's optimization names
# configuration name -> optimize_model's model_type; each keeps FusionOptions(model_type)'s defaults
MODEL_TYPES: dict[str, str] = {"ort-transformers-bert": "bert", "ort-transformers-gpt2": "gpt2"}
P_TRANSFORMERS = 0.25  # share of generated tests that add one transformer configuration (its cost: see the tests)


class TransformerOptimizerError(RuntimeError):
    """The transformer optimizer raised, or its output model is rejected where its input is not."""


def transformer_configs() -> dict[str, Config]:
    return {name: Config(name, {"opt_level": "all", "transformers": {"model_type": mt}})
            for name, mt in MODEL_TYPES.items()}


def fusion_options(spec: dict[str, Any]) -> Any:
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions(spec["model_type"])
    options.enable_gelu_approximation = False  # inexact by design
    for name, value in spec.get("fusions", {}).items():
        if not hasattr(options, name):
            raise ValueError(f"FusionOptions has no option {name!r}")
        setattr(options, name, value)
    return options


def optimize(model_bytes: bytes, spec: dict[str, Any]) -> bytes:
    """optimize_model(model, model_type, num_heads=0, hidden_size=0, FusionOptions(model_type),
    opt_level=0, use_gpu=False): the Python fusions only, CPU."""
    import logging
    import tempfile
    from pathlib import Path

    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)  # its per-fusion info lines
    # a file path: releases before 1.17 accept only a path (a ModelProto raised TypeError in onnx.load)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(model_bytes)
        try:
            optimized = optimize_model(str(path), model_type=spec["model_type"], num_heads=0, hidden_size=0,
                                       optimization_options=fusion_options(spec), opt_level=0, use_gpu=False)
        except Exception as e:  # any exception inside the optimizer is a finding
            raise TransformerOptimizerError(f"optimize_model raised {type(e).__name__}: {e}") from e
    return optimized.model.SerializeToString()


def fused_ops(model_bytes: bytes) -> dict[str, int]:
    """Operator counts of a model, e.g. to count the fused nodes (Gelu, LayerNormalization, ...)."""
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load_from_string(model_bytes).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def sample_transformer_config(rng: np.random.Generator) -> Config | None:
    """One transformer configuration on a share of tests. Its cost on the synth library's patterns:
    optimize_model 1-9 ms per model against 0.4-1 ms for an ORT session (the first call ~0.6 s: imports)."""
    if rng.random() >= P_TRANSFORMERS:
        return None
    configs = transformer_configs()
    return configs[sorted(configs)[int(rng.integers(len(configs)))]]


@contextlib.contextmanager
def recording_fusions() -> Iterator[dict[str, bool]]:
    """While the block runs, every `Fusion.apply` of the transformer optimizer is recorded: "transformers.<class>" ->
    whether one of its runs changed the model (nodes to add or remove, or a count of fused nodes). The optimizer's
    modules import `fusion_base` as a top-level module (onnxruntime.transformers puts its folder on sys.path), so
    that module's class is the one patched."""
    import onnxruntime.transformers.optimizer  # noqa: F401 - puts the optimizer's folder on sys.path
    from fusion_base import Fusion  # type: ignore[import-not-found]

    seen: dict[str, bool] = {}
    original = Fusion.apply

    def apply(self: Any) -> None:
        original(self)
        name = FUSION_PREFIX + type(self).__name__
        changed = bool(self.nodes_to_add or self.nodes_to_remove or any(self.fused_count.values()))
        seen[name] = seen.get(name, False) or changed

    Fusion.apply = apply
    try:
        yield seen
    finally:
        Fusion.apply = original


def _identity_model() -> bytes:
    import onnx.helper as h
    from onnx import TensorProto

    x = h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = h.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    graph = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


@functools.cache
def transformer_fusions() -> dict[str, tuple[str, ...]]:
    """Configuration name -> the fusions optimize_model applies for its model type (in order, as recorded while it
    optimizes a one-node model: every fusion searches the graph whatever it holds)."""
    out = {}
    for name, spec in transformer_configs().items():
        with recording_fusions() as seen:
            optimize(_identity_model(), spec.options["transformers"])
        out[name] = tuple(seen)
    return out


def transformer_fired(model_bytes: bytes, spec: dict[str, Any], targets: list[str]) -> dict[str, bool]:
    """target ("transformers.<class>") -> whether that fusion changed the model when the optimizer ran with `spec`;
    an optimizer that raises fired nothing (the test's own run reports the exception)."""
    with recording_fusions() as seen:
        with contextlib.suppress(TransformerOptimizerError):
            optimize(model_bytes, spec)
    return {t: seen.get(t, False) for t in targets}
