"""The Python-source lowering shared by the Python targets (torch, jax): `codegen` (spelling, emitter,
program builder) and the rules that are the same up to spelling (`rules*.py`)."""

from __future__ import annotations

import importlib
import pkgutil

from dlcfuzz.lower.pysource.codegen import Spelling


def load_rules(package: str, sp: Spelling) -> None:
    """Fill the registry of a Python target: import every `rules*` module of this package (the shared
    rules, registered on each target) and of the target's `package` (its own rules), and register the
    one-expression operators of its spelling `sp` (`Spelling.templates`)."""
    from dlcfuzz.lower.pysource.rules import register_templates

    register_templates(sp)
    for pkg in (__name__, package):
        path = importlib.import_module(pkg).__path__
        for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
            if info.name.startswith("rules"):
                importlib.import_module(f"{pkg}.{info.name}")
