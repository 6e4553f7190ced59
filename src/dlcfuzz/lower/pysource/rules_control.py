"""Regions (ops/regions.py) in the Python targets: documented gaps of this slice (issue 40)."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

_NOT_YET = ("a region's {} form (torch.cond and Python loops; lax.cond, lax.while_loop and lax.scan) is not "
            "written yet: issue 40's next slice")
for _target in ("torch", "jax"):
    for _op in ("if", "loop", "scan"):
        target(_target).gap(_op, _NOT_YET.format(_target))
