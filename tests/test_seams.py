"""The Protocols that type dlcfuzz's seams name what the real classes have: a Protocol defined on a lower
floor (the store as strategies see it, the campaign as finding recording sees it) is checked by no type
checker at run time, so a renamed method or parameter would leave it stale without this test."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any, Protocol

import pytest

from dlcfuzz.backends import BACKENDS
from dlcfuzz.backends.base import Backend
from dlcfuzz.backends.onnxruntime.trigger import OnnxCompiler
from dlcfuzz.engine.findings import FindingRecorder, InternalErrors
from dlcfuzz.engine.store import Store
from dlcfuzz.exec.cluster import RayPool
from dlcfuzz.exec.pool import Pool, TaskRunner, WorkerPool
from dlcfuzz.strategies.auto import ArmPool
from dlcfuzz.strategies.base import StrategyStore


def protocol_members(proto: type) -> dict[str, Any]:
    """name -> the Protocol's declaration (a function, a property, or None for an annotated attribute),
    its Protocol bases' included."""
    members: dict[str, Any] = {}
    for base in reversed(proto.__mro__):
        if base in (Protocol, object) or not getattr(base, "_is_protocol", False):
            continue
        members.update(dict.fromkeys(vars(base).get("__annotations__", {})))
        members.update({k: v for k, v in vars(base).items()
                        if (not k.startswith("_") or k in ("__enter__", "__exit__"))
                        and (inspect.isfunction(v) or isinstance(v, property))})
    return members


def parameter_names(f: Any) -> list[str]:
    return list(inspect.signature(f).parameters)


def mismatches(proto: type, impl: Any) -> list[str]:
    """What `impl` (a class or an instance) lacks of `proto`, or has with other parameter names."""
    out = []
    for name, decl in protocol_members(proto).items():
        if not hasattr(impl, name):
            out.append(f"{name}: missing")
        elif inspect.isfunction(decl):
            have = getattr(impl, name)
            want = parameter_names(decl)[1:]  # without self
            got = parameter_names(have)[1:] if inspect.isclass(impl) else parameter_names(have)  # bound: no self
            if got != want:
                out.append(f"{name}: parameters {got}, the Protocol's {want}")
    return out


@pytest.mark.parametrize(("proto", "impl"), [
    (Pool, WorkerPool), (Pool, RayPool), (TaskRunner, ArmPool), (StrategyStore, Store),
])
def test_classes_have_every_member_of_their_protocol(proto: type, impl: type) -> None:
    assert protocol_members(proto), "no member found: the check would pass vacuously"
    assert mismatches(proto, impl) == []


def test_every_compiler_is_a_backend_and_onnxruntime_an_onnx_compiler() -> None:
    names = [name for name, (module, _, _) in BACKENDS.items() if importlib.util.find_spec(module.split(".")[0])]
    assert "onnxruntime" in names and {"frame_patterns", "lower", "reproducer"} <= protocol_members(Backend).keys()
    for name in names:
        module, cls, _ = BACKENDS[name]
        assert mismatches(Backend, getattr(importlib.import_module(module), cls)) == [], name
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

    assert mismatches(OnnxCompiler, OnnxRuntimeBackend) == []


def test_the_campaign_is_what_finding_recording_uses(tmp_path: Path) -> None:
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    camp = Campaign(campaign_options(compiler="onnxruntime", strategy="random", out=tmp_path / "run", quiet=True))
    try:
        assert mismatches(FindingRecorder, camp) == []
        assert mismatches(InternalErrors, camp.internal) == []
    finally:
        camp.store.close()


def test_a_changed_parameter_or_a_missing_member_is_reported() -> None:
    class Runner:
        def run(self, blob: bytes, timeout_s: float | None = None) -> None: ...

    assert mismatches(TaskRunner, Runner) == ["run: parameters ['blob', 'timeout_s'], the Protocol's "
                                              "['payload', 'timeout_s']"]
    assert "submit: missing" in mismatches(Pool, Runner)
