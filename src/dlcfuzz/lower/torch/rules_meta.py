"""PyTorch lowering rules of the meta operators (ops/meta.py)."""
