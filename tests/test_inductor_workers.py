"""Inductor's pool workers start warm: the zygote that forks them (exec/pool.py) runs the backend's
`before_fork()`, so a worker inherits Inductor's vector ISA probe (4 small C++ programs compiled and loaded:
6-7 CPU s in every worker, whose cache folder is private) and the machine's folder of Inductor's precompiled
header (built again for every pool when a worker's TMPDIR, its pool's scratch folder, decided it), and
Inductor's compiler modules already imported."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

pytest.importorskip("torch", reason="Inductor is torch's")


def worker_facts(init: dict) -> Callable[[bytes], bytes]:
    """Pool handler: what a worker holds before its first compile, after the backend's set-up."""
    from dlcfuzz.backends import get_backend, load_plugins

    load_plugins(init.get("plugins", []))
    get_backend(init["compiler"])  # the worker's own set-up (private cache folder, one thread), as a campaign's

    def handle(_: bytes) -> bytes:
        import sys
        import tempfile

        from torch._inductor import codecache, cpu_vec_isa

        return json.dumps({"header_dir": codecache._HEADER_DIR, "temp_dir": tempfile.gettempdir(),
                           "isa_probed": cpu_vec_isa.valid_vec_isa_list.cache_info().currsize,
                           "compiler_imported": "torch._inductor.compile_fx" in sys.modules}).encode()

    return handle


@pytest.mark.parametrize("init", [{"compiler": "inductor"},  # and a plug-in wrapping Inductor, which re-exports it
                                  {"compiler": "inductor-planted-pattern", "plugins": ["inductor_planted_pattern"]}],
                         ids=lambda init: init["compiler"])
def test_a_worker_inherits_the_vector_isa_probe_and_every_pool_one_precompiled_header_folder(init):
    from dlcfuzz.exec.pool import WorkerPool
    from dlcfuzz.exec.worker import preload_modules

    handler = "test_inductor_workers:worker_facts"
    facts = []
    for _ in range(2):  # two pools of one process, as a campaign's testing pool and its reducer's
        with WorkerPool(handler, init, jobs=1, timeout_s=60.0, preload=preload_modules(handler, init)) as pool:
            r = pool.run(b"")
            assert r.status == "ok", r.error or r.stderr_tail
            facts.append(json.loads(r.payload))
            assert facts[-1]["temp_dir"] == pool.scratch  # the worker's temporary files are its pool's
    # before the worker's first compile, by the zygote: the ISA probed and Inductor's compiler imported
    assert [(f["isa_probed"], f["compiler_imported"]) for f in facts] == [(1, True), (1, True)]
    assert facts[0]["header_dir"] == facts[1]["header_dir"]
    assert not facts[0]["header_dir"].startswith(facts[0]["temp_dir"] + os.sep)
