"""Several independent tests compiled as one module per configuration (issue 42 item 2, issue 39 item 3):
each test is judged on its own outputs, a test that is not quiet in its batch runs alone and only that run
judges it, and a batch that crashes runs each of its tests alone. Real compilers (planted faults in them);
the campaigns are the engine's own (exec/worker.py's batches, engine/campaign.py's `finish_batch`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.engine.store import Store  # noqa: E402

PER_MODULE = 4


def campaign(out: Path, compiler: str, per_module: int, **kw: Any) -> tuple[Campaign, Store, dict[int, str]]:
    """A random-strategy campaign (one worker, so its batches are consecutive test numbers); the campaign, its
    store and each test's verdict by test number."""
    camp = Campaign(campaign_options(compiler=compiler, strategy="random", seconds=600, jobs=1, out=out, quiet=True,
                                     reduce=False, keep_tests=True, tests_per_module=per_module, **kw))
    camp.run()
    store = Store(out / "store.sqlite", create=False)
    verdicts = dict(store.db.execute("SELECT seq, verdict FROM tests").fetchall())
    return camp, store, verdicts


def found_seqs(store: Store) -> list[int]:
    return sorted(seq for (seq,) in store.db.execute("SELECT t.seq FROM findings f JOIN tests t ON t.id = f.test_id"))


@pytest.mark.parametrize("compiler", ["onnxruntime", "tvm"])
def test_side_by_side_runs_each_test_as_alone_and_says_nothing_of_a_failed_module(compiler):
    """The worker's batch: per configuration the tests share, one module; each test's observations are those of
    its run alone (same configurations, same input sets, the same outputs); a module that does not compile
    says nothing of its tests (None: they run alone)."""
    pytest.importorskip(compiler)
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import run_configs, run_side_by_side
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.gen.random import generate
    from dlcfuzz.ops import get_op
    from dlcfuzz.oracle.testcase import Config, TestCase

    backend = get_backend(compiler)
    rng = np.random.default_rng(4)
    pair = list(backend.default_pair())
    extra = next(c for c in backend.configs().values() if c not in pair)
    tcs = []
    for k in range(3):
        g = generate(rng, 3, dtypes=["float32"], ops=[get_op(op) for op in ("relu", "add", "mul", "neg")])
        # the second test compares one configuration more: that module holds it alone
        tcs.append(TestCase(g, sample_inputs(g, rng), pair + ([extra] if k == 1 else []), seed=k))
    sets = [[tc.inputs, sample_inputs(tc.graph, rng)] for tc in tcs]
    batched = run_side_by_side(backend, tcs, sets)
    for tc, own, obs in zip(tcs, sets, batched, strict=True):
        alone = run_configs(backend, tc, input_sets=own)
        assert obs is not None and [(o.config, o.input_set) for o in obs] == [(o.config, o.input_set) for o in alone]
        for a, b in zip(obs, alone, strict=True):
            assert a.status == b.status == "ok"
            assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a.outputs, b.outputs, strict=True))
    if compiler == "onnxruntime":  # a configuration the compiler refuses
        broken = [TestCase(tc.graph, tc.inputs, [Config("bad", {"opt_level": "no-such-level"})], seed=0) for tc in tcs]
        assert run_side_by_side(backend, broken, sets) == [None, None, None]


@pytest.mark.slow
def test_planted_fault_in_one_test_of_a_batch_is_that_tests_alone_and_real_xla_is_quiet(tmp_path):
    """planted-xla:algsimp@add (every add off by one where algsimp runs) over tests drawn from a few operators,
    four tests per module: each finding is a test's own (a batch runs its disagreeing test alone, which
    finds it) and its batch-mates are judged from the batch, quiet; the same campaign without batching
    gives every test the same verdict; real XLA is quiet on the same tests, judged from their batches."""
    from dlcfuzz.backends.xla.planted import DEFAULT

    common = dict(seed=6, ops=3, only_ops=["add", "neg", "abs", "relu", "mul"], values="small", sizes="small",
                  max_tests=16)
    bad, bad_store, bad_verdicts = campaign(tmp_path / "bad", DEFAULT, PER_MODULE, **common)
    found = found_seqs(bad_store)
    assert found, bad_verdicts
    # a finding's batch-mates were judged in the batch (the fault is in a test of its own, not its batch's)
    mates = [seq for f in found for seq in range(f // PER_MODULE * PER_MODULE, f // PER_MODULE * PER_MODULE + PER_MODULE)
             if seq not in found]
    assert mates and all(bad_verdicts[seq] != "bug" for seq in mates), bad_verdicts
    assert bad.counts["batched"] >= len(mates) and bad.counts["alone"] >= len(found), bad.counts
    _, single_store, single_verdicts = campaign(tmp_path / "single", DEFAULT, 1, **common)
    assert single_verdicts == bad_verdicts and found_seqs(single_store) == found
    real, real_store, real_verdicts = campaign(tmp_path / "real", "xla", PER_MODULE, **common)
    assert real_store.findings(distinct_only=False) == [] and "bug" not in real_verdicts.values()
    assert real.counts["batched"] >= 12 and real.counts["compiles"] < real.counts["batched"], real.counts


def test_a_crashing_batch_loses_no_test_and_batching_changes_no_verdict(tmp_path):
    """planted:segfault@relu (ONNXRuntime whose optimized build segfaults on a graph with Relu), four tests per
    module: a batch holding a Relu test crashes, each of its tests runs alone, and the crash is the Relu
    tests' alone; every test is judged, with the verdict the same campaign without batching gives it."""
    common = dict(seed=2, ops=2, only_ops=["relu", "add", "mul", "neg", "sub", "abs"], values="small", sizes="small",
                  max_tests=16)
    batched, store, verdicts = campaign(tmp_path / "batched", "planted:segfault@relu", PER_MODULE, **common)
    assert sorted(verdicts) == list(range(16))  # no test lost
    relu = {seq for seq, blob in store.db.execute("SELECT seq, blob FROM tests").fetchall()
            if blob and "relu" in batched.strategy.decode(blob).graph.ops_used()}
    crashed = {seq for seq, v in verdicts.items() if v == "bug"}
    assert crashed and crashed <= relu, (crashed, relu)
    assert {f["category"] for f in store.findings(distinct_only=False)} == {"crash"}
    assert batched.counts["alone"] >= len(crashed) and batched.counts["batched"] > 0, batched.counts
    _, single_store, single_verdicts = campaign(tmp_path / "single", "planted:segfault@relu", 1, **common)
    assert single_verdicts == verdicts and found_seqs(single_store) == found_seqs(store)
