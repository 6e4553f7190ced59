"""Relax lowering rules of the quant_integer operators (ops/quant_integer.py)."""
