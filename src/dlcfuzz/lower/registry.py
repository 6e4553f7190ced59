"""Per-target lowering registries: one `Target` per compiler IR (onnx, relax, torch, jax, ...).

An operator's semantics live in `ops/`; how it is written in one target's vocabulary lives with
that target (`lower/<target>/`), registered against the operator's name. A target either lowers
an operator or documents why it cannot (a gap with its reason); `tests/test_lowering_registry.py`
asserts that every registered operator is one or the other, for every target.

A rule's parameters, the same order in every target: the operator's spec, the target's builder
(ONNX's node builder, Relax's BlockBuilder, the Python targets' emitter), the input values, the
output names, the attributes, the input types, the output types. The Python targets (torch, jax)
share one source lowering and their common rules (`lower/pysource/`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from dlcfuzz.errors import LoweringGap, Unsupported

Rule = Callable[..., Any]

# target name -> the module that fills its registry when imported (lazily: a target's module may
# import its compiler, e.g. torch or jax)
TARGET_MODULES: dict[str, str] = {
    "onnx": "dlcfuzz.lower.onnx",
    "onnx-import": "dlcfuzz.lower.onnx",  # ONNX -> Graph import rules, beside the ONNX lowering rules
    "relax": "dlcfuzz.lower.relax",
    "torch": "dlcfuzz.lower.torch",
    "jax": "dlcfuzz.lower.jax",
}


ONNX_TARGETS = ("onnx", "onnx-import")  # the targets that write or read ONNX (any domain)


class Target:
    """The lowering rules of one target, keyed by operator name, and its documented gaps."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rules: dict[str, Rule] = {}
        self.gaps: dict[str, str] = {}

    def register(self, *ops: str) -> Callable[[Rule], Rule]:
        """Decorator: `@TARGET.register("add", "sub")` makes the function the rule of those ops."""

        def deco(fn: Rule) -> Rule:
            for op in ops:
                if op in self.rules:
                    raise ValueError(f"{self.name}: operator {op!r} lowered twice")
                self.rules[op] = fn
            return fn

        return deco

    def gap(self, op: str, reason: str) -> None:
        """`op` cannot be expressed in this target (documented, with the upstream reason)."""
        self.gaps[op] = reason

    def gap_of(self, op: str) -> str | None:
        """Why `op` is not lowered here, if it is a gap: a documented one, or an operator of another
        ONNX domain (ORT's com.microsoft contrib operators), which only ONNX consumers read."""
        if op in self.gaps:
            return self.gaps[op]
        if self.name in ONNX_TARGETS:
            return None
        from dlcfuzz.ops import registry

        spec = registry().get(op)
        return f"an operator of ONNX domain {spec.onnx_domain}: only ONNX consumers read it" \
            if spec is not None and spec.onnx_domain else None

    def rule(self, op: str) -> Rule:
        if op in self.rules:
            return self.rules[op]
        why = self.gap_of(op)
        if why is not None:
            raise LoweringGap(f"{op}: not lowered to {self.name}: {why}")
        raise Unsupported(f"{op}: no {self.name} lowering registered")

    def covers(self, op: str) -> bool:
        return op in self.rules or self.gap_of(op) is not None


_TARGETS: dict[str, Target] = {}


def target(name: str) -> Target:
    """The registry object of a target (created on first use; its module fills it)."""
    if name not in _TARGETS:
        _TARGETS[name] = Target(name)
    return _TARGETS[name]


def load_target(name: str) -> Target:
    """Import the target's module (which registers its rules) and return its registry."""
    if name not in TARGET_MODULES:
        raise KeyError(f"unknown lowering target {name!r} (have {', '.join(TARGET_MODULES)})")
    importlib.import_module(TARGET_MODULES[name])
    return target(name)
