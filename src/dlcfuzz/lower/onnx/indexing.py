"""ONNX lowering and import rules of the indexing operators (ops/indexing.py)."""
