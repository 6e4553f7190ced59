"""The worker side of a `programs` test: the backend's program dialect runs the program (eagerly with
its guards, a float64 eager reference, every compiled configuration) and the reply carries the
outputs and the inputs after each call. Names no compiler: the dialect is the backend's."""

from __future__ import annotations

from collections.abc import Callable

from dlcfuzz.backends import get_backend, load_plugins
from dlcfuzz.ir.blob import pack
from dlcfuzz.programs.core import decode_test


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Pool factory: init = {"compiler": NAME, "plugins": [...]}. Imports the compiler once per worker."""
    from dlcfuzz.exec.pool import progress

    load_plugins(init.get("plugins", []))
    backend = get_backend(init["compiler"])
    dialect = backend.program_dialect()
    if dialect is None:
        raise ValueError(f"{init['compiler']} has no program language")
    version = backend.version()

    def handle(payload: bytes) -> bytes:
        program, seed, configs = decode_test(payload)
        meta, arrays = dialect.run(program, seed, configs, progress)
        meta["version"] = version
        return pack(meta, arrays)

    return handle
