"""A planted fault in OpenVINO, to prove the oracles on it: the real CPU plugin, given a model in
which every node of one OpenVINO op type computes its result plus one, in the plugin configurations
only (not in `ov-reference`), like a mis-optimized kernel. Real compiler, deliberately broken."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.backends.openvino.backend import OpenVinoBackend


def misevaluate(model: Any, op_type: str) -> int:
    """Rewrite `model` in place: the first output of every node of `op_type` (an OpenVINO type name,
    e.g. "Relu") gets one added before its consumers see it. Returns how many nodes it broke."""
    import openvino.opset13 as ops

    hits = [n for n in model.get_ordered_ops() if n.get_type_name() == op_type]
    for n in hits:
        out = n.output(0)
        consumers = list(out.get_target_inputs())
        one = ops.constant(np.ones((), out.get_element_type().to_dtype()))
        broken = ops.add(out, one)
        for c in consumers:
            c.replace_source_output(broken.output(0))
    if hits:
        model.validate_nodes_and_infer_types()
    return len(hits)


class PlantedOpenVino(OpenVinoBackend):
    """OpenVINO whose CPU plugin configurations mis-evaluate every node of one op type."""

    def __init__(self, op_type: str) -> None:
        super().__init__()
        self.op_type = op_type
        self.name = f"planted-openvino:{op_type}"

    def version(self) -> str:
        return f"{super().version()} + planted miseval@{self.op_type}"

    def compile_model(self, model: Any, options: dict[str, Any]) -> Any:
        misevaluate(model, self.op_type)
        return super().compile_model(model, options)
