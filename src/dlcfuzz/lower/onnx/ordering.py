"""ONNX lowering and import rules of the ordering operators (ops/ordering.py)."""
