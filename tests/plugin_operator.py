"""Plug-in for tests/test_lowering_registry.py: a new operator added by docs/architecture.md's "Add an
operator" recipe, from one file: its spec and registration (step 1), then one rule or gap per lowering
target (step 2). A campaign's workers import this module too (`--plugin`), so the operator exists there."""

from __future__ import annotations

from typing import Any

from dlcfuzz.ir.types import FLOATS
from dlcfuzz.lower.pysource.rules import shared
from dlcfuzz.lower.registry import target
from dlcfuzz.ops import register
from dlcfuzz.ops.elementwise import UnaryOp

NAME = "example_cube"

# step 1: semantics (ONNX has no Cube: the ONNX rule composes it)
register(UnaryOp(NAME, FLOATS, lambda x, a: x * x * x, "Mul"))


# step 2: one rule per target, or a gap with its reason
@target("onnx").register(NAME)
def onnx_cube(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: dict, in_types: Any, out_types: Any) -> None:
    square = b.tmp("square")
    b.node("Mul", [ins[0], ins[0]], [square])
    b.node("Mul", [square, ins[0]], outs)


@shared(NAME)
def py_cube(spec: Any, e: Any, ins: list[str], outs: list[str], attrs: dict, in_types: Any, out_types: Any) -> list[str]:
    return [f"{ins[0]} * {ins[0]} * {ins[0]}"]


target("onnx-import").gap(NAME, "no ONNX operator: an imported Mul pair stays two Muls")
target("relax").gap(NAME, "an example operator kept to the ONNX and Python targets")
