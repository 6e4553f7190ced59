"""Reductions beyond sum/mean/max/min/prod: L1, L2, log-sum, log-sum-exp, sum of squares."""
