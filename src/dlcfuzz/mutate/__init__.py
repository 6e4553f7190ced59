"""Semantics-preserving mutations: metamorphic graph mutations (metamorphic) and function
rewrites of lowered Relax modules (functions)."""
