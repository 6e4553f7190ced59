"""ONNX lowering of ORT's com.microsoft contrib operators (ops/contrib.py): one node of that domain
each (to_onnx imports the domain's opset when a model uses it)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.contrib import MS

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")
OP_TYPES = {"ms_gelu": "Gelu", "ms_quick_gelu": "QuickGelu", "ms_bias_gelu": "BiasGelu", "ms_fast_gelu": "FastGelu",
            "ms_fused_matmul": "FusedMatMul", "ms_fused_gemm": "FusedGemm", "ms_fused_conv": "FusedConv",
            "ms_skip_layer_norm": "SkipLayerNormalization"}


@ONNX.register(*OP_TYPES)
def contrib(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    if spec.name == "ms_fused_conv":  # Conv's attributes, as the conv rule writes them
        attrs = {**attrs, "kernel_shape": list(in_types[1].shape[2:])}
    b.node(OP_TYPES[spec.name], ins, outs, domain=MS, **attrs)


for _op in OP_TYPES:
    # the importer reads the standard domain (ONNX's conformance suite, mined test models)
    ONNX_IMPORT.gap(_op, "a com.microsoft contrib operator: the importer reads the standard ONNX domain")
