"""Relax lowering rules of the loss operators (ops/loss.py)."""
