"""Delta debugging (Zeller's ddmin) over a sequence, with an optional closure that every tried
subset is completed by (a mutation step travels with the steps it depends on)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool],
          close: Callable[[list[T]], list[T]] = lambda xs: xs, max_checks: int = 200) -> list[T]:
    """A 1-minimal (within max_checks) subsequence of `items` for which `fails` holds; `fails(items)`
    is assumed. Subsets are tried after `close`, so what is returned is closed too."""
    cur = list(items)
    n = 2
    checks = 0
    seen: set[tuple[int, ...]] = set()

    def test(cand: list[T]) -> bool:
        nonlocal checks
        cand = close(cand)
        key = tuple(id(x) for x in cand)
        if key in seen or len(cand) >= len(cur) or checks >= max_checks:
            return False
        seen.add(key)
        checks += 1
        return fails(cand)

    while len(cur) >= 2 and checks < max_checks:
        size = len(cur) // n
        chunks = [cur[i:i + size] for i in range(0, len(cur), size)]
        reduced = False
        for chunk in chunks:  # a chunk alone
            if test(chunk):
                cur, n, reduced = close(chunk), 2, True
                break
        if not reduced:
            for k in range(len(chunks)):  # everything but one chunk
                rest = [x for j, c in enumerate(chunks) if j != k for x in c]
                if test(rest):
                    cur, n, reduced = close(rest), max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(cur):
                break
            n = min(len(cur), 2 * n)
    if len(cur) == 1 and checks < max_checks and test([]):
        return close([])
    return cur
