"""Inductor's own Python coverage, as feedback: arcs of torch/_inductor, torch/_dynamo and torch/fx.

coverage.py's C tracer records line-to-line arcs of those folders only while a test compiles;
items are `"<path relative to the torch package>:<from>-><to>"` (e.g.
`_inductor/scheduler.py:120->121`), never a path of this machine. Caches that would let a compile
skip the compiler's code (the FX graph cache, the autotune cache) are off while collecting, so the
same graph reaches the same code each time.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

FOLDERS: tuple[str, ...] = ("_inductor", "_dynamo", "fx")
# functools.cache'd helpers whose bodies run on whichever compile first asks about a generated
# module (called from C++, in no fixed order): their arcs say nothing about the graph
NOISE: tuple[tuple[str, str], ...] = (("torch._inductor.codecache", "PyCodeCache.stack_frames_for_code"),)


def _noise_lines(root: Path) -> dict[str, range]:
    """file (relative to torch) -> the line range of each NOISE function that exists in this release."""
    import importlib
    import inspect

    out: dict[str, range] = {}
    for module, qualname in NOISE:
        try:
            obj: Any = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            obj = inspect.unwrap(getattr(obj, "__func__", obj))
            lines, first = inspect.getsourcelines(obj)
            rel = Path(inspect.getsourcefile(obj) or "").resolve().relative_to(root).as_posix()
        except (ImportError, AttributeError, OSError, TypeError, ValueError):
            continue
        out[rel] = range(first, first + len(lines))
    return out


class CompilerCoverage:
    def __init__(self) -> None:
        import coverage
        import torch

        self.root = Path(torch.__file__).resolve().parent
        include = [str(self.root / f / "*") for f in FOLDERS]
        # data_file=None: in memory only; branch=True records arcs
        self.cov = coverage.Coverage(data_file=None, branch=True, include=include, config_file=False)
        self._patch: Any = None
        self.noise = _noise_lines(self.root)

    @property
    def tracer(self) -> str:
        """The tracer in use ("CTracer" unless coverage.py lacks its C extension)."""
        collector = getattr(self.cov, "_collector", None)
        return collector.tracer_name() if collector is not None else "not started"

    def start(self) -> None:
        import torch

        self._patch = torch._inductor.config.patch({"force_disable_caches": True})
        self._patch.__enter__()
        self.cov.erase()
        warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
        self.cov.start()

    def stop(self) -> list[str]:
        self.cov.stop()
        if self._patch is not None:
            self._patch.__exit__(None, None, None)
            self._patch = None
        data = self.cov.get_data()
        items: list[str] = []
        for f in data.measured_files():
            try:
                rel = Path(f).resolve().relative_to(self.root).as_posix()
            except ValueError:
                continue
            skip = self.noise.get(rel, range(0))
            for a, b in data.arcs(f) or ():
                if a > 0 and b > 0 and a not in skip:  # entries and exits (negative line numbers) carry no code of their own
                    items.append(f"{rel}:{a}->{b}")
        self.cov.erase()
        return sorted(items)
