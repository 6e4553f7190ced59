"""The Python-source lowering shared by the Python targets (torch, jax): `codegen` (spelling, emitter,
program builder) and the rules that are the same up to spelling (`rules*.py`)."""

from __future__ import annotations

import importlib
import pkgutil


def load_rules(package: str) -> None:
    """Fill the registries of the Python targets: import every `rules*` module of this package (the
    shared rules, registered on each target) and of the target's `package` (its own rules)."""
    for pkg in (__name__, package):
        path = importlib.import_module(pkg).__path__
        for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
            if info.name.startswith("rules"):
                importlib.import_module(f"{pkg}.{info.name}")
