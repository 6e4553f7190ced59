"""ONNX lowering and import rules of the loss operators (ops/loss.py)."""
