"""ONNX lowering and import rules of the spectral operators (ops/spectral.py)."""
