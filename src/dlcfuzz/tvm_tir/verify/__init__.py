"""HalideIR-style transformation verification for TVM's TIR (symbolic translation validation).

Public checker API, usable for any semantics-preserving rewrite expressible as TIR expressions
(TVM's simplifier, a TIR pass, or our own metamorphic rewrites):

    from dlcfuzz.tvm_tir.verify import check_rewrite, check_equivalent
    out = check_rewrite(before, after)      # does `after` refine `before`? Outcome.status in
                                            # unchanged / proven / wrap-only / counterexample / unknown
    both = check_equivalent(a, b)           # refinement in both directions

Modules: semantics (TIR -> Z3 and NumPy), enumerate (inputs by node kind and depth), validate
(screen, solver, classification, confirmation), concrete (reproducer scripts), run and cli (the
`dlcfuzz verify` commands).
"""

from __future__ import annotations

from typing import Any

_VALIDATE_NAMES = frozenset({"COUNTEREXAMPLE", "MISMATCH", "OVERFLOW", "PROVEN", "UNCHANGED", "UNKNOWN", "WRAP",
                             "ExprChecker", "Outcome", "StmtChecker"})


def __getattr__(name: str) -> Any:
    # z3 is an optional extra (`verify`): importing this package (the CLI does) must not need it
    if name in _VALIDATE_NAMES:
        from dlcfuzz.tvm_tir.verify import validate

        return getattr(validate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["COUNTEREXAMPLE", "MISMATCH", "OVERFLOW", "PROVEN", "UNCHANGED", "UNKNOWN", "WRAP", "ExprChecker",
           "Outcome", "StmtChecker", "check_equivalent", "check_rewrite"]


def check_rewrite(before: Any, after: Any, rlimit: int = 20_000_000, wrap: bool = True) -> Any:
    """Refinement check of one rewrite of TIR expressions (a generous solver budget: one query).
    wrap=False skips the search for wrap-around-only differences (a bit-vector query, slow on
    products of variables)."""
    from dlcfuzz.tvm_tir.verify.validate import ExprChecker

    return ExprChecker(rlimit=rlimit, timeout_ms=60_000, wrap=wrap).check(before, after)


def check_equivalent(a: Any, b: Any, rlimit: int = 20_000_000, wrap: bool = True) -> tuple[Any, Any]:
    """(a refined by b, b refined by a): both PROVEN (or UNCHANGED) means the rewrite can be applied
    and undone without changing any defined result."""
    from dlcfuzz.tvm_tir.verify.validate import ExprChecker

    checker = ExprChecker(rlimit=rlimit, timeout_ms=60_000, wrap=wrap)
    return checker.check(a, b), checker.check(b, a)
