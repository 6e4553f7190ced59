"""PyTorch lowering rules of the normalization operators (ops/normalization.py)."""
