"""ONNX lowering and import rules of the normalization operators (ops/normalization.py)."""
