"""One finding's reduction budget: wall-clock seconds and compile+run checks.

Every finding is reduced on a budget of its own (not a share of the campaign's time), so a finding
that comes late is reduced as well as one that comes early. The reducers' predicates spend it;
once it is spent every further check answers "no", so a reducer ends with the smallest form it
has, and `stopped` says why that form may not be minimal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

P = TypeVar("P", bound=Callable[..., bool])


class ReductionBudget:
    def __init__(self, seconds: float, checks: int, clock: Callable[[], float] = time.monotonic,
                 off: str | None = None) -> None:
        self.seconds, self.checks, self.clock = seconds, checks, clock
        self.started = clock()
        self.used = 0
        # why the reduction may have stopped before a minimal form (None: it ran to its fixed point)
        self.stopped: str | None = off

    @classmethod
    def disabled(cls, why: str) -> ReductionBudget:
        return cls(0.0, 0, off=why)

    def take(self) -> bool:
        """Whether one more check may run; counts it."""
        if self.stopped is not None:
            return False
        if self.used >= self.checks:
            self.stopped = f"its limit of {self.checks} compile+run checks was reached"
        elif self.clock() - self.started >= self.seconds:
            self.stopped = f"its {self.seconds:.0f} s budget ran out after {self.used} checks"
        else:
            self.used += 1
            return True
        return False

    def guard(self, predicate: P) -> P:
        """`predicate`, answering False without running once the budget is spent."""

        def guarded(*args: object, **kw: object) -> bool:
            return self.take() and predicate(*args, **kw)

        return guarded  # type: ignore[return-value]

    @property
    def spent_s(self) -> float:
        return self.clock() - self.started
