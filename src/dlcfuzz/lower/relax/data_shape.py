"""Operators whose output extent depends on their input values (ops/data_shape.py) in Relax: documented gaps of this
slice. Relax has them (relax.op.nonzero, relax.op.unique; apache-tvm 0.27's ONNX frontend imports NonZero, Unique and
Compress through them, each result given a fresh symbolic extent by match_cast), but our lowering's consumer rules
read static input types (Shape and Size are constants of the type), so a symbolic extent would be written as its
bound."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

RELAX = target("relax")

_SYMBOLIC = ("a data-dependent extent needs a symbolic Relax shape (match_cast) that our Relax consumer rules do not "
             "carry yet (they read static types); issue 40's data-dependent shapes, Relax not written yet")
for _op in ("non_zero", "unique", "compress_computed", "non_max_suppression"):
    RELAX.gap(_op, _SYMBOLIC)
