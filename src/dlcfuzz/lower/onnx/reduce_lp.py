"""ONNX lowering and import rules of the reduce_lp operators (ops/reduce_lp.py).

Their ONNX form is ReduceOp's (axes as the opset-18 input, keepdims, noop_with_empty_axes), so the
reduce family's rules serve them unchanged."""

from __future__ import annotations

from dlcfuzz.lower.onnx.reduce import import_reduce, reduce
from dlcfuzz.lower.registry import target

LP_REDUCTIONS = ("reduce_l1", "reduce_l2", "reduce_sum_square", "reduce_log_sum", "reduce_log_sum_exp")

target("onnx").register(*LP_REDUCTIONS)(reduce)
target("onnx-import").register(*LP_REDUCTIONS)(import_reduce)
