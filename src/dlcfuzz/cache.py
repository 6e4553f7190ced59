"""dlcfuzz's cache folder: facts of an installed compiler that cost seconds to learn and stay true for that
release (capability probes, Inductor's pattern registrations), shared by every campaign of this user."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cache_root() -> Path:
    """$DLCFUZZ_CACHE, else $XDG_CACHE_HOME/dlcfuzz, else ~/.cache/dlcfuzz."""
    return Path(os.environ.get("DLCFUZZ_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dlcfuzz")


def cached_json(path: Path, compute: Callable[[], Any]) -> Any:
    """The JSON value stored at `path`, else `compute()`'s, stored there. One process computes it: another started
    meanwhile waits and reads its answer; a corrupt file is computed again; the file is replaced whole, never
    seen half written. A key of what the value depends on (release, dlcfuzz's code) belongs in the name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):
                pass
        value = compute()
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value))
        tmp.replace(path)
        return value
