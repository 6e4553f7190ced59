"""Regions (ops/regions.py) in Relax: loops and scans are documented gaps of this slice (issue 40); a
conditional is relax.If (its rule is in the package's __init__, beside the function builder it uses)."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

RELAX = target("relax")

_LOOPS = ("Relax has no loop construct: a loop is a recursive function (or a while in TVMScript), and apache-tvm "
          "0.27's ONNX frontend refuses Loop and Scan (OpNotImplemented); not written yet (issue 40's next slice)")
RELAX.gap("loop", _LOOPS)
RELAX.gap("scan", _LOOPS)
