"""Worker handler of the oatest strategy: the ordinary test handler, plus optimization awareness.

For a synthesized test (meta "oatest") the reply also says which of the optimizations its patterns
target fired in the optimized configuration (see trigger.py); the campaign counts trigger rates
from that. Everything else is the ordinary handler's work, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.oracle.testcase import TestCase
from dlcfuzz.ir.blob import pack, unpack

HANDLER = "dlcfuzz.synth.worker:make_handler"


def fired_optimizations(backend: object, compiler: str, tc: TestCase, targets: list[str]) -> dict[str, bool]:
    """target -> whether it fired when the test's optimized configuration compiled the graph."""
    from dlcfuzz.synth.trigger import ort_fired, tvm_fired

    optimized: Config = tc.configs[-1]
    if compiler == "tvm":
        return tvm_fired(backend, tc.graph, optimized, targets)
    model = backend.lower(tc.graph, optimized)  # type: ignore[attr-defined]
    return ort_fired(backend, model, targets, {k: v for k, v in optimized.options.items() if k != "dump"})


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    from dlcfuzz.backends.worker import make_handler as ordinary

    handle_test = ordinary(init)
    compiler = init["compiler"]
    backend = get_backend(compiler)

    def handle(payload: bytes) -> bytes:
        reply = handle_test(payload)
        tc = TestCase.from_bytes(payload)
        oa = tc.meta.get("oatest")
        if not oa or not oa.get("targets"):
            return reply
        try:
            fired: dict[str, bool] | None = fired_optimizations(backend, compiler, tc, list(oa["targets"]))
            error = None
        except Exception as e:  # the build itself failing is judged by the ordinary oracles
            fired, error = None, f"{type(e).__name__}: {str(e)[:300]}"
        meta, arrays = unpack(reply)
        meta["oatest"] = {"fired": fired, "error": error}
        return pack(meta, arrays)

    return handle


def fired_from_reply(reply: bytes) -> dict[str, bool] | None:
    meta, _ = unpack(reply)
    return (meta.get("oatest") or {}).get("fired")
