"""ONNX lowering and import rules of the spatial operators (ops/spatial.py)."""
