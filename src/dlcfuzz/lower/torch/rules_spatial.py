"""PyTorch lowering rules of the spatial operators (ops/spatial.py)."""
