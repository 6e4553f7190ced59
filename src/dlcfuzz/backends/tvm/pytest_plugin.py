"""pytest plugin (`-p dlcfuzz.backends.tvm.pytest_plugin`) that records every TVM pass call of a test run.

`tvm.ir.transform.Pass.__call__` is wrapped: before a pass runs, the input module's Relax binding
blocks are converted to our IR (lower/relax_import.py) and one JSON line {test, pass, graphs, cut} is
appended to the file named by $DLCFUZZ_PASS_LOG. Identical (module, pass) pairs are recorded once.
`dlcfuzz patterns extract --pytest PATH` runs pytest with this plugin in a subprocess.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

_seen: set[tuple[str, int]] = set()


def _record(p: Any, mod: Any) -> None:
    import tvm
    import tvm_ffi

    from dlcfuzz.ir import dumps
    from dlcfuzz.lower.relax_import import module_to_graphs

    name = p.info.name
    if name.startswith("sequential") or not isinstance(mod, tvm.IRModule):
        return
    key = (name, int(tvm_ffi.structural_hash(mod)))
    if key in _seen:
        return
    _seen.add(key)
    graphs = [(gname, base64.b64encode(dumps(g)).decode("ascii")) for gname, g in module_to_graphs(mod)]
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    with open(os.environ["DLCFUZZ_PASS_LOG"], "a") as f:
        f.write(json.dumps({"test": test, "pass": name, "graphs": graphs}) + "\n")


def pytest_configure(config: Any) -> None:
    if "DLCFUZZ_PASS_LOG" not in os.environ:
        return
    try:
        from tvm.ir.transform import Pass
    except ImportError:  # nothing to record without TVM
        return
    original = Pass.__call__

    def recording_call(self: Any, mod: Any) -> Any:
        try:
            _record(self, mod)
        except Exception as e:  # recording must never change the test's outcome
            with open(os.environ["DLCFUZZ_PASS_LOG"] + ".errors", "a") as f:
                f.write(f"{type(e).__name__}: {e}\n")
        return original(self, mod)

    Pass.__call__ = recording_call
