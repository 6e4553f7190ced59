"""Semantics-preserving rewrites of lowered programs (applied after lowering, before the compiler)."""
