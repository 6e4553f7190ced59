"""`dlcfuzz merge`: the campaigns of several drivers (shards, each its own seed) become one folder
that `list`, `report`, `issue` and `replay` read; a finding found by two shards is one distinct
finding and a duplicate; nothing of either shard is lost; bad input is one line and exit 2."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

from dlcfuzz.cli import main  # noqa: E402
from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.engine.store import Store  # noqa: E402

COMPILER = "planted:wrong@add"  # ONNXRuntime whose optimized configuration computes add wrongly
ONLY_OPS = ["add", "relu", "mul", "sub", "neg"]  # the faulty operator is in most graphs, whatever the seed


def shard(root: Path, name: str, seed: int, tests: int = 30, compiler: str = COMPILER) -> Path:
    out = root / name
    Campaign(campaign_options(compiler=compiler, strategy="random", seconds=600, jobs=2, seed=seed, out=out, ops=6,
                              max_tests=tests, quiet=True, only_ops=ONLY_OPS)).run()
    return out


def table(run: Path, sql: str) -> list[tuple]:
    return sqlite3.connect(run / "store.sqlite").execute(sql).fetchall()


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("shards")
    return [shard(root, "a", 1), shard(root, "b", 2)]


def test_merge_keeps_every_test_and_finding_and_deduplicates_across_shards(shards, tmp_path, capsys):
    out = tmp_path / "merged"
    assert main(["merge", str(shards[0]), str(shards[1]), "--out", str(out)]) == 0
    assert "merged 2 campaigns" in capsys.readouterr().out
    merged = Store(out / "store.sqlite", create=False)
    parts = [Store(s / "store.sqlite", create=False) for s in shards]
    # nothing lost: every test, every finding, every unknown
    assert merged.totals()["tests"] == sum(p.totals()["tests"] for p in parts) >= 60
    every = merged.findings(distinct_only=False)
    assert len(every) == sum(len(p.findings(distinct_only=False)) for p in parts)
    # the planted fault is one root cause: both shards found it, the merged store has it once per signature
    sigs = [{f["signature"] for f in p.findings()} for p in parts]
    assert sigs[0] & sigs[1], "both shards should find the planted add fault"
    distinct = merged.findings()
    assert len(distinct) == len(sigs[0] | sigs[1]) and len({f["signature"] for f in distinct}) == len(distinct)
    for f in every:  # renumbered in the order found, their folders and tests with them
        if f["duplicate_of"] is None:
            assert (out / "findings" / f"{f['id']:04d}-{f['category']}" / "repro.py").exists()
        assert merged.test_blob(f["test_id"]), f
    created = [f["created"] for f in every]
    assert created == sorted(created)
    # test numbers: shard b's follow shard a's
    sh = merged.shards()
    assert [s["name"] for s in sh] == ["a", "b"] and sh[1]["first_test"] == sh[0]["last_test"] + 1
    # statistics over time sum the shards; the last row has every test and the merged distinct count
    last = table(out, "SELECT tests, distinct_findings, executions FROM stats ORDER BY t DESC LIMIT 1")[0]
    shard_executions = [table(s, "SELECT executions FROM stats ORDER BY t DESC LIMIT 1")[0][0] for s in shards]
    assert last == (merged.totals()["tests"], len(distinct), sum(shard_executions)) and all(shard_executions)
    # coverage is the union, each item once
    assert len(merged.coverage()) == len(set(merged.coverage())) == len(set(parts[0].coverage()) |
                                                                         set(parts[1].coverage()))
    # the readers work on it
    assert main(["list", str(out)]) == 0
    assert main(["report", str(out)]) == 0 and (out / "report.html").exists()
    assert main(["issue", str(out), str(distinct[-1]["id"])]) == 0
    assert main(["replay", str(out), "--finding", str(distinct[-1]["id"])]) == 1  # the bug again
    capsys.readouterr()
    # a compacted test is replayed in its shard, which the error names; a merged folder is never resumed
    compacted = table(out, "SELECT seq + 1 FROM compact_tests WHERE seq + 1 > (SELECT MIN(first_test) FROM shards "
                           "WHERE name = 'b') LIMIT 1")[0][0]
    assert main(["replay", str(out), "--test", str(compacted)]) == 2
    assert "of its shard b: replay it there" in capsys.readouterr().err
    assert main(["fuzz", "--resume", str(out), "--time", "5s"]) == 2


def test_bad_input_is_one_line_and_exit_2(shards, tmp_path, capsys):
    other = shard(tmp_path, "c", 3, tests=4, compiler="planted:wrong@mul")
    cases = [
        ([str(shards[0])], "at least two"),
        ([str(shards[0]), str(shards[0])], "given twice"),
        ([str(shards[0]), str(tmp_path / "nothing")], "no campaign store"),
        ([str(shards[0]), str(other)], "one compiler release with one strategy"),
    ]
    for args, why in cases:
        assert main(["merge", *args, "--out", str(tmp_path / "m")]) == 2
        err = capsys.readouterr().err.strip()
        assert why in err and len(err.splitlines()) == 1, err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    assert main(["merge", str(shards[0]), str(shards[1]), "--out", str(busy)]) == 2
    assert "not empty" in capsys.readouterr().err
