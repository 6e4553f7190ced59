"""The metamorphic strategy end to end: planted faults in the mutant's extra operators are found,
reduced by delta debugging over the mutation steps and written with a reproducer; a correct
compiler stays quiet."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dlcfuzz.engine.campaign import Campaign, CampaignOptions, campaign_options
from dlcfuzz.engine.store import Store
from dlcfuzz.ir import dumps
from dlcfuzz.oracle.testcase import TestCase

pytest.importorskip("onnxruntime")


def campaign(tmp_path: Path, compiler: str, tests: int, model: str = "tiny_resnet") -> Path:
    out = tmp_path / "run"
    Campaign(campaign_options(compiler=compiler, strategy="metamorphic", model=model, seconds=600, jobs=2,
                             out=out, max_tests=tests, quiet=True)).run()
    return out


def whole_tests(out: Path) -> dict[int, TestCase]:
    """Every stored test as it ran, by sequence number: light ones rebuilt by the strategy (which
    checks each against the digest of the test that ran)."""
    camp = Campaign(CampaignOptions(out=out, quiet=True), resume=True, record_run=False)
    try:
        return {seq: TestCase.from_bytes(camp.strategy.inflate(b)) for seq, b in camp.store.blobs_from(0)}
    finally:
        camp.store.close()


def findings(out: Path) -> list[dict]:
    db = sqlite3.connect(out / "store.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM findings ORDER BY id")]


@pytest.mark.parametrize("fault,category", [("wrong", "metamorphic"), ("miseval", "metamorphic"),
                                            ("raise", "mutant-rejected")])
def test_planted_fault_in_mutant_is_found_and_steps_reduced(tmp_path, fault, category):
    # "abs" is in every mutation step and in none of the seed models: only mutants hit the fault
    out = campaign(tmp_path, f"planted:{fault}@abs", tests=4)
    fs = findings(out)
    assert fs and {f["category"] for f in fs} == {category}
    assert all(json.loads(f["configs"]) == ["ort-all"] for f in fs)
    first = next(f for f in fs if f["duplicate_of"] is None)
    folder = next((out / "findings").glob(f"{first['id']:04d}-*"))
    detail = (folder / "detail.txt").read_text()
    kept = json.loads(detail.split("mutation step(s): ")[1].splitlines()[0])
    assert 1 <= len(kept) <= 3, kept  # one step suffices (plus what it depends on), out of 10+
    assert (folder / "seed.onnx").exists() and (folder / "mutant.onnx").exists()
    # the seed/mutant script runs the real onnxruntime, which has no planted fault
    p = subprocess.run([sys.executable, str(folder / "repro_mutant.py")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "not reproduced" in p.stdout, p.stdout + p.stderr
    # then node level: a few nodes around the faulty operator, and a script that shows the fault
    assert first["reduced_nodes"] <= 10, first
    assert "= abs(" in (folder / "reduced.txt").read_text()
    p = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "BUG REPRODUCED" in p.stdout, p.stdout + p.stderr


def test_correct_compiler_is_quiet_on_mutants(tmp_path):
    out = campaign(tmp_path, "onnxruntime", tests=8, model="tiny_mobilenet")
    assert findings(out) == []
    db = sqlite3.connect(out / "store.sqlite")
    assert db.execute("SELECT COUNT(*) FROM tests WHERE verdict = 'pass'").fetchone()[0] == 8


def test_resumed_campaign_continues_its_chain(tmp_path):
    """Stopped after 3 tests and resumed, a campaign stores the same mutants as one run of 6: the
    steps each test records rebuild the chain."""
    whole = campaign(tmp_path / "whole", "onnxruntime", tests=6, model="tiny_mobilenet")
    part = tmp_path / "part" / "run"
    Campaign(campaign_options(compiler="onnxruntime", strategy="metamorphic", model="tiny_mobilenet", seconds=600,
                             jobs=2, out=part, max_tests=3, quiet=True)).run()
    Campaign(campaign_options(out=part, seconds=600, jobs=2, max_tests=6, quiet=True), resume=True).run()

    def mutants(out: Path) -> dict[int, tuple]:
        tests = whole_tests(out)
        return {seq: (tc.meta["metamorphic"]["chain"], tc.meta["metamorphic"]["steps"], dumps(tc.graph))
                for seq, tc in tests.items()}

    a, b = mutants(whole), mutants(part)
    assert sorted(a) == sorted(b) == list(range(6))
    assert a[5][:2] == (0, 60)  # one chain, ten steps per test
    assert a == b


@pytest.mark.slow
def test_tvm_campaign_runs_and_stays_quiet(tmp_path):
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    out = tmp_path / "run"
    Campaign(campaign_options(compiler="tvm", strategy="metamorphic", model="tiny_mobilenet", seconds=600, jobs=1,
                             out=out, max_tests=2, quiet=True)).run()
    db = sqlite3.connect(out / "store.sqlite")
    assert db.execute("SELECT COUNT(*) FROM tests WHERE verdict = 'pass'").fetchone()[0] == 2
    assert findings(out) == []


def test_a_long_campaign_holds_the_steps_of_few_chains_and_reads_older_ones_back(tmp_path, monkeypatch):
    """Every chain's steps stayed in memory (a chain per 20 tests, for as long as the campaign ran):
    now CHAINS_HELD chains are held and an older one is read back from the store, equal to what it was."""
    import dlcfuzz.strategies.metamorphic as metamorphic
    from dlcfuzz.mutate.metamorphic import steps_to_json

    monkeypatch.setattr(metamorphic, "CHAIN_STEPS", metamorphic.STEPS_PER_TEST)  # a chain per test
    camp = Campaign(campaign_options(compiler="onnxruntime", strategy="metamorphic", model="tiny_mobilenet",
                                     seconds=600, jobs=2, out=tmp_path / "run", max_tests=metamorphic.CHAINS_HELD + 4,
                                     quiet=True))
    first_steps = []
    make_test = camp.strategy.make_test

    def recording(seq, seed):
        test = make_test(seq, seed)
        if seq == 0:
            first_steps.extend(steps_to_json(camp.strategy.chain().steps))
        return test

    camp.strategy.make_test = recording
    camp.run()
    chain = camp.strategy.chain()
    assert len(chain.by_start) == metamorphic.CHAINS_HELD and 0 not in chain.by_start
    camp.strategy.ctx.store = Store(tmp_path / "run" / "store.sqlite", create=False)  # the campaign closed its own
    assert first_steps and steps_to_json(camp.strategy.chain_steps(0)) == first_steps


def test_passing_mutants_keep_their_steps_and_replay_rebuilds_them(tmp_path):
    """A passing mutant is stored as the steps new in it (a few KB), not as the grown graph (up to
    ~1.4 MB of blob late in a resnet18 chain); `dlcfuzz replay` rebuilds it from the seed model and
    the chain's steps, checks it against the digest of the mutant that ran, and runs it."""
    import dlcfuzz.strategies.metamorphic as metamorphic
    from dlcfuzz.oracle.testcase import Config

    out = campaign(tmp_path, "onnxruntime", tests=4, model="tiny_mobilenet")
    db = sqlite3.connect(out / "store.sqlite")
    rows = db.execute("SELECT id, verdict, blob FROM tests ORDER BY seq").fetchall()
    assert [v for _, v, _ in rows] == ["pass"] * 4
    assert all(b.startswith(metamorphic.LIGHT) for _, _, b in rows)
    whole = whole_tests(out)
    assert [whole[seq].meta["metamorphic"]["steps"] for seq in range(4)] == [10, 20, 30, 40]
    assert all(len(b) * 4 < len(whole[seq].to_bytes()) for seq, (_, _, b) in enumerate(rows))
    assert all(isinstance(c, Config) for c in whole[3].configs) and len(whole[3].graph.nodes) > 40

    def replay(test_id: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "replay", str(out), "--test", str(test_id)],
                              capture_output=True, text=True, timeout=300)

    p = replay(rows[3][0])
    assert p.returncode == 0 and "internal error" not in p.stderr, p.stdout + p.stderr
    # a light test whose steps no longer rebuild the mutant that ran is dlcfuzz's own error, never a pass
    light = json.loads(rows[3][2][len(metamorphic.LIGHT):])
    light["digest"] ^= 1
    db.execute("UPDATE tests SET blob = ? WHERE id = ?", (metamorphic.LIGHT + json.dumps(light).encode(), rows[3][0]))
    db.commit()
    p = replay(rows[3][0])
    assert p.returncode == 1 and "differs from the one that ran" in p.stderr, p.stdout + p.stderr


def test_a_merged_campaigns_light_mutant_is_replayed_in_its_shard(tmp_path, capsys):
    """A light mutant's chain is numbered as its shard numbered its tests: a merged store names the
    shard to replay it in (exit 2), where it replays."""
    import dlcfuzz.strategies.metamorphic as metamorphic
    from dlcfuzz.cli import main

    shards = [campaign(tmp_path / name, "onnxruntime", tests=2, model="tiny_mobilenet") for name in ("a", "b")]
    out = tmp_path / "merged"
    assert main(["merge", str(shards[0]), str(shards[1]), "--out", str(out)]) == 0
    db = sqlite3.connect(out / "store.sqlite")
    test_id, blob = db.execute("SELECT id, blob FROM tests ORDER BY id DESC LIMIT 1").fetchone()
    assert test_id == 4 and blob.startswith(metamorphic.LIGHT)
    capsys.readouterr()
    assert main(["replay", str(out), "--test", str(test_id)]) == 2
    assert "is test 2 of its shard" in capsys.readouterr().err
    assert main(["replay", str(shards[1]), "--test", "2"]) == 0
