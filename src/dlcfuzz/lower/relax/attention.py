"""Relax lowering rules of the attention operators (ops/attention.py)."""
