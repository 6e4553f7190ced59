"""PyTorch lowering rules of the recurrent operators (ops/recurrent.py)."""
