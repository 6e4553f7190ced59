"""ONNX lowering and import rules of the reduce_lp operators (ops/reduce_lp.py)."""
