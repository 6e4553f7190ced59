"""JAX lowering rules of the linalg operators (ops/linalg.py)."""
