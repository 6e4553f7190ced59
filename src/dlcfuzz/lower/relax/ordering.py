"""Relax lowering rules of the ordering operators (ops/ordering.py)."""
