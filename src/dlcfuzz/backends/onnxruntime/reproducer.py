"""Standalone ONNXRuntime reproducers: the ONNX model built in code with onnx.helper (one
`make_node` per node, small tensors as literals), one InferenceSession per configuration (the public
API only), dlcfuzz's comparison, expected vs actual printed (backends/script.py). A finding's
minimal optimization set is stated in the header and is what its configuration enables."""

from __future__ import annotations

import numpy as np

from dlcfuzz.backends.onnxruntime.optimizers import LEVELS, ORT_SESSION_CONFIG, ort_optimizers
from dlcfuzz.backends.script import COMPARE, MAIN, ONNX_IMPORTS, UNPACK, common, header, onnx_model_source
from dlcfuzz.oracle.testcase import Config


def configs_source(configs: list[Config]) -> tuple[str, str]:
    """CONFIGS as code, a configuration that disables all listed optimizers but a few written as
    `all_but([...])` (the few it keeps are what the finding needs); and the definitions it uses."""
    parts, uses = [], False
    listed = list(ort_optimizers())
    for c in configs:
        opts = dict(c.options)
        disabled = opts.pop("disabled_optimizers", None)
        body = ", ".join(f"{k!r}: {v!r}" for k, v in opts.items())
        if disabled:
            kept = [n for n in listed if n not in set(disabled)]
            if len(disabled) > 8 and set(disabled) <= set(listed):
                uses = True
                value = f"all_but({kept!r})"
            else:
                value = repr(list(disabled))
            body += f"{', ' if body else ''}'disabled_optimizers': {value}"
        parts.append(f"    {c.name!r}: {{{body}}},\n")
    defs = "" if not uses else (
        f"# the graph transformers `disabled_optimizers` can switch off (ORT's names)\nOPTIMIZERS = {listed!r}\n\n\n"
        "def all_but(kept):\n    \"\"\"disabled_optimizers that leave only `kept` on.\"\"\"\n"
        "    return [n for n in OPTIMIZERS if n not in kept]\n\n\n")
    return "{\n" + "".join(parts) + "}", defs


# the Python transformer optimizer's configurations (transformers.py): its fusions, then ORT
TRANSFORMERS = '''

class TransformerOptimizerError(RuntimeError):
    """The transformer optimizer raised, or ORT rejects the model it wrote while it accepts the model as given."""


def transformed(model, opts):
    """optimize_model's Python fusions only (opt_level=0, Gelu approximation off), as the finding ran."""
    spec = opts.get("transformers")
    if not spec:
        return model
    import os
    import tempfile

    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions(spec["model_type"])
    options.enable_gelu_approximation = False
    for key, value in spec.get("fusions", {}).items():
        setattr(options, key, value)
    with tempfile.TemporaryDirectory() as tmp:  # a path: what every release's optimize_model accepts
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(model)
        try:
            optimized = optimize_model(path, model_type=spec["model_type"], num_heads=0, hidden_size=0,
                                       optimization_options=options, opt_level=0, use_gpu=False)
        except Exception as e:
            raise TransformerOptimizerError(f"optimize_model raised {type(e).__name__}: {e}") from e
    return optimized.model.SerializeToString()



def transformed_session(so, opts):
    model = transformed(MODEL, opts)
    try:
        return session(model, so, opts)
    except Exception as e:
        if model is MODEL:
            raise
        session(MODEL, so, opts)  # ORT's own rejection when it rejects the model as given
        raise TransformerOptimizerError(f"ORT rejects the transformer optimizer's output model: {e}") from e

'''


# onnxruntime's status exceptions: releases rename the class of one failure (RuntimeException in 1.20.1,
# Fail in 1.32.0 for FuseReluClip's dtype error), so a script accepts any of them for one of them
ORT_ERROR_FAMILY = ("onnxruntime.capi.onnxruntime_pybind11_state", frozenset({
    "EPFail", "EngineError", "Fail", "InvalidArgument", "InvalidGraph", "InvalidProtobuf", "ModelLoaded",
    "NoModel", "NoSuchFile", "NotFound", "NotImplemented", "RuntimeException"}))


def ort_script(model_bytes: bytes, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
               configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    configs_code, defs = configs_source(configs)
    transformers = any(c.options.get("transformers") for c in configs)
    return header(title, detail, version) + f'''import base64
import sys
import zlib

import numpy as np
import onnxruntime as ort
{ONNX_IMPORTS}{UNPACK}

{onnx_model_source(model_bytes)}
{defs}{common(inputs, expected, category, configs, configs_code, detail, ORT_ERROR_FAMILY)}
LEVELS = {LEVELS!r}
SESSION_CONFIG = {ORT_SESSION_CONFIG!r}  # as dlcfuzz runs every configuration (inexact rewrites off)


def session(model, so, opts):
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=opts.get("disabled_optimizers") or None)
{TRANSFORMERS if transformers else ""}

def run(name):
    opts = CONFIGS[name]
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[opts.get("opt_level", "all")])
    for key, value in SESSION_CONFIG.items():
        so.add_session_config_entry(key, value)
    sess = {"transformed_session(so, opts)" if transformers else "session(MODEL, so, opts)"}
    # a fresh copy per run: ORT may write into a fed buffer (BatchNormalization in training mode
    # updates its running mean in place of the mean input)
    return sess.run(None, {{i.name: INPUTS[i.name].copy() for i in sess.get_inputs()}})
{COMPARE}{MAIN}'''


def metamorphic_ort_script(inputs: dict[str, np.ndarray], configs: list[Config], delta: float, title: str,
                           detail: str, version: str) -> str:
    """MT-DLComp reproducer: runs seed.onnx and mutant.onnx (written beside it: full-size models are
    too large to embed) under each configuration and compares label and scores."""
    return header(title, detail, version) + f'''import base64
import sys
import zlib
from pathlib import Path

import numpy as np
import onnxruntime as ort
{UNPACK}
HERE = Path(__file__).resolve().parent
{common(inputs, None, "metamorphic", configs)}DELTA = {delta!r}
LEVELS = {LEVELS!r}
SESSION_CONFIG = {ORT_SESSION_CONFIG!r}  # as dlcfuzz runs every configuration (inexact rewrites off)


def run(model, name):
    opts = CONFIGS[name]
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[opts.get("opt_level", "all")])
    for key, value in SESSION_CONFIG.items():
        so.add_session_config_entry(key, value)
    sess = ort.InferenceSession(str(HERE / model), so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=opts.get("disabled_optimizers") or None)
    # a fresh copy per run: ORT may write into a fed buffer (BatchNormalization in training mode
    # updates its running mean in place of the mean input)
    return sess.run(None, {{i.name: INPUTS[i.name].copy() for i in sess.get_inputs()}})


def main():
    for name in CONFIGS:
        seed = run("seed.onnx", name)[0].astype(np.float64)
        try:
            mutant = run("mutant.onnx", name)[0].astype(np.float64)
        except Exception as e:
            print(f"{{name}}: the mutant fails while its seed compiles: {{type(e).__name__}}: {{e}}")
            print("BUG REPRODUCED: mutant-rejected")
            return 1
        labels = seed.reshape(seed.shape[0], -1).argmax(-1), mutant.reshape(mutant.shape[0], -1).argmax(-1)
        d = float(np.max(np.abs(mutant - seed) / np.maximum(1.0, np.abs(seed))))
        print(f"{{name}}: labels {{labels[0].tolist()}} vs {{labels[1].tolist()}}, score distance {{d:.3g}}")
        if not np.array_equal(*labels) or d > DELTA:
            print("BUG REPRODUCED: metamorphic (the mutant is semantically equal to its seed)")
            return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
