"""Strategies in a registry: name -> the class that makes and judges its tests.

A new strategy is one module with a `Strategy` subclass and one line here (or a call to
`register_strategy`, e.g. from a test or a plug-in).
"""

from __future__ import annotations

import importlib

from dlcfuzz.errors import UsageError
from dlcfuzz.strategies.base import Context, Judgement, Option, Reduction, Strategy, Test

# name -> "module:class"
STRATEGIES: dict[str, str] = {
    "auto": "dlcfuzz.strategies.auto:AutoStrategy",
    "random": "dlcfuzz.strategies.graph:RandomStrategy",
    "hirgen": "dlcfuzz.strategies.hirgen:HirgenStrategy",
    "hirgen-random": "dlcfuzz.strategies.hirgen:HirgenRandomStrategy",
    "metamorphic": "dlcfuzz.strategies.metamorphic:MetamorphicStrategy",
    "oatest": "dlcfuzz.strategies.oatest:OatestStrategy",
    "tzer": "dlcfuzz.strategies.tzer:TzerStrategy",
    "programs": "dlcfuzz.strategies.programs:ProgramsStrategy",
}
_EXTRA: dict[str, type[Strategy]] = {}


def register_strategy(name: str, cls: type[Strategy]) -> None:
    """Plug-ins (and tests) add a strategy here, with one line in their own module."""
    from dlcfuzz.backends import note_plugin

    _EXTRA[name] = cls
    note_plugin(cls.__module__)


def strategy_names() -> list[str]:
    return list(STRATEGIES) + [n for n in _EXTRA if n not in STRATEGIES]


def get_strategy(name: str) -> type[Strategy]:
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r} (choose from {', '.join(strategy_names())})")
    module, cls = STRATEGIES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def all_options() -> dict[str, Option]:
    """Every strategy's options by name (the CLI offers them all and refuses those that do not apply)."""
    out: dict[str, Option] = {}
    for name in strategy_names():
        for o in get_strategy(name).options:
            out.setdefault(o.name, o)
    return out


__all__ = ["Context", "Judgement", "Option", "Reduction", "Strategy", "Test", "all_options", "get_strategy",
           "register_strategy", "strategy_names"]
