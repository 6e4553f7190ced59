"""ONNX lowering and import rules of the linalg operators (ops/linalg.py)."""
