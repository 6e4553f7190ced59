"""Normalizations and Lp pooling: Lp/RMS/mean-variance/group normalization, LpPool, GlobalLpPool."""
