"""One checker and one repairer of pass sequences under a pass table's ordering rules, shared by
the Relax table (passes.py) and the TIR table (tir_passes.py). No TVM import.

Rules: `requires` (pass -> passes that must have run before it), `not_after` (pass -> passes after
which it must not run), `not_between` (pass -> (opening, closing): not after the opening pass unless
the closing one ran in between).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence


def order_violations(seq: Sequence[str], known: Container[str], requires: Mapping[str, Sequence[str]],
                     not_after: Mapping[str, Sequence[str]],
                     not_between: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    """What is wrong with a pass sequence under a pass table's ordering rules (empty: well ordered)."""
    out: list[str] = []
    for i, p in enumerate(seq):
        if p not in known:
            out.append(f"unknown pass {p!r}")
            continue
        before = set(seq[:i])
        out.extend(f"{p} needs {r} before it" for r in requires.get(p, ()) if r not in before)
        out.extend(f"{p} must not run after {q}" for q in not_after.get(p, ()) if q in before)
        if not_between and p in not_between and inside(seq[:i], *not_between[p]):
            out.append(f"{p} must not run between {not_between[p][0]} and {not_between[p][1]}")
    return out


def inside(done: Sequence[str], opening: str, closing: str) -> bool:
    """Whether `done` ran `opening` and, after its last run, not `closing`."""
    last = max((i for i, q in enumerate(done) if q == opening), default=-1)
    return last >= 0 and closing not in done[last + 1:]


def repair_sequence(seq: Sequence[str], known: Container[str], requires: Mapping[str, Sequence[str]],
                    not_after: Mapping[str, Sequence[str]],
                    not_between: Mapping[str, tuple[str, str]] | None = None, *, distinct: bool = True) -> list[str]:
    """`seq` made to satisfy the rules, in order: a missing prerequisite is inserted right before the
    pass that needs it (so the result may be longer), a pass that must not follow an earlier one is
    dropped (with what needs it), one that must wait for a closing pass runs right after it (or is
    dropped); unknown passes are dropped. With `distinct`, a pass runs at most once; otherwise only
    prerequisites already run are not inserted again."""
    between = not_between or {}
    out: list[str] = []
    waiting: list[str] = []

    def place(p: str, prerequisite: bool) -> None:
        if p not in known or (p in out and (distinct or prerequisite)):
            return
        if any(q in out for q in not_after.get(p, ())):
            return
        for r in requires.get(p, ()):
            place(r, True)
        if not all(r in out for r in requires.get(p, ())):
            return
        if p in between and inside(out, *between[p]):
            if p not in waiting:
                waiting.append(p)
            return
        out.append(p)
        for w in list(waiting):
            if not inside(out, *between[w]):
                waiting.remove(w)
                place(w, False)

    for p in seq:
        place(p, False)
    return out
