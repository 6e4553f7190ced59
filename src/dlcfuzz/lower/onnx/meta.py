"""ONNX lowering and import rules of the meta operators (ops/meta.py)."""
