"""Typed errors shared by every layer of dlcfuzz."""

from __future__ import annotations


class DlcfuzzError(Exception):
    """Base class of dlcfuzz's own errors."""


class InternalError(Exception):
    """dlcfuzz's own code raised while making, rebuilding or judging a test (what `replay` re-raises).
    Not a DlcfuzzError: the handlers that turn those into a refused graph must not swallow it."""


class UsageError(DlcfuzzError):
    """Bad input from the user: reported as one line, exit status 2."""


class IRError(DlcfuzzError):
    """A Graph is malformed. `node` names the offending node (or value) when known."""

    def __init__(self, message: str, node: str | None = None) -> None:
        self.node = node
        super().__init__(f"{node}: {message}" if node else message)


class TypeRuleError(IRError):
    """An operator's type rule is violated (the disruptive mode breaks these on purpose)."""

    rule = "type"


class ShapeError(TypeRuleError):
    """Input shapes (or shape-dependent attributes) are invalid for an operator."""

    rule = "shape"


class DTypeError(TypeRuleError):
    """An input dtype is not accepted by an operator."""

    rule = "dtype"


class Unsupported(DlcfuzzError):
    """Something (an ONNX node, an attribute value) is outside what dlcfuzz models."""


class LoweringGap(Unsupported):
    """A target cannot express an operator, for a documented reason (`Target.gap`): the capability
    probe counts the operator as unsupported there, never as a failure."""
