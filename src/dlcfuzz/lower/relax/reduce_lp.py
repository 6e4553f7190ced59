"""Relax lowering rules of the reduce_lp operators (ops/reduce_lp.py)."""
