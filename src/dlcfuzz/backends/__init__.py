"""Compilers under test, behind one protocol, in a registry (never an if/elif chain)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import cast

from dlcfuzz.backends.base import Backend, BackendBase, Compiled, Config, Knob
from dlcfuzz.errors import UsageError

# name -> (module path, class name, the pip distribution(s) it needs)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "onnxruntime": ("dlcfuzz.backends.onnxruntime.backend", "OnnxRuntimeBackend", "onnxruntime"),
    "tvm": ("dlcfuzz.backends.tvm.backend", "TvmBackend", "apache-tvm"),
    "inductor": ("dlcfuzz.backends.inductor", "InductorBackend", "torch"),
    "openvino": ("dlcfuzz.backends.openvino", "OpenVinoBackend", "openvino"),
    "xla": ("dlcfuzz.backends.xla", "XlaBackend", "jax"),
}
_FACTORIES: dict[str, Callable[[], Backend]] = {}
DEFAULT_COMPILER = "onnxruntime"  # a campaign's compiler when none is named


_PLUGIN_MODULES: list[str] = []  # modules that registered a backend or strategy: workers import them too


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Extra backends (planted-fault test backends, wrappers, plug-ins) register here, with one line
    in their own module; the campaign's workers import that module before they build the backend."""
    _FACTORIES[name] = factory
    note_plugin(factory.__module__)


def note_plugin(module: str) -> None:
    if module not in _PLUGIN_MODULES and module != "__main__":
        _PLUGIN_MODULES.append(module)


def plugin_modules() -> list[str]:
    return list(_PLUGIN_MODULES)


def load_plugins(modules: list[str]) -> None:
    """In a worker: import the plug-in modules the campaign registered (their registration lines run)."""
    for m in modules:
        importlib.import_module(m)


def backend_names() -> list[str]:
    return sorted(set(BACKENDS) | set(_FACTORIES))


def registry_name(compiler: str) -> str:
    """The registered compiler a backend's name belongs to: a variant's name is `NAME:details`
    (`planted:segfault@add` wraps ONNXRuntime, and the register file of `planted` lists it)."""
    return compiler.split(":", 1)[0]


def known_bug_files() -> list[Path]:
    """The known-bugs registers the compiler packages ship (`backends/<compiler>/known_bugs.json`),
    in path order; found without importing any compiler."""
    here = Path(__file__).resolve().parent
    folders = {here / m.split(".")[2] for m, _, _ in BACKENDS.values()}
    return sorted(f / "known_bugs.json" for f in folders if (f / "known_bugs.json").is_file())


def get_backend(name: str) -> Backend:
    if name.startswith("planted:"):
        from dlcfuzz.backends.planted import PlantedBackend

        fault, _, op = name[len("planted:"):].partition("@")
        try:
            return PlantedBackend(fault, op or "add")
        except ValueError as e:
            raise UsageError(str(e)) from None
    if name in _FACTORIES:
        return _FACTORIES[name]()
    if name not in BACKENDS:
        raise UsageError(f"unknown compiler {name!r} (choose from {', '.join(backend_names())})")
    module, cls, dist = BACKENDS[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise UsageError(f"compiler {name!r} is not installed ({e.name} missing): pip install 'dlcfuzz[{name}]' or {dist}") from None
    return getattr(mod, cls)()


def backend_facts(compiler: str) -> Backend:
    """The compiler's backend, whose facts (front doors, packages, bug template, what each configuration runs)
    issue text and the known-bugs register read; where it cannot be loaded here (not installed), the defaults
    of `BackendBase`."""
    try:
        return get_backend(compiler)
    except Exception:  # a compiler that is not installed here: no facts beyond the defaults
        return cast(Backend, BackendBase())


__all__ = ["DEFAULT_COMPILER", "Backend", "Compiled", "Config", "Knob", "backend_facts", "backend_names", "get_backend", "known_bug_files", "register_backend",
           "registry_name"]
