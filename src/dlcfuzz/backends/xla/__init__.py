"""XLA through JAX on the CPU: the backend (compile options per compile, HLO pass control), the HLO
pass table read from the installed XLA, its standalone JAX reproducer, and a planted HLO-pass fault
(`planted.py`) that proves the oracles and the pass minimization on it."""

from dlcfuzz.backends.xla.backend import XlaBackend, XlaCompiled

__all__ = ["XlaBackend", "XlaCompiled"]
