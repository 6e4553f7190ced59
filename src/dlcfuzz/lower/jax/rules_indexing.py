"""JAX lowering rules of the indexing operators (ops/indexing.py)."""
