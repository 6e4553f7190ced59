"""ONNX lowering and import rules of the recurrent operators (ops/recurrent.py)."""
