"""Test configuration: make the shared harness importable as `op_harness` and `tests.op_harness`; Hypothesis
derandomized, so that a run is the same in every process and on every machine (its examples come from the test's
own code, not from a random seed)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("dlcfuzz", derandomize=True)
settings.load_profile("dlcfuzz")


@pytest.fixture(autouse=True, scope="module")
def _workers_import_only_this_files_plugins(request):
    """A campaign's workers import every plug-in module the test process has registered (`plugin_modules()`), and
    its zygote preloads them: in a suite run each process has collected every test file, so every pool preloaded
    `inductor_planted_pattern` (torch, Inductor's pattern matcher, and its `before_fork`: Inductor's code cache and
    vector-ISA probe, two `python -c` checks) whatever its compiler: an ORT campaign's zygote took ~4.5 CPU s, 0.5 s
    without; and, once a test had imported it, `dlcfuzz.backends.xla.planted` (jax). Here
    a file's workers get the plug-ins its own source names, as when the file runs alone (a file that uses a
    plug-in imports it, or it would fail alone); those registered while it runs are kept for the later files."""
    from dlcfuzz.backends import _PLUGIN_MODULES

    source = request.path.read_text()
    everything = list(_PLUGIN_MODULES)
    _PLUGIN_MODULES[:] = [m for m in everything if m in source]
    yield
    _PLUGIN_MODULES[:] = everything + [m for m in _PLUGIN_MODULES if m not in everything]


def pytest_collection_modifyitems(config, items) -> None:
    """Files that hold `slow` tests first, the most slow tests first; then the rest, the most tests first
    (pytest-xdist's own order, which `scripts/test.sh` turns off with `--no-loadscope-reorder`). With
    `--dist loadfile` a file is the unit a process takes: a long file taken last keeps one process busy
    while the other idles, so the long ones go first (longest processing time first)."""
    slow: dict[str, int] = {}
    count: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        count[path] = count.get(path, 0) + 1
        slow[path] = slow.get(path, 0) + (item.get_closest_marker("slow") is not None)
    order = {path: k for k, path in enumerate(sorted(count, key=lambda p: (-slow[p], -count[p])))}
    items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])  # stable: a file's own order is kept
