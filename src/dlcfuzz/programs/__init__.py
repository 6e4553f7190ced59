"""Programs in a framework's own language (a framework's op space and semantics, not ONNX graphs).

Compiler-free: the representation (`core`), its generation driver, source emitter and statement-level
reduction. A framework's dialect (its op table, how it infers types, runs and reproduces a program)
lives in its backend (`Backend.program_dialect()`), so this package names no framework.
"""
