"""ONNX lowering and import rules of the attention operators (ops/attention.py)."""
