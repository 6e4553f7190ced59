"""ONNXRuntime's optimization levels and graph transformers, by the names its API takes, and the minimal
set of transformers that still shows a finding.

The graph transformers are read from the installed release (`ort_optimizers`): a session at
ORT_ENABLE_ALL with verbose logging names every transformer its optimizer registers ("GraphTransformer X
modified: ..."), in the order it applies them. The rewrite rules inside the rule-based containers
(Level1_RuleBasedTransformer, ...) are not logged one by one, and a container is registered even with
all its rules disabled (1.32), so no session tells them apart: `ORT_RULES` holds the names ORT's rules
report (graph_transformer_utils.cc, GenerateRewriteRules; a rule's name is not its class's: ClipQuantFusion
is "ClipQuantRewrite"), and a rule is listed when the installed release's library holds its name. Each
listed rule is checked to fire on the pattern written for it (tests/test_ort_optimizations.py), since
`disabled_optimizers` ignores a name it does not know, which would read as "never fires".

Minimization is delta debugging (ddmin) over the optimizers `disabled_optimizers` can switch off:
a candidate set S is tried by disabling every other listed optimizer at ORT_ENABLE_ALL. The
containers are never disabled: their rules are listed one by one, so that a rule alone is a
candidate. An empty result means the optimizations in reach are not needed: the inconsistency is in
kernels or an optimizer the list does not name.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from dlcfuzz.oracle.testcase import Config
from dlcfuzz.reduce.ddmin import ddmin

# opt_level knob value -> the name of its onnxruntime.GraphOptimizationLevel member
LEVELS: dict[str, str] = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}

# Session configuration entries every configuration sets (SessionOptions.add_session_config_entry), each a documented
# inexact rewrite switched off, as the transformer optimizer's Gelu approximation is: a DequantizeLinear'd constant
# weight into MatMul becomes a com.microsoft MatMulNBits whose accuracy level defaults to 4, which quantizes the float
# activations to int8 (measured on 1.32: 0.008 off on a 16-deep product of values near 1, a difference of every
# such test); level 1 computes it in float32.
ORT_SESSION_CONFIG: dict[str, str] = {"session.qdq_matmulnbits_accuracy_level": "1"}

# rule-based container -> the names of the rewrite rules it holds by default (CastChainElimination only with
# the session option session.enable_cast_chain_elimination, which no configuration sets)
ORT_RULES: dict[str, tuple[str, ...]] = {
    "Level1_RuleBasedTransformer": (
        "EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout", "ExpandElimination",
        "CastElimination", "PreShapeNodeElimination", "NoopElimination", "DivMulFusion", "FuseReluClip",
        "GemmSumFusion", "GemmTransposeFusion", "NotWhereFusion", "ConvAddFusion", "ConvMulFusion", "ConvBNFusion",
        "Pad_Fusion", "MatMul_BatchNormalization_Fusion", "LabelEncoderFusion"),
    "Level2_RuleBasedTransformer": ("ClipQuantRewrite", "ReluQuantRewrite", "GemmTransposeFusion"),
}
ORT_CONTAINERS: tuple[str, ...] = tuple(ORT_RULES)

# Transformers of the CPU build's list that cannot rewrite anything in a CPU-only session as dlcfuzz configures it,
# with the reason (onnxruntime/core/optimizer/graph_transformer_utils.cc registers each with the execution providers
# it may run for): not counted as misses in the trigger bench's denominator, printed there with the reason.
ORT_OUT_OF_REACH: dict[str, str] = {
    "GroupQueryAttentionFusion": "registered for the CUDA provider only",
    "GroupQueryAttentionPreNormFusion": "registered for the CUDA and WebGPU providers only (the CPU GroupQueryAttention "
                                        "kernel rejects the inputs it adds)",
    "BiasDropoutFusion": "registered for the CUDA and ROCm providers only",
    "MatMulActivationFusion": "registered for the DirectML provider only",
    "BiasSoftmaxFusion": "its match asks the Add to be assigned to the CUDA provider",
    "SwiGluFusion": "its product, com.microsoft SwiGLU, has no CPU kernel (a CPU session with one raises NOT_IMPLEMENTED); "
                    "ORT's own test builds the transformer for the CUDA provider",
    "MemcpyTransformer": "inserts copies between devices; a CPU-only session has one device",
    "FreeDimensionOverrideTransformer": "rewrites the symbolic dimensions named in the session's "
                                        "free_dimension_overrides; dlcfuzz's models have static shapes only",
}

# The model the log is read from, at IR version 8 (opset 17's own): onnx's default IR version is its newest,
# which older onnxruntime releases refuse to load (1.20.1: "max supported IR version: 10")
PROBE_MODEL_SOURCE = r'''
import onnx.helper as h
from onnx import TensorProto

x = h.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = h.make_tensor_value_info("y", TensorProto.FLOAT, [2])
model = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                     opset_imports=[h.make_opsetid("", 17)])
model.ir_version = 8
'''
# Run in a fresh interpreter: ORT's C++ log goes to file descriptor 2, read back from a pipe; stdout is the
# path of the library that holds ORT's optimizer.
_READ_SCRIPT = PROBE_MODEL_SOURCE + r'''
import onnxruntime as ort
import onnxruntime.capi.onnxruntime_pybind11_state as library

so = ort.SessionOptions()
so.log_severity_level = 0
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
print(library.__file__)
'''
_LOGGED = re.compile(r"GraphTransformer (\w+) modified")


@functools.cache
def ort_optimizers() -> tuple[str, ...]:
    """Every graph transformer and rewrite rule of the installed onnxruntime's CPU optimizer, by the names
    `disabled_optimizers` takes, in the order ORT applies them: the transformers its verbose log names, each
    rule-based container replaced by those of its rules (`ORT_RULES`) whose names its library holds."""
    read = subprocess.run([sys.executable, "-c", _READ_SCRIPT], capture_output=True, text=True, timeout=120,
                          check=True)
    log, library = read.stderr, Path(read.stdout.strip().splitlines()[-1]).read_bytes()
    names: list[str] = []
    for t in dict.fromkeys(_LOGGED.findall(log)):
        names += [r for r in ORT_RULES[t] if r.encode() + b"\0" in library] if t in ORT_RULES else [t]
    if len(names) < 10:  # the log format changed: no silent denominator of nothing
        raise RuntimeError(f"could not read ONNXRuntime's graph transformers from its log: {log[-500:]!r}")
    return tuple(dict.fromkeys(names))


MAX_CHECKS = 48  # compile+run checks one minimization may spend


def minimal_optimizers(config: Config, shows: Callable[[Config], bool],
                       max_checks: int = MAX_CHECKS) -> tuple[Config, list[str]]:
    """The configuration at ORT_ENABLE_ALL with every listed optimizer disabled but a minimal set that
    `shows` (compiles and judges a candidate) still shows the finding with, and that set (sorted)."""
    names = list(ort_optimizers())

    def keeping(subset: list[str]) -> Config:
        keep = set(subset)
        return Config(config.name, {**config.options, "opt_level": "all",
                                    "disabled_optimizers": [n for n in names if n not in keep]})

    if shows(keeping([])):
        return keeping([]), []
    kept = sorted(ddmin(names, lambda s: shows(keeping(s)), max_checks=max_checks))
    return keeping(kept), kept
