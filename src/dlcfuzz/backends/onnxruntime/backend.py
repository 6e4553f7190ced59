"""ONNXRuntime: graph optimization levels, disabled_optimizers, optimized-model dumps."""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnxruntime as ort

from dlcfuzz.backends.base import BackendBase, Config, Knob
from dlcfuzz.backends.onnxruntime import ORT_FRAMES
from dlcfuzz.backends.onnxruntime.gaps import KNOWN_FORM_GAPS, KNOWN_GAPS, U8S8_REASON, U8S8_SATURATING
from dlcfuzz.backends.onnxruntime.opsets import ORT_OPSET_GATED, at_opset
from dlcfuzz.backends.onnxruntime.optimizers import (
    LEVELS,
    ORT_OUT_OF_REACH,
    ORT_SESSION_CONFIG,
    minimal_optimizers,
    ort_optimizers,
)
from dlcfuzz.backends.onnxruntime.transformers import FUSION_PREFIX
from dlcfuzz.backends.opinions import ort_config_evaluator
from dlcfuzz.gen.random import FormGap
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.oracle.opinions import ONNX_REFERENCE, Evaluator

# Documented rejections: a missing kernel or a model that fails validation is not a bug.
EXPECTED = [
    # ... and a kernel's explicit refusal of a mode it documents it lacks (Resize: "'Cubic' mode only support
    # 2-D inputs ... or 4-D inputs with the corresponding outermost 2 scale values being 1", "exclude_outside
    # can be set to 1 when (1) mode is CUBIC, or (2) mode is LINEAR when anti-aliasing is enabled"; LRN's rank
    # and size, pooling's pads, RotaryEmbedding's short caches: all known form gaps, gaps.KNOWN_FORM_GAPS,
    # reached only by imported or mutated models)
    ("unsupported", re.compile(r"NOT_IMPLEMENTED|Could not find an implementation|is not supported|not supported|"
                               r"mode only supports?\b|exclude_outside can be set to 1 when|not currently supported|"
                               r"Pad should be smaller than kernel|size_ % 2 == 1 was false|"
                               r"X_shape.NumDimensions\(\) == 4 was false")),
    # kernels that refuse empty tensors on purpose, with these words (pooling, GridSample, DFT, DeformConv,
    # the normalizations): a clear refusal of a degenerate input, not a bug; optimizations that fold such a
    # node away legitimately never see it (so, like a missing kernel, it is no inconsistent rejection)
    ("unsupported", re.compile(r"Only N can be zero|spatial dimensions must be non-empty|must be greater than zero "
                               r"when the output is non-empty|Invalid deform conv dimensions|must be at least 1, got 0")),
    ("invalid-model", re.compile(r"INVALID_GRAPH|INVALID_ARGUMENT|ShapeInferenceError|Type Error|type mismatch")),
]


def written_at(model: bytes, options: dict[str, Any]) -> bytes:
    """The model at the opset the configuration asks (option "opset", opsets.at_opset), or as lowered where it
    cannot be written there (the test then runs at its own opset)."""
    opset = options.get("opset")
    return (at_opset(model, opset) or model) if opset else model


def malformed_model(model: bytes, options: dict[str, Any]) -> bytes:
    """Disruptive mode's malformed models: the configuration's {"kind", "seed"} applied to the ONNX model."""
    if not options.get("malformed"):
        return model
    from dlcfuzz.mutate.malformed import malform_bytes

    return malform_bytes(model, options["malformed"])


class OrtCompiled:
    def __init__(self, sess: Any, optimized_model: bytes | None) -> None:
        self.sess = sess
        self.optimized_model = optimized_model
        self.input_names = [i.name for i in sess.get_inputs()]

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(x) for x in self.sess.run(None, {n: inputs[n] for n in self.input_names})]


class OnnxRuntimeBackend(BackendBase):
    name = "onnxruntime"
    lowers_through_onnx = True
    packages = ("onnxruntime",)  # where the compiler's own exceptions come from
    distributions = ("onnxruntime",)
    frame_patterns = ORT_FRAMES

    def pattern_targets(self) -> str:
        return "onnxruntime"  # wrappers (planted faults) target what ONNXRuntime's optimizations target
    deadline_s = 15.0

    def version(self) -> str:
        return f"onnxruntime {ort.__version__}"

    def knobs(self) -> list[Knob]:
        return [
            Knob("opt_level", list(LEVELS), "SessionOptions.graph_optimization_level"),
            Knob("disabled_optimizers", [], "names of graph transformers to disable (InferenceSession disabled_optimizers)"),
            Knob("dump", [False, True], "keep the optimized model (SessionOptions.optimized_model_filepath)"),
            Knob("opset", [None, *sorted(set(ORT_OPSET_GATED.values()))],
                 "write the model at this lower opset where it can be (opsets.at_opset; the transformers of "
                 "ORT_OPSET_GATED fire only there)"),
        ]

    def configs(self) -> dict[str, Config]:
        from dlcfuzz.backends.onnxruntime.transformers import transformer_configs

        return {**{f"ort-{lvl}": Config(f"ort-{lvl}", {"opt_level": lvl}) for lvl in LEVELS}, **transformer_configs()}

    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        """The campaign's configurations, plus the Python transformer optimizer on a share of tests."""
        from dlcfuzz.backends.onnxruntime.transformers import sample_transformer_config

        extra = sample_transformer_config(rng)
        return list(configs) + ([extra] if extra and extra.name not in {c.name for c in configs} else [])

    def independent_evaluators(self, config: str) -> Sequence[Evaluator]:
        # its unoptimized configuration is one of the compared ones (the default pair's first): read, not re-run
        return (ONNX_REFERENCE, ort_config_evaluator(self.default_pair()[0].name))

    def default_pair(self) -> tuple[Config, Config]:
        c = self.configs()
        return c["ort-disable"], c["ort-all"]

    def expected_error(self, message: str) -> str | None:
        if message.startswith("TransformerOptimizerError"):
            return None  # the transformer optimizer failing on a model ORT accepts is never expected
        return next((name for name, pat in EXPECTED if pat.search(message)), None)

    def known_gaps(self, op: str) -> dict[str, str]:
        gaps = dict(KNOWN_GAPS.get(op, {}))
        if op in U8S8_SATURATING and self.u8s8_saturates:
            gaps.setdefault(U8S8_SATURATING[op], U8S8_REASON)
        return gaps

    def known_form_gaps(self, op: str) -> Sequence[FormGap]:
        return KNOWN_FORM_GAPS.get(op, ())

    @functools.cached_property
    def u8s8_saturates(self) -> bool:
        """Whether this machine's onnxruntime saturates U8S8 products: [255, 255] . [127, 127] is 64770
        exactly and 32767 where the pair sum saturates (one MatMulInteger, milliseconds)."""
        g = Graph([Value("a", TensorType("uint8", (1, 2))), Value("b", TensorType("int8", (2, 1)))], {},
                  [Node("matmul_integer", ["a", "b"], [Value("y", TensorType("int32", (1, 1)))],
                        {"a_zero_point": 0, "b_zero_point": 0}, name="n0")], ["y"])
        y = self.compile(g, self.default_pair()[0]).run({"a": np.full((1, 2), 255, np.uint8),
                                                         "b": np.full((2, 1), 127, np.int8)})[0]
        return int(np.asarray(y)[0, 0]) != 255 * 127 * 2

    def disruptive_configs(self) -> list[str]:
        return ["ort-disable", "ort-all"]

    def disruptive_rules(self) -> tuple[str, ...] | None:
        """Our IR's type/shape rules, and malformed ONNX models (mutate/malformed.py): ORT reads ONNX."""
        from dlcfuzz.gen.disruptive import RULES
        from dlcfuzz.mutate.malformed import KINDS

        return RULES + tuple(f"malformed:{k}" for k in KINDS)

    def session_options(self, options: dict[str, Any]) -> Any:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[options.get("opt_level", "all")])
        so.intra_op_num_threads = 1  # one core per worker: --jobs decides parallelism
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        for key, value in ORT_SESSION_CONFIG.items():
            so.add_session_config_entry(key, value)
        return so

    def compile_onnx(self, model_bytes: bytes, config: Config) -> OrtCompiled:
        so = self.session_options(config.options)
        dumped = None
        path = None
        if config.options.get("dump"):
            fd, path = tempfile.mkstemp(suffix=".onnx")
            os.close(fd)
            so.optimized_model_filepath = path
        try:
            sess = ort.InferenceSession(
                model_bytes, so, providers=["CPUExecutionProvider"],
                disabled_optimizers=list(config.options.get("disabled_optimizers", [])) or None,
            )
            if path:
                with open(path, "rb") as f:
                    dumped = f.read()
        finally:
            if path and os.path.exists(path):
                os.unlink(path)
        return OrtCompiled(sess, dumped)

    def lower(self, g: Graph, config: Config) -> bytes:
        """dlcfuzz's share of the work (timed apart from the compiler's)."""
        model = to_onnx(g, untyped_outputs=config.options.get("untyped_outputs", ())).SerializeToString()
        return malformed_model(written_at(model, config.options), config.options)

    def lower_key(self, config: Config) -> str:
        return f"onnx@{config.options['opset']}" if config.options.get("opset") else "onnx"

    def oatest_configs(self, rng: np.random.Generator, targets: list[str], configs: list[Config]) -> list[Config]:
        """The campaign's configurations; where a target fires only below the opset our lowering writes
        (opsets.ORT_OPSET_GATED), each writes the model at the lowest such opset (its option "opset")."""
        gated = [ORT_OPSET_GATED[t] for t in targets if t in ORT_OPSET_GATED]
        return [Config(c.name, {**c.options, "opset": min(gated)}) for c in configs] if gated else list(configs)

    def build(self, lowered: bytes, g: Graph, config: Config) -> OrtCompiled:
        spec = config.options.get("transformers")
        if not spec:
            return self.compile_onnx(lowered, config)
        from dlcfuzz.backends.onnxruntime.transformers import TransformerOptimizerError, optimize

        optimized = optimize(lowered, spec)
        try:
            return self.compile_onnx(optimized, config)
        except Exception as e:
            self.compile_onnx(lowered, config)  # raises ORT's own rejection when the model as given is rejected
            raise TransformerOptimizerError(f"ORT rejects the transformer optimizer's output model: {e}") from e

    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]:
        """ddmin over the graph transformers `disabled_optimizers` can switch off (optimizers.py)."""
        return minimal_optimizers(config, shows)

    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        from dlcfuzz.backends.onnxruntime.reproducer import ort_script

        model = to_onnx(g, untyped_outputs=untyped_outputs).SerializeToString()
        options = configs[0].options if configs else {}
        model = malformed_model(written_at(model, options), options)
        return ort_script(model, inputs, expected, configs, category, title, detail, self.version())

    def pair_reproducer(self, seed: Graph, mutant: Graph, inputs: dict[str, np.ndarray], configs: list[Config],
                        delta: float, title: str, detail: str) -> dict[str, bytes | str] | None:
        from dlcfuzz.backends.onnxruntime.reproducer import metamorphic_ort_script

        return {"seed.onnx": to_onnx(seed).SerializeToString(), "mutant.onnx": to_onnx(mutant).SerializeToString(),
                "repro_mutant.py": metamorphic_ort_script(inputs, configs, delta, title, detail, self.version())}

    def optimizations(self) -> tuple[str, ...]:
        """The graph transformers and rewrite rules of the installed release, read from ORT (optimizers.py)."""
        return ort_optimizers()

    def optimizations_out_of_reach(self) -> dict[str, str]:
        """Transformers of `optimizations()` that a CPU-only session cannot fire, with why (optimizers.py)."""
        return {name: why for name, why in ORT_OUT_OF_REACH.items() if name in ort_optimizers()}

    def fired(self, g: Graph, config: Config, targets: list[str]) -> dict[str, bool] | None:
        """Whether each targeted transformer changed the optimized model (trigger.py); a fusion of the Python
        transformer optimizer ("transformers.<class>"), whether it changed the model in an optimizer run with the
        configuration's spec, or where the configuration runs no optimizer, with the first transformer
        configuration's that holds the fusion (transformers.transformer_fired: a trigger check, as ORT_MASKED_BY's
        is; the optimizer's build is compared in the tests `per_test_configs` gives it)."""
        from dlcfuzz.backends.onnxruntime.transformers import transformer_fired, transformer_fusions
        from dlcfuzz.backends.onnxruntime.trigger import ort_fired

        options = {k: v for k, v in config.options.items() if k != "dump"}
        lowered = self.lower(g, config)
        fusions = [t for t in targets if t.startswith(FUSION_PREFIX)]
        out = ort_fired(self, lowered, [t for t in targets if t not in fusions], options)
        if options.get("transformers"):
            runs = [(options["transformers"], fusions)]
        else:
            runs = [(self.configs()[name].options["transformers"], [t for t in fusions if t in held])
                    for name, held in sorted(transformer_fusions().items())]
        for spec, wanted in runs:
            todo = [t for t in wanted if not out.get(t)]
            if todo:
                out.update(transformer_fired(lowered, spec, todo))
        return {t: out.get(t, False) for t in targets}

    def transformer_fusions(self) -> tuple[str, ...]:
        """The Python transformer optimizer's fusions that its configurations run, read from the installed package
        (transformers.transformer_fusions): ONNXRuntime's optimizations besides `optimizations()`."""
        from dlcfuzz.backends.onnxruntime.transformers import transformer_fusions

        return tuple(dict.fromkeys(f for fusions in transformer_fusions().values() for f in fusions))
