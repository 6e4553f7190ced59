"""Regions (ops/regions.py) in Relax: documented gaps of this slice (issue 40)."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

RELAX = target("relax")

_NOT_YET = ("a region's Relax form (relax.If with the dataflow block split around it; loops as recursive "
            "functions) is not written yet: issue 40's next slice")
for _op in ("if", "loop", "scan"):
    RELAX.gap(_op, _NOT_YET)
