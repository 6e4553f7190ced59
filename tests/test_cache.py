"""dlcfuzz's cache folder: a value is computed once per key, by one process, and a corrupt file is computed again."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

from dlcfuzz.cache import cache_root, cached_json


def _slow_compute(path: str, log: str) -> list:
    def compute() -> list:
        with open(log, "a") as f:
            f.write("computed\n")
        time.sleep(0.5)  # the other process arrives meanwhile and must wait, not compute again
        return [1, {"a": None}]

    return cached_json(Path(path), compute)


def test_a_value_is_computed_once_and_read_back_after(tmp_path, monkeypatch):
    monkeypatch.setenv("DLCFUZZ_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    calls = []
    path = cache_root() / "kind" / "key-1.0.json"
    assert cached_json(path, lambda: calls.append(1) or {"x": [1, 2]}) == {"x": [1, 2]}
    assert cached_json(path, lambda: calls.append(1) or {"x": "other"}) == {"x": [1, 2]}
    assert calls == [1]
    path.write_text('{"x": [1,')  # corrupt (an older crash mid-write cannot leave this, a hand edit can)
    assert cached_json(path, lambda: calls.append(1) or {"x": 3}) == {"x": 3}
    assert json.loads(path.read_text()) == {"x": 3} and calls == [1, 1]
    assert sorted(p.name for p in path.parent.iterdir()) == ["key-1.0.json", "key-1.0.lock"]  # no temporary left


def test_two_processes_at_once_compute_once(tmp_path):
    path, log = tmp_path / "v.json", tmp_path / "log"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        got = pool.starmap(_slow_compute, [(str(path), str(log))] * 2)
    assert got == [[1, {"a": None}]] * 2
    assert log.read_text() == "computed\n"
