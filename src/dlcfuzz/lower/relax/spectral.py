"""Relax lowering rules of the spectral operators (ops/spectral.py)."""
