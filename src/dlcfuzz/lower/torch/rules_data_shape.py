"""Operators whose output extent depends on their input values (ops/data_shape.py) in PyTorch: documented gaps of
this slice. torch.nonzero and torch.unique exist, and torch 2.13's Dynamo captures them under torch.compile with
fullgraph=True (an unbacked symbolic size; capture_dynamic_output_shape_ops is not needed there), but ONNX's Unique
outputs (first-occurrence indices, unsorted order) have no torch function, and the Inductor backend's compile of a
data-dependent size was not measured against the reference yet."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

TORCH = target("torch")

_NOT_YET = ("torch.nonzero/torch.unique compile under Dynamo with unbacked symbolic sizes, but the rules (ONNX's "
            "[rank, count] layout, Unique's first-occurrence indices and order) are not written yet (issue 40)")
for _op in ("non_zero", "unique", "compress_computed", "non_max_suppression"):
    TORCH.gap(_op, _NOT_YET)
