"""Ordering and cumulative operators: top-k, hardmax, cumulative sum/product, triangular masks, eye-like, range."""
